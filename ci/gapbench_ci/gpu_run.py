"""What ci/gpu-check's steps share: their failure, the command's time budget, finding the CUDA
tools, and the hash that says "the same source". (Their commands run through tools.)"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gapbench_ci.runner import REPO_ROOT

PROG = "ci/gpu-check"
# Kept free at the end of --budget for the summary and the archive.
ARCHIVE_RESERVE_S = 15
# Less than this left of the budget: a step is not started.
MIN_STEP_S = 10


class StepFailed(Exception):
    """A step ran and did not pass: str() is the one-line detail for the summary. (A step
    stopped at its time limit, its own or what was left of the budget, raises tools.TimedOut.)"""


@dataclass
class Budget:
    """The whole command's time (None: unbounded), from its start."""

    seconds: float | None
    start: float = field(default_factory=time.monotonic)

    def left(self) -> float | None:
        return None if self.seconds is None else self.seconds - (time.monotonic() - self.start)

    def spent(self) -> bool:
        left = self.left()
        return left is not None and left - ARCHIVE_RESERVE_S < MIN_STEP_S

    def limit(self, own: float) -> tuple[float, str]:
        """A step's time limit: its own, or what is left of the budget if less; and which."""
        left = self.left()
        if left is not None and left - ARCHIVE_RESERVE_S < own:
            return max(1.0, left - ARCHIVE_RESERVE_S), "what was left of --budget"
        return own, "its limit"


def cuda_bin_dirs() -> list[Path]:
    """Where the CUDA tools may be, in the order cmake/gapbench_cuda.cmake looks for nvcc."""
    dirs = []
    if os.environ.get("CUDACXX"):
        dirs.append(Path(os.environ["CUDACXX"]).parent)
    nvcc = shutil.which("nvcc")
    if nvcc:
        dirs.append(Path(nvcc).resolve().parent)
    dirs += [Path("/usr/local/cuda/bin"), REPO_ROOT / ".venv" / "cuda" / "bin"]
    return dirs


def find_cuda_tool(name: str) -> Path | None:
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    for d in cuda_bin_dirs():
        for candidate in (d / name, d.parent / name / name):  # compute-sanitizer/compute-sanitizer
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
    return None


def hash_files(root: Path, parts: Sequence[str]) -> str:
    """A hash of the files under `parts` of `root` (their paths and contents), Python's caches
    left out: the same sources, whether or not this is a git checkout."""
    digest = hashlib.sha256()
    for part in parts:
        top = root / part
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            if "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
