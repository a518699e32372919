"""Whether two machines ran the same benchmark code: the hash of each family's sources that runs
record at build time (`gapbench.source.<family>`), else git history between the two runs'
commits, else that nothing can tell. versus/comparison.py refuses a changed benchmark and says
beside a row where its code's identity is unknown (docs/report.md#like-with-like-only)."""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SOURCE_KEY = "gapbench.source."  # + the family
# Each family's sources, for files that predate the hash: its own files under bench/ and the
# kernels that only it runs (git pathspecs, from the repository's root). The shared fixtures and
# kernels/base are left out: they change with nearly every commit and rarely what a row times.
FAMILY_SOURCES = {
    "conv": ("bench/conv*", "kernels/conv*"),
    "lstm": ("bench/lstm*", "kernels/lstm*"),
    "overhead": ("bench/overhead*", "kernels/gemm*", "kernels/dense*", "kernels/launch*"),
    "transfer": ("bench/transfer*",),
    "preprocess": ("bench/preprocess*", "kernels/preprocess*", "kernels/image*"),
    "pipeline": ("bench/pipeline*", "fixtures/pipeline*", "kernels/pipeline*"),
}
GIT_SECONDS = 10
# The repository this report was installed from, where it is a git checkout.
REPO = Path(__file__).resolve().parents[3]  # report/gapbench_report/versus/code.py

SAME, CHANGED, UNKNOWN = "same", "changed", "unknown"


@dataclass(frozen=True)
class Identity:
    """Whether a family's code is the same on both machines ("same", "changed", "unknown"), and
    how that is known, in words."""

    state: str
    words: str = ""


def git_changed(a: str, b: str, family: str, repo: Path = REPO) -> bool | None:
    """Whether the family's sources differ between commits a and b (`git diff --quiet`); None
    where git, the repository or either commit is not there to ask."""
    paths = FAMILY_SOURCES.get(family)
    if not paths or not (repo / ".git").exists() or not shutil.which("git"):
        return None
    return _git_diff(a, b, paths, str(repo))


@functools.lru_cache(maxsize=256)
def _git_diff(a: str, b: str, paths: tuple[str, ...], repo: str) -> bool | None:
    try:
        done = subprocess.run(["git", "-C", repo, "diff", "--quiet", a, b, "--", *paths],
                              capture_output=True, timeout=GIT_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: False, 1: True}.get(done.returncode)


def identity(family: str, here: tuple[dict, str], there: tuple[dict, str]) -> Identity:
    """The family's code on both machines, from each side's (context, commit)."""
    key = SOURCE_KEY + family
    mine, theirs = str(here[0].get(key) or ""), str(there[0].get(key) or "")
    if mine and theirs:
        if mine == theirs:
            return Identity(SAME)
        return Identity(CHANGED, f"the benchmark's code differs ({key} {mine} here, {theirs} "
                                 "there)")
    a, b = here[1], there[1]
    if not a or not b:
        missing = "on either machine" if not a and not b else "here" if not a else "there"
        return Identity(UNKNOWN, f"its code may differ: no gapbench commit recorded {missing}")
    if a == b:
        return Identity(SAME)
    changed = git_changed(a, b, family)
    if changed is None:
        return Identity(UNKNOWN, f"its code may differ: gapbench {a} here, {b} there, and no git "
                                 "history here to tell")
    if changed:
        return Identity(CHANGED, f"the benchmark's code changed between gapbench {b} there and "
                                 f"{a} here (git history of its sources)")
    return Identity(SAME)
