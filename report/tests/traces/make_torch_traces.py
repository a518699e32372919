"""Real PyTorch CPU profiler traces for `gapbench-report explain`'s tests, each slow in one way.

    python report/tests/traces/make_torch_traces.py [--out report/tests/data/traces]

Needs torch (any recent build; the CPU suffices). Each case is a small training loop of an MLP,
profiled with torch.profiler's schedule over a few steps (ProfilerStep#N) and written gzipped
by tensorboard_trace_handler, as a user would: record_shapes=True, so that explain can read the
matmul sizes. CI does not run this: the traces it wrote are committed beside it
(torch_cpu_<case>.pt.trace.json.gz).

- dataloader: a DataLoader with no workers (num_workers=0) over a Dataset whose __getitem__
  does real per-sample work (a 32x32 image decoded and normalised in NumPy), feeding a fast step.
- loop: per-element Python loop in the step (each row normalised by indexing, x[i] = ...).
- item: a per-sample metric read with .item() in the loop (one device-to-host read per sample).
- tiny_batch: batch 2, the step's fixed costs (optimizer, dispatch) dwarf its arithmetic.
- clean: batch 256 from tensors already in memory, one vectorized step: none of the above.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

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


CASES = {"dataloader": case_dataloader, "loop": case_loop, "item": case_item,
         "tiny_batch": case_tiny_batch, "clean": case_clean}


def profile(case: str, out: Path) -> Path:
    torch.set_num_threads(1)  # the same on any machine's core count
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    with tempfile.TemporaryDirectory() as tmp:
        schedule = torch.profiler.schedule(wait=1, warmup=1, active=STEPS, repeat=1)
        with torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                record_shapes=True,
                on_trace_ready=torch.profiler.tensorboard_trace_handler(tmp, use_gzip=True)) as p:
            def step(source, body):
                for _ in range(2 + STEPS):
                    x, y = next(source)
                    body(net, opt, x, y)
                    p.step()
            CASES[case](step)
        written = sorted(Path(tmp).glob("*.pt.trace.json.gz"))
        target = out / f"torch_cpu_{case}.pt.trace.json.gz"
        # Re-compressed with a fixed mtime: the same trace gives the same bytes.
        with gzip.open(written[0], "rb") as src, open(target, "wb") as raw, \
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
    return target


def main() -> None:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=here.parent / "data" / "traces")
    parser.add_argument("cases", nargs="*", default=list(CASES))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for case in args.cases:
        print(profile(case, args.out))


if __name__ == "__main__":
    main()
