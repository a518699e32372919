"""What the nightly carries from night to night, under its --state-dir: the known-good commit
and the history of each night's medians (docs/regressions.md#nightly).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from gapbench_report.cli.kit import ToolError
from gapbench_report.inputs.files import write_atomic, write_json_atomic
from gapbench_report.inputs.results import is_time, json_files

from gapbench_ci.nightly_gate import Verdict
from gapbench_ci.runner import NotACommit, RunSpec, TreeState, is_shallow, resolve_commit

KNOWN_GOOD_FILE = "known-good"
HISTORY_DIR = "history"
HISTORY_SCHEMA = "gapbench-nightly-history/1"
# Why a state folder may be empty, when the caller does not say where it came from: the workflow
# keeps it in the Actions cache.
CACHE_EVICTION = "the Actions cache is evicted after 7 days without use"


# ---- the known-good commit ---------------------------------------------------------------------

@dataclass(frozen=True)
class KnownGood:
    commit: str
    how: str  # where it came from, for the summary
    fell_back: bool = False  # HEAD~1, for want of a usable recorded known-good


def choose_known_good(root: Path, given: str | None, state_dir: Path) -> KnownGood:
    """--good, else the commit recorded in <state-dir>/known-good, else HEAD~1 (fell_back:
    state_warning says so loudly). A git failure is an error, never a reason to fall back."""
    if given:
        return KnownGood(resolve_commit(root, given), f"--good {given}")
    recorded = state_dir / KNOWN_GOOD_FILE
    how = "HEAD~1 (no known-good recorded)"
    if recorded.exists():
        commit = recorded.read_text(encoding="utf-8").strip()
        try:
            return KnownGood(resolve_commit(root, commit), f"last good night ({recorded})")
        except NotACommit:
            how = f"HEAD~1 ({recorded} names {commit[:12]!r}, not a commit here)"
    try:
        return KnownGood(resolve_commit(root, "HEAD~1"), how, fell_back=True)
    except NotACommit:
        if is_shallow(root):
            raise ToolError("no known-good commit: none recorded, and HEAD~1 is not in this "
                            "shallow clone (actions/checkout needs fetch-depth: 0; or pass "
                            "--good REF)") from None
        raise ToolError("no known-good commit: none recorded, and HEAD has no parent (pass "
                        "--good REF)") from None


def write_known_good(state_dir: Path, commit: str) -> None:
    write_atomic(state_dir / KNOWN_GOOD_FILE, commit + "\n")


# ---- what the state folder held --------------------------------------------------------------

@dataclass(frozen=True)
class StateFound:
    """What <state-dir> held before this night wrote anything."""

    known_good: bool  # a known-good file
    nights: int  # history records

    def as_json(self, state_dir: Path, origin: str | None, warning: str | None) -> dict:
        return {"dir": str(state_dir), "origin": origin, "known_good_recorded": self.known_good,
                "history_nights": self.nights, "warning": warning}


def read_state(state_dir: Path) -> StateFound:
    history = state_dir / HISTORY_DIR
    nights = len(json_files(history)) if history.is_dir() else 0
    return StateFound((state_dir / KNOWN_GOOD_FILE).exists(), nights)


def state_warning(found: StateFound, state_dir: Path, fell_back: bool, keeps_history: bool,
                  origin: str | None = None) -> str | None:
    """The loud line for the top of summary.md and the log when this night cannot carry on
    from the last one (the state is lost, new or partial); None when it can. fell_back: the
    known-good is HEAD~1 for want of a recorded one; origin: where the state came from (the
    workflow says whether the Actions cache had it)."""
    then = []
    if fell_back:
        then.append("compares against HEAD~1")
    if keeps_history and found.nights == 0:
        then.append("starts a new history")
    if not then:
        return None
    consequence = f"this night {' and '.join(then)}."
    nights = f"{found.nights} night{'s' if found.nights != 1 else ''}"
    if not found.known_good and found.nights == 0:
        return (f"**State lost or new:** no known-good commit and no history were found in "
                f"{state_dir} ({origin or CACHE_EVICTION}); {consequence}")
    if found.known_good and fell_back:
        return (f"**Known-good commit unusable:** {state_dir / KNOWN_GOOD_FILE} names no "
                f"commit of this clone (a rewritten history?); {consequence}")
    if not found.known_good:
        return (f"**No known-good commit:** {state_dir} holds a history of {nights} but no "
                f"known-good (no night has passed on a clean tree since it began, or the file "
                f"was lost); {consequence}")
    return (f"**History lost:** {state_dir} holds a known-good commit but no history "
            f"({origin or CACHE_EVICTION}); {consequence}")


# ---- history ------------------------------------------------------------------------------------

def history_record(verdict: Verdict, tree: TreeState, good_commit: str | None, spec: RunSpec,
                   when: datetime) -> dict:
    cont = verdict.first.contender
    medians = {n: b.median for n, b in cont.benchmarks().items()
               if b.status == "ok" and is_time(b.median)}
    return {"schema": HISTORY_SCHEMA, "date": when.isoformat(timespec="seconds"),
            "commit": tree.commit, "dirty": tree.dirty, "good_commit": good_commit,
            "machine": cont.machine, "cpu": cont.context.get("cpu.model"),
            "gpu": cont.context.get("gpu.name"), "profile": spec.profile,
            "filter": spec.filter, "regression": verdict.regression,
            "confirmed": verdict.confirmed, "failures": verdict.failures, "medians": medians}


def write_history(state_dir: Path, record: dict, when: datetime, tree: TreeState) -> Path:
    label = tree.label if tree.commit else "unknown"
    path = state_dir / HISTORY_DIR / f"{when.strftime('%Y%m%dT%H%M%SZ')}-{label}.json"
    write_json_atomic(path, record)
    return path
