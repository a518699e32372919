"""Facts about the machine that need no framework: the CUDA version the NVIDIA driver supports
(read from libcuda, as gapbench does), the CPU, and gapbench doctor's machine id where a built
gapbench is at hand, so that the report sets the probe's file beside gapbench's as one machine."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def format_cuda(version: int) -> str:
    """12040 -> "12.4", as CUDA encodes its versions (1000·major + 10·minor)."""
    return f"{version // 1000}.{version % 1000 // 10}"


def parse_cuda(text: str | None) -> tuple[int, int] | None:
    """"12.4" -> (12, 4); None for "none", "unknown" and the like."""
    try:
        major, minor = str(text).split(".")[:2]
        return int(major), int(minor)
    except (TypeError, ValueError):
        return None


def driver_cuda_version(library: str = "libcuda.so.1") -> tuple[str | None, str]:
    """(the driver's CUDA version, "") or (None, why not). cuDriverGetVersion needs no cuInit and
    no GPU: only the driver's library."""
    try:
        cuda = ctypes.CDLL(library)
    except OSError:
        return None, f"no NVIDIA driver ({library} not found)"
    get_version = getattr(cuda, "cuDriverGetVersion", None)
    if get_version is None:  # not NVIDIA's libcuda, or a stub of it
        return None, f"{library} has no cuDriverGetVersion"
    version = ctypes.c_int(0)
    status = get_version(ctypes.byref(version))
    if status != 0 or version.value <= 0:
        return None, f"cuDriverGetVersion failed (CUresult {status})"
    return format_cuda(version.value), ""


PACKAGE = Path(__file__).resolve().parent


def source_state(package: Path = PACKAGE) -> tuple[str, str]:
    """(commit, tree) of the gapbench checkout the probe runs from, as gapbench's own context
    records them (gapbench.commit, gapbench.tree): a hash and "clean" or "dirty" (untracked files
    count; results/baselines, which the tools write, does not). Installed outside a checkout (a
    wheel in site-packages, even one inside the checkout's ignored .venv) it is $GAPBENCH_SOURCE_
    COMMIT where set, else "unknown", and the tree "unknown"."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(package), *args], capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()

    try:
        top = Path(git("rev-parse", "--show-toplevel")).resolve()
        if top / "probe" / "gapbench_probe" != package.resolve():
            raise ValueError("not this checkout's probe")
        commit = git("rev-parse", "HEAD")
        changes = subprocess.run(["git", "-C", str(top), "status", "--porcelain", "--", ".",
                                  ":(exclude)results/baselines"], capture_output=True, text=True,
                                 check=True, timeout=30).stdout
        return commit, "dirty" if changes.strip() else "clean"
    except (OSError, ValueError, subprocess.SubprocessError):
        commit = os.environ.get("GAPBENCH_SOURCE_COMMIT", "")
        return (commit if commit.isalnum() else "unknown"), "unknown"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def memory_total_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


@dataclass
class Doctor:
    """What `gapbench doctor --json` said, or why it could not be asked."""

    facts: dict = field(default_factory=dict)
    source: str = ""  # the executable asked, or why none was


def find_gapbench(explicit: str | None) -> Path | None:
    """The executable given, else the one each preset builds into build/<preset>/ (default's
    first), else gapbench on PATH."""
    if explicit:
        return Path(explicit)
    default = REPO / "build" / "default" / "gapbench"
    others = sorted(p for p in (REPO / "build").glob("*/gapbench") if p != default)
    for built in (default, *others):
        if built.is_file() and os.access(built, os.X_OK):
            return built
    found = shutil.which("gapbench")
    return Path(found) if found else None


def ask_doctor(explicit: str | None) -> Doctor:
    exe = find_gapbench(explicit)
    if exe is None:
        return Doctor(source="no gapbench executable found (build gapbench, or pass --gapbench)")
    try:
        done = subprocess.run([str(exe), "doctor", "--json"], capture_output=True, text=True,
                              timeout=60, check=False)
        facts = json.loads(done.stdout)["facts"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError) as e:
        return Doctor(source=f"{exe} doctor --json failed: {type(e).__name__}: {e}")
    return Doctor(facts, f"{exe} doctor")


def results_machine_id(folder: Path) -> tuple[str, Path] | None:
    """(machine.id, file) of the newest gapbench results file in `folder`: its context has a
    machine.id and, unlike the probe's own files, no framework.name."""
    found = []
    for path in folder.glob("*.json"):
        try:
            context = json.loads(path.read_text(encoding="utf-8"))["context"]
            mtime = path.stat().st_mtime
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a results file
        if isinstance(context, dict) and context.get("machine.id") and \
                "framework.name" not in context:
            found.append((mtime, str(context["machine.id"]), path))
    if not found:
        return None
    _, mid, path = max(found)
    return mid, path


def machine_id(doctor: Doctor, results: Path | None = None) -> tuple[str, str]:
    """(machine.id, where it came from): gapbench doctor's where it answered (the same id as the
    families' files), else that of gapbench's results already in `results`, else one of the
    probe's own from the CPU and memory."""
    if doctor.facts.get("machine.id"):
        return str(doctor.facts["machine.id"]), doctor.source
    found = results_machine_id(results) if results is not None else None
    if found:
        return found[0], f"machine.id of {found[1]} ({doctor.source})"
    text = f"{cpu_model()}|{os.cpu_count()}|{memory_total_bytes()}"
    return ("probe-" + hashlib.sha256(text.encode()).hexdigest()[:12],
            f"the probe's own (CPU model, cores, memory): {doctor.source}")
