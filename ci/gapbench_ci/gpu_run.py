"""What ci/gpu-check's steps share: their failure, the command's time budget, running a command
under a time limit with its output in a log, and finding the CUDA tools."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
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
    """A step ran and did not pass: str() is the one-line detail for the summary."""


class StepCut(StepFailed):
    """A step stopped at its time limit (its own, or what was left of the budget)."""


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


def run_logged_to(command: Sequence[str], log: Path, what: str, limit: tuple[float, str],
                  cwd: Path | None = None, env: dict[str, str] | None = None) -> int:
    """Runs `command` with its output in `log`; returns the exit status. Past `limit` (seconds,
    and what set them) the command and everything it started are stopped, and StepCut says
    so."""
    seconds, why = limit
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        try:
            # Its own process group: a test binary under compute-sanitizer, ctest's tests, all
            # stop with it.
            process = subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT,
                                       cwd=cwd, env=None if env is None else {**os.environ, **env},
                                       start_new_session=True)
        except OSError as e:
            raise StepFailed(f"{what}: cannot run {command[0]}: {e}") from None
        try:
            return process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            _stop(process)
            out.write(f"\n{PROG}: stopped after {seconds:.0f} s ({why})\n")
            raise StepCut(f"{what}: still running after {seconds:.0f} s ({why}), stopped "
                          f"(logs/{_shown(log)})") from None


def _shown(log: Path) -> str:
    """The log's path under logs/ as the summary names it."""
    parts = log.parts
    return "/".join(parts[parts.index("logs") + 1:]) if "logs" in parts else log.name


def _stop(process: subprocess.Popen) -> None:
    """Ends `process` and its group: politely, then for good."""
    for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def last_line(log: Path, containing: str = "") -> str:
    lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace")
             .splitlines() if line.strip() and containing in line]
    return lines[-1] if lines else ""


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
