"""The machines a command is given, read once: the run (one machine's files, each results file
with its framework probe files beside it, or a folder of them) and the baselines (each another
machine, labelled here: a results file by its stem, a folder by its name, with the folders
above where two share a name). render reads its inputs here; the model, the comparison and the
framework split take the Baselines as they come."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gapbench_report.core.labels import printable
from gapbench_report.inputs.results import (
    Results,
    ResultsError,
    is_framework_file,
    load_results,
    machines_in_words,
    read_folder,
    require_one_machine,
)

# A machine's probe files beside its results file: NAME.json's are NAME.framework-<name>.json.
PROBE_BESIDE = "{stem}.framework-*.json"


def probe_files_beside(path: Path) -> list[Path]:
    """The probe files that belong to a results file NAME.json: NAME.framework-*.json beside it
    (a committed baseline and its probe); none for a probe file itself."""
    if ".framework-" in path.name:
        return []
    return sorted(p for p in path.parent.glob(PROBE_BESIDE.format(stem=glob_escape(path.stem)))
                  if p.is_file() and p != path)


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def merged_context(runs: Iterable[Results]) -> dict:
    out: dict = {}
    for results in runs:
        for k, v in results.context.items():
            out.setdefault(k, v)
    return out


def baselines_of(given: Sequence[Baseline | Results | Sequence[Results]]) -> list[Baseline]:
    """Each machine given, named: a Baseline as it is; a results file alone by its stem; the
    files of a run (a sequence) by their folder; where two share a name, with as many of the
    folders above as tell them apart (`d1/x/m` and `d2/x/m`), else numbered."""
    named = []
    for g in given:
        if isinstance(g, Baseline):
            named.append((g.label, g.files, g.place or g.files[0].path.parent.parent))
        elif isinstance(g, Results):
            named.append((g.path.stem, (g,), g.path.parent))
        else:
            files = tuple(g)
            named.append((files[0].path.parent.name, files, files[0].path.parent.parent))
    labels = unique_labels([(name, place) for name, _, place in named])
    return [Baseline(label, files, place)
            for label, (_, files, place) in zip(labels, named)]


def unique_labels(named: Sequence[tuple[str, Path]]) -> list[str]:
    """Each name, prefixed where it is not unique by the folders above it (`place`), as few as
    tell it apart; names that no folder tells apart (one file given twice) numbered."""
    labels = [name for name, _ in named]
    deepest = max((len(Path(os.path.abspath(place)).parts) for _, place in named), default=0)
    for depth in range(1, deepest + 1):
        shared = {label for label in labels if labels.count(label) > 1}
        if not shared:
            break
        labels = ["/".join([*Path(os.path.abspath(place)).parts[1:][-depth:], name])
                  if label in shared or labels.count(label) > 1 else label
                  for label, (name, place) in zip(labels, named)]
    seen: dict[str, int] = {}
    out = []
    for label, (name, _) in zip(labels, named):
        seen[label] = seen.get(label, 0) + 1
        out.append(printable(label if labels.count(label) == 1 else f"{name} ({seen[label]})"))
    return out


@dataclass(frozen=True)
class Baseline:
    """Another machine's run, as --baseline names it: one results file, or a folder of them."""

    label: str  # its name: the file's stem, or the folder's
    files: tuple[Results, ...]
    # The folder its label names a thing of (to tell two baselines of one label apart by the
    # folders above); None: the folder above its files' folder.
    place: Path | None = None

    @property
    def context(self) -> dict:
        return merged_context(self.files)


def read_inputs(results: Sequence[Path], baselines: Sequence[Path]
                ) -> tuple[list[Results], list[Baseline], list[str]]:
    """The run's files, the baselines, and notes on what was read: the run one machine, a
    baseline per machine (docs/report.md says how folders and framework files are taken)."""
    notes: list[str] = []
    runs: list[Results] = []
    for path in results:
        if path.is_dir():
            folder = read_folder(path)
            runs += folder.one_machine("the run").files
            if folder.not_results:
                notes.append(f"{path}: not read as results: {folder.not_read()}.")
        else:
            runs += with_probes(path)
    require_one_machine(runs, "the run's files",
                        "a run is one machine; give each other machine as a --baseline",
                        name_files=True)
    others: list[Baseline] = []
    for path in baselines:
        if not path.is_dir():
            found = with_probes(path)
            first = found[0]
            joins = next((i for i, b in enumerate(others) if is_framework_file(first)
                          and b.files[0].machine == first.machine), None)
            if joins is None:
                others.append(Baseline(first.path.stem, tuple(found), first.path.parent))
            else:
                b = others[joins]
                others[joins] = Baseline(b.label, (*b.files, *found), b.place)
            continue
        folder = read_folder(path)
        if folder.not_results:
            notes.append(f"{path}: not read as results: {folder.not_read()}.")
        if len(folder.machines) == 1:
            others.append(Baseline(path.name, folder.machines[0].files))
            continue
        notes.append(f"{path} holds the runs of {len(folder.machines)} machines; each is a "
                     f"baseline of its own ({machines_in_words(folder.machines)}).")
        others += [Baseline(m.name, m.files, path) for m in folder.machines]
    return unique(runs), others, notes


def with_probes(path: Path) -> list[Results]:
    """A results file and the probe files beside it (NAME.framework-*.json): one machine with
    its framework."""
    return [load_results(f) for f in [path, *probe_files_beside(path)]]


def unique(files: list[Results]) -> list[Results]:
    """Each file once: a probe file found beside its results file may be named as well."""
    return list({r.path.resolve(): r for r in files}.values())


def machine_run(path: Path) -> Baseline:
    """One machine's run as a baseline reads it: a results file with its probe files, or a
    folder of one machine's files."""
    _, baselines, _ = read_inputs([], [path])
    if len(baselines) != 1:
        raise ResultsError(f"{path}: holds {len(baselines)} machines' runs, not one")
    return baselines[0]


def read_run(paths: list[Path]) -> list[Results]:
    """The run's files as render reads them (read_inputs)."""
    return read_inputs(paths, [])[0]
