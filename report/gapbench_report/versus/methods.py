"""Whether two machines' rows are the same method: the method version each row's family and
variant had where it ran. A run records them (`gapbench.method.<key>`, from the methods table
the build holds its code to: cmake/gapbench_methods.cmake); a file made before gapbench recorded
them is read through the table's versions at the commit it was made at. Nothing here looks at
the code or runs a program, so the answer is the same wherever the report is installed.
versus/comparison.py refuses rows whose methods differ, quoting the reason the table gives, and
says beside a row whose method is unknown (docs/report.md#like-with-like-only)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gapbench_report.core.tables import METHOD_CHANGES, METHODS_AT_COMMIT

# + the family, family/variant/device, or a variant's rows of one axis: family/variant/device/a:v
METHOD_KEY = "gapbench.method."

SAME, CHANGED, UNKNOWN = "same", "changed", "unknown"
CHANGED_WORDS = "its method"  # how every CHANGED reason begins


@dataclass(frozen=True)
class Identity:
    """Whether rows ran the same method on both machines ("same", "changed", "unknown"), and why
    not, in words."""

    state: str
    words: str = ""


def keys_of(name: str, known: Iterable[str]) -> list[str]:
    """The keys that say a row's method: its family, its variant, and each known key of its
    variant with one axis the row's name has (`overhead/cublas/gpu/math:fp16`); of a family
    alone (the work two devices share), the family's."""
    parts = name.split("/")
    family, variant = parts[0], "/".join(parts[:3])
    if len(parts) < 3:
        return [family]
    return [family, variant] + sorted(
        k for k in known if k.startswith(variant + "/") and k[len(variant) + 1:] in parts[3:])


def versions(context: Mapping, commit: str) -> dict[str, str] | None:
    """Each key's method version on one machine: as its run recorded them, else the table's at
    its commit; None where neither says."""
    recorded = {k[len(METHOD_KEY):]: str(v) for k, v in context.items()
                if k.startswith(METHOD_KEY)}
    if recorded:
        return recorded
    for known, table in METHODS_AT_COMMIT.items():
        if commit and (known.startswith(commit) or commit.startswith(known)):
            return {k: str(v) for k, v in table.items()}
    return None


def version(table: Mapping[str, str], key: str) -> str:
    """A key's version: recorded or listed, else 1 (a key without changes is at its first)."""
    return table.get(key, "1")


def reasons(key: str, low: str, high: str) -> list[str]:
    """The table's reasons a key's method went from version `low` to `high`."""
    if not (low.isdigit() and high.isdigit()):
        return []
    return METHOD_CHANGES.get(key, [])[int(low) - 1:int(high) - 1]


def change_words(key: str, mine: str, theirs: str) -> str:
    """One key's method on both machines, when it differs, with the reason it changed."""
    undecided = [f"{side}, a build of code nobody had decided on (version {v})"
                 for side, v in (("here", mine), ("there", theirs)) if not v.isdigit()]
    if undecided:
        return (f"{CHANGED_WORDS} may have changed: {key}'s timed code differs from its "
                f"methods table's {'; '.join(undecided)}")
    low, high = sorted((mine, theirs), key=int)
    why = "; ".join(reasons(key, low, high))
    return (f"{CHANGED_WORDS} changed: {key} version {mine} here, {theirs} there"
            + (f" ({why})" if why else ""))


def identity(names: Iterable[str], here: tuple[Mapping, str],
             there: tuple[Mapping, str]) -> Identity:
    """The method of `names` (a row's name, or a family's) on both machines, from each side's
    (context, commit)."""
    return identity_of(names, (versions(*here), here[1]), (versions(*there), there[1]))


def identity_of(names: Iterable[str], here: tuple[Mapping | None, str],
                there: tuple[Mapping | None, str]) -> Identity:
    """The same from each side's (versions, commit), where a comparison reads each side's
    versions once for all its rows."""
    (mine, a), (theirs, b) = here, there
    if mine is not None and theirs is not None:
        known = {*mine, *theirs, *METHOD_CHANGES}
        keys = dict.fromkeys(k for name in names for k in keys_of(name, known))
        words = [change_words(key, version(mine, key), version(theirs, key))
                 for key in keys if version(mine, key) != version(theirs, key)]
        return Identity(CHANGED, "; ".join(words)) if words else Identity(SAME)
    if a and b and (a.startswith(b) or b.startswith(a)):
        return Identity(SAME)  # one commit's build on both sides
    unknown = [side for side, v in (("here", mine), ("there", theirs)) if v is None]
    where = "on either machine" if len(unknown) == 2 else unknown[0]
    return Identity(UNKNOWN, f"its method may differ: the run {where} records no method "
                             "versions, and its gapbench commit is not one the methods table "
                             "lists")
