"""Running gapbench from Python: git facts, building a tree, one run of the executable, pooling.

Shared by baseline (capturing a baseline), nightly (the regression gate) and gate_proof (the
proof that the gate works). Everything that can fail raises ToolError with one line; the
commands turn it into exit status 2.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gapbench_report.commandline import ToolError
from gapbench_report.results import PROCESS_KEY

# ci/gapbench_ci/runner.py -> the repository root.
REPO_ROOT = Path(__file__).resolve().parents[2]
# Characters with a meaning in the POSIX extended regular expressions of --benchmark_filter.
_ERE_SPECIAL = set(".[]{}()\\*+?^$|")


# ---- git ------------------------------------------------------------------------------------

class NotACommit(ToolError):
    """A ref that names no commit here (as opposed to git failing altogether)."""


class DubiousOwnership(ToolError):
    """Git refuses the repository: it belongs to another user than this process (git 2.35.2
    and later), as a CI container running as root sees the runner user's checkout."""


def _refused_for_ownership(root: Path, stderr: str) -> None:
    """Raises DubiousOwnership when git's stderr says so: its own advice spans several lines
    and is easily mistaken for some other failure further up. Git 2.35.2 to 2.35.x said
    "unsafe repository ('PATH' is owned by someone else)", later ones "detected dubious
    ownership in repository at 'PATH'"."""
    if "dubious ownership" not in stderr and "unsafe repository" not in stderr:
        return
    where = re.search(r"repository at '([^']+)'|unsafe repository \('([^']+)'", stderr)
    path = next((g for g in where.groups() if g), str(root)) if where else str(root)
    raise DubiousOwnership(f"git refuses {path}: detected dubious ownership (the checkout "
                           f"belongs to another user than this process); mark it safe: "
                           f"git config --global --add safe.directory {shlex.quote(path)}")


