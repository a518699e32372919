"""Issue 51's hold-out for `gapbench-report explain`: real PyTorch CPU profiler traces in the styles
users write, made and scored once before explain's round-4 rules were written (HOLDOUT.md, "The
hold-out of issue 51", has each one's expected answer, written before any was read).

    .venv-torch/bin/python report/tests/traces/make_torch_holdout.py [CASE...] [--out DIR]
        [--shapes] [--loaded]

Each case is a short training loop profiled with torch.profiler's schedule (wait 1, warmup 1,
active 2) and written gzipped by tensorboard_trace_handler, at the profiler's defaults (no
record_shapes, no with_stack: the traces users attach) as torch_cpu_h51_<case>.defaults.pt.trace.
json.gz, or with --shapes (record_shapes=True) as torch_cpu_h51_<case>.pt.trace.json.gz. The
cases in LOADED are made with --loaded: torch's default threads, while 3 busy processes load the
machine's 2 cores (the loaded machine explain must notice); the others with 1 thread, and run
under nice -n -19 so that other jobs barely touch them. Made on 2026-11-29 on the 2-core CI machine
(host "vm", shared with other jobs) with torch 2.15.0 (PyPI's +cu132 wheel, run on the CPU), numpy
2.4.6, Python 3.11.
"""

from __future__ import annotations

import argparse
import gzip
import multiprocessing
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

FEATURES = 256
ACTIVE = 2


def mlp(width: int = 256, classes: int = 10) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, classes))


def batches(batch: int, features: int = FEATURES):
    g = torch.Generator().manual_seed(1)
    while True:
        yield (torch.rand(batch, features, generator=g),
               torch.randint(0, 10, (batch,), generator=g))


def fit(net, opt, loss):
    opt.zero_grad()
    loss.backward()
    opt.step()


# ---- the four classes of issue 51, in styles of their own --------------------------------------

def case_loss_per_sample(step):
    """A loss summed one sample at a time in a Python loop (a per-sample weighting written the
    slow way)."""
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def body(x, y):
        logits = net(x)
        loss = 0.0
        for i in range(x.shape[0]):
            loss = loss + F.cross_entropy(logits[i:i + 1], y[i:i + 1]) * (1.0 + 0.01 * i)
        fit(net, opt, loss / x.shape[0])
    step(batches(64), body)


def case_nested_list_batch(step):
    """The batch kept as nested Python lists (rows of floats from a CSV reader, say) and turned
    into a tensor every step."""
    rng = np.random.default_rng(0)
    rows = rng.random((128, FEATURES)).tolist()
    labels = rng.integers(0, 10, 128).tolist()
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def body(x, y):
        x = torch.tensor(rows, dtype=torch.float32)
        y = torch.tensor(labels)
        fit(net, opt, F.cross_entropy(net(x), y))
    step(batches(1), body)


def case_tiny_layers_batch1(step):
    """A deep model of small layers, fed one sample at a time (online learning)."""
    torch.manual_seed(0)
    layers = [torch.nn.Linear(FEATURES, 64), torch.nn.Tanh()]
    for _ in range(16):
        layers += [torch.nn.Linear(64, 64), torch.nn.Tanh()]
    net = torch.nn.Sequential(*layers, torch.nn.Linear(64, 10))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    step(batches(1), lambda x, y: fit(net, opt, F.cross_entropy(net(x), y)))


def case_rnn_cell_loop(step):
    """A recurrent cell written by hand, looped over 100 timesteps."""
    torch.manual_seed(0)
    hidden = 64
    w_x = torch.nn.Linear(16, hidden)
    w_h = torch.nn.Linear(hidden, hidden)
    head = torch.nn.Linear(hidden, 10)
    params = [*w_x.parameters(), *w_h.parameters(), *head.parameters()]
    opt = torch.optim.SGD(params, lr=0.01)

    def body(x, y):
        seq = x.reshape(x.shape[0], 16, 16).repeat(1, 7, 1)[:, :100]  # batch, 100 steps, 16
        h = torch.zeros(x.shape[0], hidden)
        for t in range(seq.shape[1]):
            h = torch.tanh(w_x(seq[:, t]) + w_h(h))
        fit(None, opt, F.cross_entropy(head(h), y))
    step(batches(32), body)


