"""Real PyTorch CPU profiler traces for `gapbench-report explain`'s tests: each host cause in the
styles users write it, and clean traces that must fire nothing (docs/explain.md, "The corpus").

    python3 -m venv .venv-torch && .venv-torch/bin/pip install torch numpy
    .venv-torch/bin/python report/tests/traces/make_torch_traces.py [CASE...] [--out DIR]

Needs torch and numpy only (the CPU suffices; CI installs neither: the traces are committed beside
this script as tests/data/traces/torch_cpu_<case>.pt.trace.json.gz). The corpus was made on the
2-core CI machine (host "vm", loaded by other jobs) with torch 2.15.0 (PyPI's +cu132 wheel, run on
the CPU), numpy 2.4.6, Python 3.11.7; the five first cases (FIRST) earlier, by a torch build
that was not recorded. Each case is a short training loop, profiled with torch.profiler's schedule
(ProfilerStep#N: 4 active steps for the first cases, CORPUS_STEPS for the corpus's, to keep each
file small) and written gzipped by tensorboard_trace_handler, as a user would, with
record_shapes=True (explain reads matmul sizes and 0-d inputs from it; the tests strip the shapes
to check what it does without them). Timings in them are the loaded machine's: remaking a trace
changes its figures, not its causes.

The first cases:
- dataloader: a DataLoader with no workers (num_workers=0) over a Dataset whose __getitem__
  does real per-sample work (a 32x32 image decoded and normalised in NumPy), feeding a fast step.
- loop: per-element Python loop in the step (each row normalised by indexing, x[i] = ...).
- item: a per-sample metric read with .item() in the loop (one device-to-host read per sample).
- tiny_batch: batch 2, the step's fixed costs (optimizer, dispatch) dwarf its arithmetic.
- clean: batch 256 from tensors already in memory, one vectorized step: none of the above.

The corpus (case_<name> below, each with its own docstring or comment): the per-element loop as
loop_index, loop_iterate, loop_tolist, loop_numpy, loop_item, loop_in_dataset, loop_in_step,
loop_nograd; sync reads as sync_float, sync_branch; the input pipeline as input_iterable,
input_slow_workers; a small batch as small_batch_matmul, small_batch_conv; clean as
clean_many_layers, clean_sgd_foreach_false, clean_adam_foreach_false, clean_manual_update,
clean_workers. The hold-out (tests/traces/HOLDOUT.md) was made last.

The pairs (issue 61, `explain --against`; tests/traces/AGAINST.md has each one's expected
verdict), made with --pairs, each side in a process of its own at torch's own thread count, as
torch_cpu_pair_<pair>_here and _there: workers (a DataLoader over DecodingDataset with no workers
here, 2 there), threads (a matmul-heavy MLP after torch.set_num_threads(1) here, the default
there), pinned (the same MLP under `taskset -c 0` here, not pinned there), same (one process's
MLP profiled twice in a row).

The default-settings twins (issue 42): with --defaults, each case is profiled as torch.profiler
records without being asked (no record_shapes, no with_stack), the traces users attach, and
written as torch_cpu_<case>.defaults.pt.trace.json.gz. The twins, and loop_rows_elements (the
issue's trace: a Python loop over the rows and elements of each batch), were made on 2026-11-27
with torch 2.15.0 (PyPI's +cu132 wheel, run on the CPU), numpy 2.4.6, Python 3.11.7, on the 2-core
machine at a load average of 2 to 4 from other jobs; issue 42's hold-out (loop_rows, loop_cat,
clean_transformer, clean_clip_grad) last.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

FEATURES = 32 * 32
STEPS = 4  # active profiler steps


class DecodingDataset(Dataset):
    """Per-sample work a real input pipeline does: decode (here, expand a seeded image) and
    normalise, in NumPy, one sample at a time."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        rng = np.random.default_rng(i)
        image = rng.integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
        for _ in range(40):  # a few passes of "augmentation"
            image = np.clip(image.astype(np.float32) * 1.01 - 1.0, 0, 255).astype(np.uint8)
        x = image.mean(axis=2).reshape(-1).astype(np.float32) / 255.0
        return torch.from_numpy(x), torch.tensor(i % 10)


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 10))


def train_step(net, opt, x, y):
    loss = torch.nn.functional.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def batches(batch: int):
    g = torch.Generator().manual_seed(1)
    while True:
        yield torch.rand(batch, FEATURES, generator=g), torch.randint(0, 10, (batch,), generator=g)