def _run_git(root: Path, args: Sequence[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              check=False)
    except FileNotFoundError:
        raise ToolError("git is not installed") from None


def git(root: Path, *args: str) -> str:
    done = _run_git(root, args)
    if done.returncode != 0:
        _refused_for_ownership(root, done.stderr)
        message = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
        raise ToolError(f"git {' '.join(args)}: {message}")
    return done.stdout.strip()


def is_shallow(root: Path) -> bool:
    return git(root, "rev-parse", "--is-shallow-repository") == "true"


def resolve_commit(root: Path, ref: str) -> str:
    """The full hash of `ref`; NotACommit when it names no commit here, and ToolError (one of
    its kinds) when git itself fails: a shallow clone is blamed only when the clone is one."""
    done = _run_git(root, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"])
    if done.returncode == 0:
        return done.stdout.strip()
    _refused_for_ownership(root, done.stderr)
    if done.stderr.strip():  # --quiet: a missing ref says nothing, anything else is a failure
        raise ToolError(f"git rev-parse {ref}: {' '.join(done.stderr.split())}")
    if is_shallow(root):
        raise NotACommit(f"{ref!r} is not a commit in {root}, a shallow clone (fetch the "
                         "history: actions/checkout needs fetch-depth: 0)")
    raise NotACommit(f"{ref!r} is not a commit in {root}")


def is_dirty(root: Path) -> bool:
    """Uncommitted changes, untracked files included (CMake globs new sources in). Captured
    baselines are left out: they are what the tools write, not what gapbench is built from, and
    a second Colab part must not call the first part's new file a change to the code."""
    return bool(git(root, "status", "--porcelain", "--", ".", ":(exclude)results/baselines"))


@dataclass(frozen=True)
class TreeState:
    commit: str | None  # None outside a git checkout
    dirty: bool

    @property
    def label(self) -> str:
        if self.commit is None:
            return "unknown (not a git checkout)"
        return self.commit[:12] + ("-dirty" if self.dirty else "")


# For a tree that is no git checkout (an unpacked `git archive` tarball, as the Colab notebook
# may use): the commit it came from (`git get-tar-commit-id < tarball`).
SOURCE_COMMIT_VARIABLE = "GAPBENCH_SOURCE_COMMIT"


def tree_state(root: Path) -> TreeState:
    """This checkout's commit; refused ownership is an error, not "no checkout"."""
    try:
        return TreeState(git(root, "rev-parse", "HEAD"), is_dirty(root))
    except DubiousOwnership:
        raise
    except ToolError:
        return TreeState(os.environ.get(SOURCE_COMMIT_VARIABLE) or None, False)


def export_commit(root: Path, commit: str, dest: Path) -> None:
    """The tree of `commit` into `dest` (git archive: no worktree is registered anywhere)."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.Popen(["git", "-C", str(root), "archive", "--format=tar", commit],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    untar = subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout,
                           capture_output=True, check=False)
    archive.stdout.close()
    err = archive.stderr.read().decode(errors="replace")
    if archive.wait() != 0 or untar.returncode != 0:
        _refused_for_ownership(root, err)
        detail = " ".join((err + untar.stderr.decode(errors="replace")).split())
        raise ToolError(f"cannot export commit {commit[:12]} into {dest}: {detail}")


# ---- building -------------------------------------------------------------------------------

def run_logged(command: Sequence[str], what: str, cwd: Path | None = None,
               env: Mapping[str, str] | None = None) -> None:
    """Runs a step whose output belongs in the job's log (stderr); ToolError when it fails."""
    print(f"+ {shlex.join(command)}", file=sys.stderr, flush=True)
    try:
        done = subprocess.run(list(command), cwd=cwd, stdout=2, stderr=2,
                              env=None if env is None else {**os.environ, **env}, check=False)
    except FileNotFoundError:
        raise ToolError(f"{what}: {command[0]} is not installed (bash ci/setup)") from None
    if done.returncode != 0:
        raise ToolError(f"{what} failed (exit status {done.returncode}; its output is above)")


def build_gapbench(source: Path, build_dir: Path, cmake_args: Sequence[str] = (),
                   jobs: int | None = None) -> Path:
    """Configures (once) and builds the gapbench target of `source` in `build_dir`, Release, Ninja
    like the presets; returns the executable."""
    if not (build_dir / "CMakeCache.txt").exists():
        run_logged(["cmake", "-S", str(source), "-B", str(build_dir), "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release", f"-DPython3_EXECUTABLE={sys.executable}",
                    *cmake_args], f"configuring {source}")
    command = ["cmake", "--build", str(build_dir), "--target", "gapbench"]
    if jobs:
        command += ["--parallel", str(jobs)]
    run_logged(command, f"building {source}")
    binary = build_dir / "gapbench"
    if not binary.exists():
        raise ToolError(f"the build of {source} made no {binary}")
    return binary


# ---- one run ----------------------------------------------------------------------------------

def ere_escape(text: str) -> str:
    return "".join("\\" + c if c in _ERE_SPECIAL else c for c in text)


def exact_filter(names: Iterable[str]) -> str:
    """A --benchmark_filter that matches exactly these full names (Google Benchmark matches the
    filter against the name with its /real_time, /manual_time and /threads:N suffixes)."""
    names = list(names)
    if not names:
        raise ValueError("no names")
    return "^(" + "|".join(ere_escape(n) for n in names) + ")$"


@dataclass(frozen=True)
class RunSpec:
    """How gapbench runs: the profile, and what overrides the profile's defaults."""

    filter: str = "."
    profile: str = "quick"
    repetitions: int | None = None  # None: the profile's (quick 5, full 10)
    min_time: float | None = None  # seconds; None: the profile's
    interleave: bool = True  # --benchmark_enable_random_interleaving
    extra_args: tuple[str, ...] = ()

    def args(self, out: Path | None = None) -> list[str]:
        args = [f"--profile={self.profile}", f"--benchmark_filter={self.filter}"]
        if self.repetitions is not None:
            args.append(f"--benchmark_repetitions={self.repetitions}")
        if self.min_time is not None:
            args.append(f"--benchmark_min_time={self.min_time:g}")
        if self.interleave:
            args.append("--benchmark_enable_random_interleaving=true")
        args += list(self.extra_args)
        if out is not None:
            args.append(f"--benchmark_out={out}")
        return args


def run_gapbench(binary: Path, spec: RunSpec, out: Path,
                 env: Mapping[str, str] | None = None, quiet: bool = True) -> int:
    """One run writing `out`. Returns 0, or 1 when a benchmark failed (the file holds the
    error); ToolError for a usage error (exit 2), a crash, or no results file."""
    out.unlink(missing_ok=True)
    command = [str(binary), *spec.args(out)]
    try:
        done = subprocess.run(command, stdout=subprocess.DEVNULL if quiet else 2,
                              stderr=subprocess.PIPE, text=True, check=False,
                              env=None if env is None else {**os.environ, **env})
    except OSError as e:
        raise ToolError(f"cannot run {binary}: {e}") from None
    last = (done.stderr.strip().splitlines() or [""])[-1]
    if done.returncode not in (0, 1):
        raise ToolError(f"{shlex.join(command)} exited with status {done.returncode}: {last}")
    if not out.exists():
        raise ToolError(f"{shlex.join(command)} exited with status {done.returncode} but "
                        f"{out} is not there: something else removed it")
    return done.returncode


def list_benchmarks(binary: Path, spec: RunSpec) -> list[str]:
    """The names a run of `spec` would time, in registration order."""
    command = [str(binary), f"--profile={spec.profile}", f"--benchmark_filter={spec.filter}",
               "--benchmark_list_tests=true"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        raise ToolError(f"{shlex.join(command)} exited with status {done.returncode}: {last}")
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def doctor_facts(binary: Path) -> dict:
    """`gapbench doctor --json`: {"facts": {...}, "findings": [...]}."""
    done = subprocess.run([str(binary), "doctor", "--json"], capture_output=True, text=True,
                          check=False)
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError:
        data = None
    # 3: doctor found something that invalidates GPU results; its facts are still the facts.
    if done.returncode not in (0, 3) or not isinstance(data, dict) or "facts" not in data:
        raise ToolError(f"{binary} doctor --json failed (exit status {done.returncode})")
    return data


# ---- pooling ----------------------------------------------------------------------------------

def read_document(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ToolError(f"{path}: unreadable results: {e}") from None


def pool(documents: Sequence[dict]) -> dict:
    """One results document holding every repetition of several runs of one binary.

    The repetitions of each benchmark are renumbered 0..n-1 in run order and tagged with the run
    they came from (results.PROCESS_KEY: compare judges by run, the independent sample); Google
    Benchmark's aggregates are dropped (they describe one run each). The context is the first
    run's, with gapbench.pooled_runs added.
    """
    if not documents:
        raise ValueError("nothing to pool")
    context = {**documents[0]["context"], "gapbench.pooled_runs": str(len(documents))}
    rows: list[dict] = []
    index: dict[str, int] = {}
    for process, doc in enumerate(documents):
        for entry in doc.get("benchmarks", []):
            if entry.get("run_type") == "aggregate":
                continue
            name = entry.get("run_name", entry.get("name"))
            rows.append({**entry, "repetition_index": index.get(name, 0), PROCESS_KEY: process})
            index[name] = index.get(name, 0) + 1
    for row in rows:
        row["repetitions"] = index[row.get("run_name", row.get("name"))]
    return {"context": context, "benchmarks": rows}


@dataclass(frozen=True)
class Side:
    """One executable of an interleaved comparison ("baseline" or "contender")."""

    label: str
    binary: Path
    env: Mapping[str, str] = field(default_factory=dict)