def case_lstm_cell_loop(step):
    """nn.LSTMCell stepped over the sequence in Python, where nn.LSTM would run it fused."""
    torch.manual_seed(0)
    cell = torch.nn.LSTMCell(16, 64)
    head = torch.nn.Linear(64, 10)
    opt = torch.optim.Adam([*cell.parameters(), *head.parameters()], lr=1e-3)

    def body(x, y):
        seq = x.reshape(x.shape[0], 16, 16).permute(1, 0, 2)  # 16 steps, batch, 16
        h = c = torch.zeros(x.shape[0], 64)
        for t in range(seq.shape[0]):
            h, c = cell(seq[t], (h, c))
        fit(None, opt, F.cross_entropy(head(h), y))
    step(batches(32), body)


# ---- the rules of the earlier rounds, in new styles ------------------------------------------

def case_item_accuracy(step):
    """Accuracy counted sample by sample with .item()."""
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def body(x, y):
        logits = net(x)
        fit(net, opt, F.cross_entropy(logits, y))
        pred = logits.argmax(1)
        correct = 0
        for i in range(x.shape[0]):
            correct += int((pred[i] == y[i]).item())
        return correct
    step(batches(256), body)


def case_row_minmax_index(step):
    """Each sample min-max scaled in place by index."""
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def body(x, y):
        for i in range(x.shape[0]):
            x[i] = (x[i] - x[i].min()) / (x[i].max() - x[i].min() + 1e-6)
        fit(net, opt, F.cross_entropy(net(x), y))
    step(batches(128), body)


class ListDataset(Dataset):
    """Samples as Python lists, built per item, collated by the default collate_fn."""

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int):
        rng = np.random.default_rng(i)
        return [float(v) for v in rng.random(FEATURES)], int(i % 10)


def case_dataloader_lists(step):
    """A DataLoader without workers over a Dataset that returns Python lists."""
    loader = DataLoader(ListDataset(), batch_size=64, num_workers=0,
                        collate_fn=lambda items: (torch.tensor([a for a, _ in items]),
                                                  torch.tensor([b for _, b in items])))
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    step(iter(loader), lambda x, y: fit(net, opt, F.cross_entropy(net(x), y)))


def case_numpy_augment_in_step(step):
    """Per-sample augmentation in NumPy inside the training step (no DataLoader)."""
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    rng = np.random.default_rng(0)

    def body(x, y):
        arr = x.numpy()
        out = np.empty_like(arr)
        for i in range(arr.shape[0]):
            sample = arr[i].reshape(16, 16)
            for _ in range(8):
                sample = np.roll(sample, int(rng.integers(-2, 3)), axis=int(rng.integers(0, 2)))
                sample = np.clip(sample * 1.01 + rng.normal(0, 0.01, sample.shape), 0, 1)
            out[i] = sample.reshape(-1)
        fit(net, opt, F.cross_entropy(net(torch.from_numpy(out)), y))
    step(batches(128), body)


# ---- clean: nothing to find ------------------------------------------------------------------