def case_dataloader(step):
    loader = DataLoader(DecodingDataset(10_000), batch_size=32, num_workers=0)
    return step(iter(loader), lambda net, opt, x, y: train_step(net, opt, x, y))


def case_loop(step):
    def body(net, opt, x, y):
        for i in range(x.shape[0]):  # per-element normalisation: the classic slow loop
            x[i] = (x[i] - x[i].mean()) / (x[i].std() + 1e-6)
        return train_step(net, opt, x, y)
    return step(batches(64), body)


def case_item(step):
    def body(net, opt, x, y):
        logits = net(x)
        loss = torch.nn.functional.cross_entropy(logits, y, reduction="none")
        seen = 0.0
        for i in range(loss.shape[0]):  # a per-sample metric read back one by one
            seen += loss[i].item()
        opt.zero_grad()
        loss.mean().backward()
        opt.step()
        return seen
    return step(batches(256), body)


def case_tiny_batch(step):
    return step(batches(2), lambda net, opt, x, y: train_step(net, opt, x, y))


def case_clean(step):
    return step(batches(256), lambda net, opt, x, y: train_step(net, opt, x, y))


# ---- the corpus: one cause in several styles (issue 36) -------------------------------------
# The per-element loops all do the same work, the way users write it: each sample's weight,
# scale * score + shift clipped at 0, from a vector of SCORES per-sample scores, then the step.
# One vectorized op would do: torch.clamp(scores * SCALE + SHIFT, min=0).
SCORES, SCALE, SHIFT = 256, 0.5, 0.25


def weighted_step(net, opt, x, y, weights):
    loss = torch.nn.functional.cross_entropy(net(x), y, reduction="none")
    opt.zero_grad()
    (loss * weights[: loss.shape[0]]).mean().backward()
    opt.step()


