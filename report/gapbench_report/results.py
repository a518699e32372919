"""Loading a gapbench results file and parsing benchmark names: the JSON contract in one place.

A results file is Google Benchmark's JSON plus gapbench's run context. Every benchmark is named
<family>/<variant>/<cpu|gpu>/<axis>:<value>/... and Google Benchmark may append /real_time or
/manual_time and /threads:<n>. NAME_PATTERN is the one expression that parses them; nothing
guesses.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

NAME_PATTERN = re.compile(
    r"^(?P<family>[a-z][a-z0-9_]*)/(?P<variant>[a-z][a-z0-9_]*)/(?P<device>cpu|gpu)"
    r"(?P<axes>(?:/[a-z][a-z0-9_]*:[^/]+)*)"
    r"(?:/(?P<timing>real_time|manual_time))?"
    r"(?:/threads:(?P<threads>[0-9]+))?$"
)
SKIP_PREFIX = "skipped: "
REQUIRED_CONTEXT = ("gapbench.version", "gapbench.profile", "gapbench.seed", "machine.id",
                    "gpu.status")


class ResultsError(Exception):
    """The input is not a usable gapbench results file; str() is the one line to show."""


@dataclass(frozen=True)
class Name:
    family: str
    variant: str
    device: str
    axes: dict[str, str] = field(default_factory=dict)
    timing: str | None = None
    threads: int | None = None


def parse_name(name: str) -> Name:
    match = NAME_PATTERN.match(name)
    if match is None:
        raise ResultsError(f"benchmark name {name!r} does not follow "
                           "<family>/<variant>/<cpu|gpu>/<axis>:<value>/...")
    axes = {}
    for part in match["axes"].split("/")[1:]:
        key, value = part.split(":", 1)
        if key in axes:
            raise ResultsError(f"benchmark name {name!r} repeats the axis {key!r}")
        axes[key] = value
    threads = match["threads"]
    return Name(match["family"], match["variant"], match["device"], axes, match["timing"],
                int(threads) if threads else None)


@dataclass(frozen=True)
class Entry:
    """One row of "benchmarks": an iteration (one repetition) or an aggregate."""

    name: Name
    raw: dict

    @property
    def skipped(self) -> bool:
        return bool(self.raw.get("error_occurred")) and self.message.startswith(SKIP_PREFIX)

    @property
    def failed(self) -> bool:
        return bool(self.raw.get("error_occurred")) and not self.skipped

    @property
    def message(self) -> str:
        return str(self.raw.get("error_message", ""))

    @property
    def is_aggregate(self) -> bool:
        return self.raw.get("run_type") == "aggregate"


@dataclass(frozen=True)
class Results:
    path: Path
    context: dict
    entries: list[Entry]


def load_results(path: str | Path) -> Results:
    """Reads and checks one results file; raises ResultsError with one clear line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ResultsError(f"{path}: cannot read: {e}") from None
    if not text.strip():
        raise ResultsError(f"{path}: empty file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}: not valid JSON (truncated?): {e.msg} at line {e.lineno}") \
            from None
    if not isinstance(data, dict) or not isinstance(data.get("context"), dict) \
            or not isinstance(data.get("benchmarks"), list):
        raise ResultsError(f"{path}: not a Google Benchmark JSON file "
                           "(needs 'context' and 'benchmarks')")
    context = data["context"]
    missing = [k for k in REQUIRED_CONTEXT if k not in context]
    if missing:
        raise ResultsError(f"{path}: not a gapbench results file (context lacks "
                           f"{', '.join(missing)})")
    entries = []
    for i, raw in enumerate(data["benchmarks"]):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            raise ResultsError(f"{path}: benchmark #{i} has no name")
        try:
            name = parse_name(raw.get("run_name", raw["name"]))
        except ResultsError as e:
            raise ResultsError(f"{path}: {e}") from None
        entries.append(Entry(name, raw))
    return Results(path, context, entries)
