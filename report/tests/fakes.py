"""Fake gapbench executables for the tests (fake_gapbench.py behind a small shell script)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

FAKE = Path(__file__).parent / "fake_gapbench.py"
# Names of the scheme, on the CPU, with Google Benchmark's suffix, as the real ones.
SUMSQ = "preprocess/vectorized/cpu/op:sumsq/rows:10000/cols:100/real_time"
IMAGE = "preprocess/vectorized/cpu/op:image/n:1/hw:256/c:3/real_time"
LOOP = "preprocess/elementwise/cpu/op:sumsq/rows:10000/cols:100/real_time"
COPY = "transfer/memcpy/cpu/bytes:1048576/real_time"
BENCHMARKS = {SUMSQ: 2e-4, IMAGE: 5e-5, LOOP: 2.2e-3, COPY: 3e-4}


def make_fake(folder: Path, label: str, **spec) -> Path:
    """An executable `folder/label` that behaves as gapbench with this spec (see
    fake_gapbench.py); benchmarks default to BENCHMARKS."""
    folder.mkdir(parents=True, exist_ok=True)
    spec.setdefault("benchmarks", BENCHMARKS)
    spec.setdefault("label", label)
    spec_path = folder / f"{label}.spec.json"
    spec_path.write_text(json.dumps(spec))
    exe = folder / label
    exe.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(FAKE))} "
                   f"{shlex.quote(str(spec_path))} \"$@\"\n")
    exe.chmod(0o755)
    return exe


def invocations(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