def scores_for(x):
    return x[:, :SCORES // 8].reshape(-1)[:SCORES].clone()  # any 1-D tensor of SCORES values


def loop_body(weigh):
    def body(net, opt, x, y):
        return weighted_step(net, opt, x, y, weigh(scores_for(x)))
    return body


def weigh_index(s):
    out = torch.empty_like(s)
    for i in range(s.shape[0]):  # x[i]: one select and 0-d arithmetic per element
        out[i] = torch.clamp(s[i] * SCALE + SHIFT, min=0)
    return out


def weigh_iterate(s):
    rows = s.reshape(16, -1)
    out = []
    for row in rows:  # for v in x: one unbind per row, then 0-d arithmetic per element
        for v in row:
            out.append(torch.clamp(v * SCALE + SHIFT, min=0))
    return torch.stack(out)


def case_loop_tolist(step):
    """.tolist() and Python arithmetic over the whole batch's features: Python is fast per value
    (about 0.4 us against an op's few us), so the same habit costs only with more values."""
    def body(net, opt, x, y):
        x = torch.tensor([[max(0.0, v * SCALE + SHIFT) for v in row] for row in x.tolist()])
        return train_step(net, opt, x, y)
    return step(batches(64), body)


def weigh_numpy(s):
    out = torch.empty_like(s)
    for i in range(s.shape[0]):  # a NumPy round trip per element
        v = s[i].numpy()
        out[i] = torch.from_numpy(np.asarray(np.maximum(v * SCALE + SHIFT, 0), np.float32))
    return out


def weigh_item(s):
    out = []
    for i in range(s.shape[0]):  # .item() per element, arithmetic in Python
        out.append(max(0.0, s[i].item() * SCALE + SHIFT))
    return torch.tensor(out)


@torch.no_grad()
def preprocess(s):
    """A preprocessing function as users write them: no autograd, one element at a time."""
    out = torch.zeros_like(s)
    for i, v in enumerate(s):
        if v * SCALE + SHIFT > 0:
            out[i] = v * SCALE + SHIFT
    return out


class TransformingDataset(Dataset):
    """Per-sample transforms in __getitem__: each sample's features clipped and scaled, one
    element at a time (the same work as case_loop_in_step's, in the Dataset)."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        g = torch.Generator().manual_seed(i)
        x = torch.rand(FEATURES, generator=g)
        return transform(x), torch.tensor(i % 10)


def transform(x):
    head = x[:16]
    for j in range(head.shape[0]):  # the per-sample, per-element transform
        head[j] = torch.clamp(head[j] * SCALE + SHIFT, min=0)
    return x


def case_loop_index(step):
    return step(batches(64), loop_body(weigh_index))


def case_loop_iterate(step):
    return step(batches(64), loop_body(weigh_iterate))


def case_loop_numpy(step):
    return step(batches(64), loop_body(weigh_numpy))


def case_loop_item(step):
    return step(batches(64), loop_body(weigh_item))


def case_loop_nograd(step):
    return step(batches(64), loop_body(preprocess))


def case_loop_in_dataset(step):
    loader = DataLoader(TransformingDataset(10_000), batch_size=32, num_workers=0)
    return step(iter(loader), lambda net, opt, x, y: train_step(net, opt, x, y))


def case_loop_in_step(step):
    def body(net, opt, x, y):
        for sample in x[:32]:  # the same transform as the Dataset's, in the step
            transform(sample)
        return train_step(net, opt, x, y)
    return step(batches(32), body)


def case_sync_float(step):
    """A per-sample metric collected with float() into a Python list."""
    def body(net, opt, x, y):
        loss = torch.nn.functional.cross_entropy(net(x), y, reduction="none")
        history = [float(v) for v in loss.detach()]
        opt.zero_grad()
        loss.mean().backward()
        opt.step()
        return history
    return step(batches(256), body)


def case_sync_branch(step):
    """A branch on a tensor per element: `if x[i] > 0` reads each comparison back."""
    def body(net, opt, x, y):
        s = scores_for(x) - 0.5
        kept = 0
        for i in range(s.shape[0]):
            if s[i] > 0:
                kept += 1
        return train_step(net, opt, x, y)
    return step(batches(64), body)


def case_small_batch_matmul(step):
    """Batch 4 through a model written with matmuls (x @ w), no nn.Linear."""
    g = torch.Generator().manual_seed(0)
    w1 = (torch.randn(FEATURES, 128, generator=g) * 0.03).requires_grad_()
    w2 = (torch.randn(128, 10, generator=g) * 0.1).requires_grad_()
    opt = torch.optim.SGD([w1, w2], lr=0.01)

    def body(net, _, x, y):
        loss = torch.nn.functional.cross_entropy(torch.relu(x @ w1) @ w2, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step(batches(4), body)


def conv_net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.Conv2d(16, 10, 1), torch.nn.AdaptiveAvgPool2d(1),
                               torch.nn.Flatten())


def case_small_batch_conv(step):
    """A convolutional model at batch 4: the batch is a convolution's N, no linear layer's."""
    net = conv_net()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def body(_, __, x, y):
        logits = net(x.reshape(-1, 1, 32, 32))
        loss = torch.nn.functional.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step(batches(4), body)


def case_input_iterable(step):
    """An IterableDataset that builds whole batches in Python, read without workers."""
    class Batches(torch.utils.data.IterableDataset):
        def __iter__(self):
            i = 0
            while True:
                samples = [DecodingDataset(1 << 30)[i + k] for k in range(32)]
                i += 32
                yield torch.stack([s for s, _ in samples]), torch.stack([t for _, t in samples])
    loader = DataLoader(Batches(), batch_size=None, num_workers=0)
    return step(iter(loader), lambda net, opt, x, y: train_step(net, opt, x, y))


def case_input_slow_workers(step):
    """DecodingDataset's per-sample work on 2 workers that still cannot keep up."""
    loader = DataLoader(DecodingDataset(10_000), batch_size=32, num_workers=2,
                        prefetch_factor=1, persistent_workers=True)
    return step(iter(loader), lambda net, opt, x, y: train_step(net, opt, x, y))


def many_layers(n: int = 48, width: int = 32):
    torch.manual_seed(0)
    layers = [torch.nn.Linear(FEATURES, width), torch.nn.ReLU()]
    for _ in range(n):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))


def case_clean_many_layers(step):
    """A model of 50 small layers: hundreds of tiny ops a step, none on one element."""
    net = many_layers()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    return step(batches(128), lambda _, __, x, y: train_step(net, opt, x, y))


def case_clean_sgd_foreach_false(step):
    """An optimizer's per-parameter loop (foreach=False) over 100 parameter tensors."""
    net = many_layers()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, foreach=False)
    return step(batches(128), lambda _, __, x, y: train_step(net, opt, x, y))


def case_clean_adam_foreach_false(step):
    """Adam's per-parameter loop (foreach=False): a 0-d step count and its .item() each."""
    net = many_layers()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, foreach=False)
    return step(batches(128), lambda _, __, x, y: train_step(net, opt, x, y))


def case_clean_manual_update(step):
    """A hand-written per-parameter update, outside torch.optim."""
    net = many_layers()

    def body(_, __, x, y):
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        with torch.no_grad():
            for p in net.parameters():
                p.add_(p.grad, alpha=-0.01)
                p.grad = None
    return step(batches(128), body)


