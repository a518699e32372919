"""A finding: what diagnose's rules say about a run, and explain's about a trace (explain's
Explained adds what a fix saves). Also what both do with findings, in one place: the costliest
first, and one line that says what to fix first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str  # one of catalogue.SEVERITIES
    title: str
    text: str
    impact: float | None = None  # the measured factor this cause costs here (ranks findings)
    cause: str = ""  # a few plain words for the verdict ("pageable h2d copies")
    lesson: bool = False  # true on every machine, not a fact about this one
    subject: str | None = None  # the benchmark quoted, for its ratio to a baseline machine
    defect: bool = False  # gapbench's own (its tracker's), not a fact about this machine


def costliest_first(f: Finding) -> float:
    """A sort key: the largest measured impact (a factor, or explain's saving) first; a finding
    without one last."""
    return -(f.impact or 0.0)


def fix_first(parts: Sequence[str], then: bool = False) -> str:
    """"Fix first: a; b; c." (with `then`, "Fix first: a; then b; c."): what to change first,
    each part a finding in words."""
    first, rest = parts[0], "; ".join(parts[1:])
    if rest:
        first += f"; {'then ' if then else ''}{rest}"
    return f"Fix first: {first}."
