"""Running gapbench from Python: git facts, building a tree, one run of the executable, pooling.

Shared by baseline (capturing a baseline), nightly (the regression gate) and gate_proof (the
proof that the gate works); the commands themselves run through tools. Everything that can fail
raises ToolError with one line; the commands turn it into exit status 2.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gapbench_report.cli.kit import ToolError
from gapbench_report.inputs.results import PROCESS_KEY

from gapbench_ci import tools

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


def _run_git(root: Path, args: Sequence[str]) -> tools.Done:
    return tools.run(["git", "-C", str(root), *args], limit=tools.GIT_S, ok=None,
                     missing="install git (Debian and Ubuntu: apt-get install git)")


def git(root: Path, *args: str) -> str:
    done = _run_git(root, args)
    if done.status != 0:
        _refused_for_ownership(root, done.err)
        message = " ".join(done.err.split()) or f"exit status {done.status}"
        raise ToolError(f"git {' '.join(args)}: {message}")
    return done.out.strip()


def is_shallow(root: Path) -> bool:
    return git(root, "rev-parse", "--is-shallow-repository") == "true"


def resolve_commit(root: Path, ref: str) -> str:
    """The full hash of `ref`; NotACommit when it names no commit here, and ToolError (one of
    its kinds) when git itself fails: a shallow clone is blamed only when the clone is one."""
    done = _run_git(root, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"])
    if done.status == 0:
        return done.out.strip()
    _refused_for_ownership(root, done.err)
    if done.err.strip():  # --quiet: a missing ref says nothing, anything else is a failure
        raise ToolError(f"git rev-parse {ref}: {' '.join(done.err.split())}")
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
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        tar = Path(tmp) / "tree.tar"
        done = _run_git(root, ["archive", "--format=tar", f"--output={tar}", commit])
        if done.status == 0:
            done = tools.run(["tar", "-x", "-f", str(tar), "-C", str(dest)], limit=tools.GIT_S,
                             ok=None)
    if done.status != 0:
        _refused_for_ownership(root, done.err)
        raise ToolError(f"cannot export commit {commit[:12]} into {dest}: "
                        f"{' '.join(done.err.split())}")


# ---- building -------------------------------------------------------------------------------

def build_gapbench(source: Path, build_dir: Path, cmake_args: Sequence[str] = (),
                   jobs: int | None = None) -> Path:
    """Configures (once) and builds the gapbench target of `source` in `build_dir`, Release, Ninja
    like the presets, its output in the job's log (stderr); returns the executable."""
    if not (build_dir / "CMakeCache.txt").exists():
        tools.configure(source, build_dir, extra=cmake_args, echo=True)
    tools.build(build_dir, jobs=jobs, what=f"building {source}", echo=True)
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
    # Its progress (stdout): nowhere, or the job's log; its errors (stderr) kept for the line.
    done = tools.run(command, limit=tools.RUN_S, ok=(0, 1),
                     stdout="discard" if quiet else "show", env=env,
                     missing=f"no executable at {binary}, so gapbench cannot run")
    if not out.exists():
        raise ToolError(f"{shlex.join(command)} exited with status {done.status} but "
                        f"{out} is not there: something else removed it")
    return done.status


def doctor_facts(binary: Path) -> dict:
    """`gapbench doctor --json`: {"facts": {...}, "findings": [...]}."""
    status, data = tools.doctor(binary)
    # 3: doctor found something that invalidates GPU results; its facts are still the facts.
    if status not in (0, 3):
        raise ToolError(f"{binary} doctor --json failed (exit status {status})")
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