# ---- issue 42: the profilers' default settings ----------------------------------------------

def normalise_rows_elements(x):
    """Min-max scaling as a Python loop over each sample and each of its values."""
    out = []
    for row in x:  # each sample: its range, then each value alone
        lo, scale = row.min(), row.max() - row.min()
        out.append(torch.stack([(v - lo) / scale for v in row]))
    return torch.stack(out)


def case_loop_rows_elements(step):
    """The issue's trace: a small training step whose preprocessing loops over the rows and
    elements of each batch (64 rows of 16 values: about two thousand tiny ops a step)."""
    def body(net, opt, x, y):
        x = torch.cat([normalise_rows_elements(x[:, :16]), x[:, 16:]], dim=1)
        return train_step(net, opt, x, y)
    return step(batches(64), body)


def case_loop_rows(step):
    """Hold-out: a loop over the rows, each min-max scaled with whole-row ops, then stacked."""
    def body(net, opt, x, y):
        rows = []
        for row in x[:, :64]:
            rows.append((row - row.min()) / (row.max() - row.min() + 1e-6) * 2 - 1)
        x = torch.cat([torch.stack(rows), x[:, 64:]], dim=1)
        return train_step(net, opt, x, y)
    return step(batches(256), body)


def case_loop_cat(step):
    """Hold-out: a result grown one element at a time with torch.cat."""
    def weigh(s):
        out = torch.empty(0)
        for v in s:
            out = torch.cat([out, torch.clamp(v * SCALE + SHIFT, min=0).reshape(1)])
        return out
    return step(batches(64), loop_body(weigh))


def case_clean_transformer(step):
    """Hold-out, clean: a small transformer encoder trained with Adam, many tiny layer ops."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                             batch_first=True)
    encoder = torch.nn.Sequential(torch.nn.TransformerEncoder(layer, num_layers=4,
                                                              enable_nested_tensor=False))
    head = torch.nn.Linear(64, 10)
    opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-3)

    def body(_, __, x, y):
        tokens = x.reshape(x.shape[0], 16, 64)
        loss = torch.nn.functional.cross_entropy(head(encoder(tokens).mean(1)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step(batches(32), body)


def case_clean_clip_grad(step):
    """Hold-out, clean: clip_grad_norm_(foreach=False) in the user's step, one norm and one
    scaling per parameter tensor (100 of them), then SGD."""
    net = many_layers()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, foreach=False)

    def body(_, __, x, y):
        loss = torch.nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0, foreach=False)
        opt.step()
    return step(batches(128), body)


def case_clean_workers(step):
    """A DataLoader with 2 workers over samples in memory: they keep up, the step never waits
    for its input. The workers start (and fill their prefetch queue) before the steps profiled,
    as any trace taken after the first steps of an epoch."""
    g = torch.Generator().manual_seed(1)
    # uint8 images, as a pipeline ships them: a quarter of float32's bytes between processes
    data = TensorDataset(torch.randint(0, 256, (4096, FEATURES), generator=g, dtype=torch.uint8),
                         torch.randint(0, 10, (4096,), generator=g))
    loader = iter(DataLoader(data, batch_size=256, num_workers=2, prefetch_factor=4,
                             persistent_workers=True))
    time.sleep(8)
    wide = torch.nn.Sequential(torch.nn.Linear(FEATURES, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 10))
    opt = torch.optim.SGD(wide.parameters(), lr=0.01)
    return step(loader, lambda _, __, x, y: train_step(wide, opt, x.float() / 255, y))


# The first traces, with STEPS active steps; the corpus's, CORPUS_STEPS (small files).
FIRST = ("dataloader", "loop", "item", "tiny_batch", "clean")
CASES = {name[len("case_"):]: f for name, f in list(globals().items()) if name.startswith("case_")}
CORPUS_STEPS = 2
DEFAULTS_SUFFIX = ".defaults"


def profile(case: str, out: Path, defaults: bool = False) -> Path:
    """One case's trace: with record_shapes=True, or (defaults) as torch.profiler records
    without being asked (no shapes, no stacks), the twin named torch_cpu_<case>.defaults."""
    torch.set_num_threads(1)  # the same on any machine's core count
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    active = STEPS if case in FIRST else CORPUS_STEPS
    with tempfile.TemporaryDirectory() as tmp:
        schedule = torch.profiler.schedule(wait=1, warmup=1, active=active, repeat=1)
        with torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                **({} if defaults else {"record_shapes": True}),
                on_trace_ready=torch.profiler.tensorboard_trace_handler(tmp, use_gzip=True)) as p:
            def step(source, body):
                for _ in range(2 + active):
                    x, y = next(source)
                    body(net, opt, x, y)
                    p.step()
            CASES[case](step)
        written = sorted(Path(tmp).glob("*.pt.trace.json.gz"))
        target = out / f"torch_cpu_{case}{DEFAULTS_SUFFIX if defaults else ''}.pt.trace.json.gz"
        # Re-compressed with a fixed mtime: the same trace gives the same bytes.
        with gzip.open(written[0], "rb") as src, open(target, "wb") as raw, \
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
    return target


# ---- explain --against's pairs (issue 61) -----------------------------------------------------
PAIR_STEPS = 4
MLP_WIDTH, MLP_BATCH = 512, 256


def side_loader(workers: int):
    """The dataloader case's input and model, with `workers` DataLoader workers."""
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    source = iter(DataLoader(DecodingDataset(10_000), batch_size=32, num_workers=workers))
    return source, lambda x, y: train_step(net, opt, x, y)