def case_clean_cnn(step):
    """A small CNN at batch 64."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Conv2d(16, 32, 3, padding=1),
                              torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                              torch.nn.Linear(32, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    step(batches(64), lambda x, y: fit(net, opt, F.cross_entropy(
        net(x.reshape(-1, 1, 16, 16)), y)))


def case_clean_mlp_adamw(step):
    """An MLP at batch 256 with AdamW and a learning-rate schedule."""
    net = mlp(512)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, 10)

    def body(x, y):
        fit(net, opt, F.cross_entropy(net(x), y))
        sched.step()
    step(batches(256), body)


def case_clean_nn_lstm(step):
    """nn.LSTM (the fused library RNN) over 100 timesteps at batch 32."""
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(16, 64, batch_first=True)
    head = torch.nn.Linear(64, 10)
    opt = torch.optim.Adam([*lstm.parameters(), *head.parameters()], lr=1e-3)

    def body(x, y):
        seq = x.reshape(x.shape[0], 16, 16).repeat(1, 7, 1)[:, :100]
        out, _ = lstm(seq)
        fit(None, opt, F.cross_entropy(head(out[:, -1]), y))
    step(batches(32), body)


def case_clean_embedding_bag(step):
    """A bag-of-words classifier: EmbeddingBag and a linear head, batch 128."""
    torch.manual_seed(0)
    emb = torch.nn.EmbeddingBag(5000, 64, mode="mean")
    head = torch.nn.Linear(64, 10)
    opt = torch.optim.SGD([*emb.parameters(), *head.parameters()], lr=0.1)
    g = torch.Generator().manual_seed(2)

    def body(x, y):
        tokens = torch.randint(0, 5000, (x.shape[0], 40), generator=g)
        fit(None, opt, F.cross_entropy(head(emb(tokens)), y))
    step(batches(128), body)


def case_clean_conv_bn_dropout(step):
    """Convolutions with batch norm and dropout, batch 32, a loss read once a step."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.BatchNorm2d(32),
                              torch.nn.ReLU(), torch.nn.Dropout(0.1),
                              torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.BatchNorm2d(32),
                              torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                              torch.nn.Linear(32, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    history = []

    def body(x, y):
        loss = F.cross_entropy(net(x.reshape(-1, 1, 16, 16)), y)
        fit(net, opt, loss)
        history.append(loss.item())
    step(batches(32), body)


def case_clean_autocast_bf16(step):
    """An MLP under CPU autocast (bfloat16), batch 256."""
    net = mlp(512)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def body(x, y):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(net(x), y)
        fit(net, opt, loss)
    step(batches(256), body)


# ---- the loaded machine ----------------------------------------------------------------------

def case_loaded_clean_mlp(step):
    """case_clean_mlp_adamw's model and batch, with the machine loaded."""
    case_clean_mlp_adamw(step)


def case_loaded_row_minmax(step):
    """case_row_minmax_index, with the machine loaded."""
    case_row_minmax_index(step)


CASES = {name[len("case_"):]: f for name, f in list(globals().items()) if name.startswith("case_")}
LOADED = ("loaded_clean_mlp", "loaded_row_minmax")
# The record_shapes twins (--shapes): the four classes.
SHAPES = ("loss_per_sample", "nested_list_batch", "tiny_layers_batch1", "rnn_cell_loop")


def _busy(seconds: float) -> None:
    end = time.time() + seconds
    x = 0
    while time.time() < end:
        x += 1


def profile(case: str, out: Path, shapes: bool = False) -> Path:
    loaded = case in LOADED
    if not loaded:
        torch.set_num_threads(1)
    load = [multiprocessing.Process(target=_busy, args=(120,)) for _ in range(3 if loaded else 0)]
    for p in load:
        p.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            schedule = torch.profiler.schedule(wait=1, warmup=1, active=ACTIVE, repeat=1)
            with torch.profiler.profile(
                    activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                    **({"record_shapes": True} if shapes else {}),
                    on_trace_ready=torch.profiler.tensorboard_trace_handler(tmp, use_gzip=True)
            ) as prof:
                def step(source, body):
                    for _ in range(2 + ACTIVE):
                        x, y = next(source)
                        body(x, y)
                        prof.step()
                CASES[case](step)
            written = sorted(Path(tmp).glob("*.pt.trace.json.gz"))
            target = out / f"torch_cpu_h51_{case}{'' if shapes else '.defaults'}.pt.trace.json.gz"
            with gzip.open(written[0], "rb") as src, open(target, "wb") as raw, \
                    gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as dst:
                shutil.copyfileobj(src, dst)
    finally:
        for p in load:
            p.terminate()
            p.join()
    return target


def main() -> None:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=here.parent / "data" / "traces")
    parser.add_argument("--shapes", action="store_true",
                        help="record_shapes=True: torch_cpu_h51_<case>.pt.trace.json.gz")
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for case in args.cases or (SHAPES if args.shapes else list(CASES)):
        print(profile(case, args.out, args.shapes), flush=True)


if __name__ == "__main__":
    main()
