"""ci/gpu-check's record of its steps: summary.md (each step's result, time, limit and detail,
rewritten whole after each one) and what passed for one source in one build folder, so a later
call on the same machine does not run it again."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from gapbench_report.cli.kit import ToolError
from gapbench_report.inputs.files import write_atomic, write_json_atomic
from gapbench_report.inputs.results import ResultsError

from gapbench_ci.gpu_run import PROG, Budget, StepFailed
from gapbench_ci.tools import TimedOut

# What a run of the same source has done is remembered here, in the build folder.
DONE_FILE = "gpu-check-done.json"


@dataclass
class Done:
    """The steps that passed for one source in one build folder (DONE_FILE there), by key (the
    step's name and the options it ran with)."""

    path: Path
    source: str
    steps: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def load(cls, build_dir: Path, source: str) -> Done:
        path = build_dir / DONE_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls(path, source)
        if not isinstance(data, dict) or data.get("source") != source \
                or not isinstance(data.get("steps"), dict):
            return cls(path, source)  # another source: nothing of it counts
        return cls(path, source, data["steps"])

    def record(self, key: str, step: Step, written: Iterable[Path] = ()) -> None:
        self.steps[key] = {"detail": step.detail, "seconds": round(step.seconds, 1),
                           "at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                           "written": [str(p) for p in written]}
        write_json_atomic(self.path, {"source": self.source, "steps": self.steps})

    def forget(self) -> None:
        self.steps = {}
        self.path.unlink(missing_ok=True)


# ---- the summary -------------------------------------------------------------------------------

# A step's outcome: passed (now or earlier), failed, cut off at its limit, or not run.
PASSED, FAILED, CUT, NOT_RUN = "passed", "failed", "cut", "not run"


@dataclass
class Step:
    name: str
    status: str
    seconds: float
    detail: str
    limit: float | None = None

    @property
    def passed(self) -> bool:
        return self.status == PASSED


@dataclass
class Summary:
    """The steps so far; summary.md is rewritten whole after each one, then `after_step` runs
    (the archive)."""

    path: Path
    header: list[str]
    steps: list[Step] = field(default_factory=list)
    budget: Budget = field(default_factory=lambda: Budget(None))
    done: Done | None = None
    after_step: Callable[[], None] = lambda: None

    @property
    def passed(self) -> bool:
        return bool(self.steps) and all(s.passed for s in self.steps)

    def run(self, name: str, body: Callable[[], str], key: str | None = None,
            written: Callable[[], Iterable[Path]] = tuple, limit: float | None = None) -> bool:
        """Runs one step: body() returns its detail, or raises StepFailed or ToolError
        (tools.TimedOut when its time ran out). With a `key`, a step the record says passed is
        not run again, and one that passes is recorded (with the files `written()` names).
        `limit` is the step's own limit, for the summary."""
        earlier = self.done.steps.get(key) if self.done is not None and key else None
        if earlier is not None:
            return self._add(Step(name, PASSED, 0.0, f"done earlier ({earlier.get('at', '?')}): "
                                                     f"{earlier.get('detail', '')}", limit))
        if self.budget.spent():
            return self._add(Step(name, NOT_RUN, 0.0,
                                  f"not run: the budget of {self.budget.seconds:.0f} s is spent",
                                  limit))
        print(f"{PROG}: {name} ...", file=sys.stderr, flush=True)
        start = time.monotonic()
        try:
            status, detail = PASSED, body()
        except TimedOut as e:
            status, detail = CUT, " ".join(str(e).split())
        except (StepFailed, ToolError, ResultsError) as e:
            status, detail = FAILED, " ".join(str(e).split())
        step = Step(name, status, time.monotonic() - start, detail, limit)
        if step.passed and self.done is not None and key:
            self.done.record(key, step, written())
        return self._add(step)

    def _add(self, step: Step) -> bool:
        self.steps.append(step)
        print(f"{PROG}: {step.name}: {step.status.upper() if not step.passed else step.status} "
              f"({step.seconds:.0f} s) {step.detail}", file=sys.stderr, flush=True)
        write_atomic(self.path, self.markdown())
        self.after_step()
        return step.passed

    def markdown(self) -> str:
        counts = {s: sum(step.status == s for step in self.steps)
                  for s in (PASSED, FAILED, CUT, NOT_RUN)}
        verdict = ("every step passed" if self.passed else
                   ", ".join(f"{n} {s}" for s, n in counts.items() if n))
        spent = sum(s.seconds for s in self.steps)
        lines = ["# gapbench GPU check", "", *self.header, "",
                 f"**Result: {verdict}** ({_duration(spent)} in all).", "",
                 "| step | result | time | limit | detail |", "|---|---|---|---|---|"]
        for s in self.steps:
            detail = s.detail.replace("|", "\\|")
            result = s.status if s.passed else f"**{s.status.upper()}**"
            limit = f"{s.limit:.0f} s" if s.limit else ""
            lines.append(f"| {s.name} | {result} | {_duration(s.seconds)} | {limit} | {detail} |")
        return "\n".join(lines) + "\n"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:02.0f} s"