def side_mlp():
    """A matmul-heavy step: three wide layers at batch MLP_BATCH, from batches in memory."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(FEATURES, MLP_WIDTH), torch.nn.ReLU(),
                              torch.nn.Linear(MLP_WIDTH, MLP_WIDTH), torch.nn.ReLU(),
                              torch.nn.Linear(MLP_WIDTH, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    return batches(MLP_BATCH), lambda x, y: train_step(net, opt, x, y)


def profile_side(source, body, target: Path) -> Path:
    """PAIR_STEPS steps after a wait and a warm-up, at the profiler's defaults, written gzipped
    with a fixed mtime."""
    with tempfile.TemporaryDirectory() as tmp:
        schedule = torch.profiler.schedule(wait=2, warmup=1, active=PAIR_STEPS, repeat=1)
        with torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                on_trace_ready=torch.profiler.tensorboard_trace_handler(tmp, use_gzip=True)) as p:
            for _ in range(3 + PAIR_STEPS):
                body(*next(source))
                p.step()
        written = sorted(Path(tmp).glob("*.pt.trace.json.gz"))
        with gzip.open(written[0], "rb") as src, open(target, "wb") as raw, \
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
    return target


# Each side: (the command's prefix, what the side runs). Its process makes its trace alone.
PAIR_SIDES = {
    "workers_here": ([], "loader0"), "workers_there": ([], "loader2"),
    "threads_here": ([], "mlp_threads1"), "threads_there": ([], "mlp"),
    "pinned_here": (["taskset", "-c", "0"], "mlp"), "pinned_there": ([], "mlp"),
    "same": ([], "mlp_twice"),
}


def run_side(name: str, what: str, out: Path) -> None:
    target = out / f"torch_cpu_pair_{name}.pt.trace.json.gz"
    if what.startswith("loader"):
        print(profile_side(*side_loader(int(what[len("loader"):])), target))
        return
    if what == "mlp_threads1":
        torch.set_num_threads(1)
    source, body = side_mlp()
    if what != "mlp_twice":
        print(profile_side(source, body, target))
        return
    for side in ("here", "there"):  # the same run, profiled twice in a row
        print(profile_side(source, body, out / f"torch_cpu_pair_same_{side}.pt.trace.json.gz"))


def make_pairs(out: Path) -> None:
    import subprocess
    import sys

    for name, (prefix, _) in PAIR_SIDES.items():
        subprocess.run([*prefix, sys.executable, __file__, "--out", str(out), "--pair-side",
                        name], check=True)


def main() -> None:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=here.parent / "data" / "traces")
    parser.add_argument("--defaults", action="store_true",
                        help="the default-settings twins (no record_shapes): "
                        "torch_cpu_<case>.defaults.pt.trace.json.gz")
    parser.add_argument("--pairs", action="store_true", help="explain --against's pairs, each "
                        "side in a process of its own")
    parser.add_argument("--pair-side", choices=PAIR_SIDES, help=argparse.SUPPRESS)
    parser.add_argument("cases", nargs="*", default=list(CASES))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.pairs:
        return make_pairs(args.out)
    if args.pair_side:
        return run_side(args.pair_side, PAIR_SIDES[args.pair_side][1], args.out)
    for case in args.cases:
        print(profile(case, args.out, args.defaults))


if __name__ == "__main__":
    main()
