"""Adopt results measured elsewhere as a baseline: a machine this checkout cannot run on (a lent
GPU), whose gapbench results files were brought back.

    ci/baseline NAME --adopt FILE... --commit SHA --how TEXT [--replace]

The files (one per family, and any full-size runs of some of them) become one baseline file,
NAME.json: their benchmarks merged, a name measured in more than one file kept from the first
file given that has it (each family's run repeats the `peak/` ceilings), the context of the first
file. A gapbench-probe file among them is kept beside it as NAME.framework-<framework>.json,
the framework side of the same machine (render pairs the two when both are given as the run).

Nothing is re-measured and nothing is estimated: the provenance says where each row came from,
how each file was made (--how, in the adopter's words: what the files cannot say, such as the
OS and where the libraries came from) and the commit it was built from (--commit: results files
from before gapbench recorded gapbench.commit do not carry it). Refused, with nothing written
(exit 1): files from more than one machine, a failed benchmark, repetitions spread beyond the
limit, no gapbench results file among them. Bad arguments (exit 2): a file that is not a
readable results file, a file given twice, a name that is already a baseline's (replacing one
takes --replace, and the provenance then says what it replaced).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from gapbench_report.cli.kit import UsageError
from gapbench_report.core import framework
from gapbench_report.inputs.files import read_bounded, write_atomic_together
from gapbench_report.inputs.results import (
    RESULTS_LIMIT_BYTES,
    Results,
    ResultsError,
    check_results,
    parse_json,
    read_text,
)

from gapbench_ci.baseline_folder import (
    LIBRARY_KEYS,
    NAME_PATTERN,
    SPREAD_LIMIT,
    Refused,
    capturing_into,
    check_run,
    readme_row,
    update_readme,
)

# A commit as git names it, whole: an abbreviated or full SHA-1 in lowercase hex.
COMMIT_PATTERN = re.compile(r"[0-9a-f]{7,40}")
# Context keys that describe one file's run, not the machine (the rest are doctor's facts).
RUN_KEYS = re.compile(r"^(finding|stability)\.|^gapbench\.(profile|seed|schema|commit|tree)$")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # tab and newline are whitespace, folded
SIDE = ".framework-"  # NAME.framework-<framework>.json: the probe's file beside NAME.json
KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
         (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))


def _label(entry: dict) -> str:
    return str(entry.get("run_name", entry.get("name")))


def merge(documents: list[tuple[str, dict]]) -> tuple[dict, list[dict]]:
    """One results document from several (file name, document) of one machine, and per file
    what it gave: its profile, date, the benchmarks kept and those already taken from an earlier
    file, and their repetitions (counted, not read from the entries' own field). Every entry of
    a benchmark (its repetitions, aggregates, error) comes from one file."""
    taken: set[str] = set()
    entries: list[dict] = []
    files = []
    for name, doc in documents:
        mine = {_label(e) for e in doc["benchmarks"]}
        fresh = mine - taken
        kept = [e for e in doc["benchmarks"] if _label(e) in fresh]
        entries += kept
        repetitions = Counter(_label(e) for e in kept
                              if e.get("run_type", "iteration") == "iteration")
        files.append({"file": name, "profile": doc["context"].get("gapbench.profile"),
                      "date": doc["context"].get("date"), "benchmarks": len(fresh),
                      "already_in_an_earlier_file": len(mine - fresh),
                      "repetitions": max(repetitions.values(), default=0)})
        taken |= mine
    context = dict(documents[0][1]["context"])
    profiles = list(dict.fromkeys(str(f["profile"]) for f in files))
    context["gapbench.profile"] = "+".join(profiles)  # "full+quick": what the rows were run at
    return {"context": context, "benchmarks": entries}, files


def adopted_provenance(name: str, command: str, how: str, commit: str, merged: Results,
                       files: list[dict], spread_summary: dict, when: datetime) -> dict:
    context = merged.context
    facts = {k: v for k, v in context.items() if "." in k and not RUN_KEYS.search(k)}
    return {
        "name": name,
        "adopted": True,  # measured elsewhere, not by this command
        "captured_at": min((str(f["date"]) for f in files if f["date"]), default=None),
        "adopted_at": when.isoformat(timespec="seconds"),
        "command": command,
        "how": how,
        "gapbench_commit": commit,
        "gapbench_commit_source": str(context.get("gapbench.commit") and "the files' context"
                                      or "stated by the adopter (the files do not record it)"),
        "gapbench_dirty": {"clean": False, "dirty": True}.get(str(context.get("gapbench.tree"))),
        "gapbench_version": context.get("gapbench.version"),
        "profile": context.get("gapbench.profile"),
        "repetitions": max(f["repetitions"] for f in files),
        "min_time_s": None,
        "random_interleaving": None,  # not recorded by the files
        "filter": None,
        "files": files,
        "spread": spread_summary,
        "libraries": {k: v for k, v in facts.items() if LIBRARY_KEYS.match(k)},
        "machine": facts,
        "machine_findings": [str(v) for k, v in context.items() if k.startswith("finding.")],
    }


def framework_contexts_line(context: dict) -> str:
    """"torch 2.11.0+cu130 (CUDA 13.0)": which framework the probe measured."""
    who = f"{context.get('framework.name', '?')} {context.get('framework.version', '')}".strip()
    cuda = context.get("framework.cuda_built")
    return f"{who} (CUDA {cuda})" if cuda else who


# ---- the arguments ---------------------------------------------------------------------------

def check_commit(commit: str | None) -> str:
    if commit is None:
        raise UsageError("--adopt needs --commit: the gapbench commit the files were built from "
                         "(7 to 40 lowercase hex digits)")
    if not COMMIT_PATTERN.fullmatch(commit):
        raise UsageError(f"--commit {commit!r} is not a commit SHA (7 to 40 lowercase hex "
                         "digits, as git rev-parse prints them)")
    return commit


def check_how(how: str | None) -> str:
    if how is None or not how.strip():
        raise UsageError("--adopt needs --how: how the files were made (machine, OS, build, "
                         "libraries, commands), in words the files cannot say")
    if CONTROL.search(how):
        raise UsageError("--how holds a control character: give it as plain text (it goes into "
                         "the provenance and the README's table)")
    return " ".join(how.split())


def read_files(paths: list[Path]) -> list[tuple[Path, dict, Results]]:
    """Each file's document and its check as a results file: regular files only (a FIFO, a
    device or a folder is no results file to copy into a baseline), each given once, by what it
    is (the same file through another path or a link) and by what it holds (a copy)."""
    seen: dict[tuple[int, int], Path] = {}
    digests: dict[str, Path] = {}
    read = []
    for path in paths:
        try:
            info = os.stat(path)
        except FileNotFoundError:
            raise ResultsError(f"{path}: no such file") from None
        except OSError as e:
            raise ResultsError(f"{path}: cannot read: {e.strerror or e}") from None
        if not stat.S_ISREG(info.st_mode):
            kind = next((k for test, k in KINDS if test(info.st_mode)), "not a regular file")
            raise ResultsError(f"{path}: is {kind}, not a results file")
        first = seen.get((info.st_dev, info.st_ino))
        if first is not None:
            raise UsageError(f"{path} is given twice: give each file once" if first == path else
                             f"{path} is {first} (the same file through another path or a "
                             "link): give each file once")
        seen[info.st_dev, info.st_ino] = path
        # Read once (within the results limit): its digest tells a copy, then its JSON.
        text = read_text(path, "results file", RESULTS_LIMIT_BYTES)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if digest in digests:
            raise UsageError(f"{path} holds the same bytes as {digests[digest]} (a copy): give "
                             "each file once")
        digests[digest] = path
        document = parse_json(path, text)
        read.append((path, document, check_results(path, document)))
    return read


# ---- the folder: what is there, what would be written ----------------------------------------

def folder_file(path: Path) -> bytes:
    """A file of the baselines folder, read within a results file's limit (a file that is not
    one is refused as OSError, which the readers below take as unreadable)."""
    return read_bounded(path, RESULTS_LIMIT_BYTES, "results file", pipes=False)


def owner(path: Path) -> str:
    """The baseline a file of the folder belongs to: its provenance's `baseline` (a framework
    side) or `name`; its stem where it has none or cannot be read."""
    try:
        prov = json.loads(folder_file(path)).get("provenance") or {}
        return str(prov.get("baseline") or prov.get("name") or path.stem)
    except (OSError, ValueError, AttributeError):
        return path.stem


def listed(out_dir: Path) -> set[str]:
    """The names the folder's README lists."""
    readme = out_dir / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.exists() else ""
    return set(re.findall(r"^\| \[`([^`]+)`\]", text, re.MULTILINE))


def replaced_files(name: str, stems: list[str], out_dir: Path, replace: bool) -> list[Path]:
    """The files of the folder that writing `stems` (NAME's and its sides') would replace or
    leave stale: NAME's own files. Refuses (UsageError) when NAME is already a baseline and
    `replace` is not given, and always when a file to be written is another baseline's (a name
    that differs only in case is the same file on a case-insensitive file system)."""
    present = {p.name.casefold(): p for p in out_dir.glob("*.json") if not p.name.startswith(".")}
    mine = [p for p in present.values() if owner(p) == name
            and (p.stem == name or p.stem.startswith(name + SIDE))]
    for stem in stems:
        other = present.get(f"{stem}.json".casefold())
        if other is not None and other not in mine:
            raise UsageError(f"{stem}.json would replace {other}, baseline {owner(other)}'s "
                             f"file: choose another name (--replace replaces only {name}'s own "
                             "files)")
    in_readme = name.casefold() in {n.casefold() for n in listed(out_dir)}
    if (mine or in_readme) and not replace:
        what = ", ".join(p.name for p in sorted(mine)) or "its README row"
        raise UsageError(f"{name} is already a baseline in {out_dir} ({what}); --adopt never "
                         f"replaces one: pass --replace to replace it")
    if replace and not (mine or in_readme):
        raise UsageError(f"--replace: there is no baseline {name} in {out_dir} to replace")
    return sorted(mine)


def replaced_record(path: Path) -> dict:
    """What the provenance keeps of a file it replaced (the file itself stays in git's
    history)."""
    try:
        data = json.loads(folder_file(path))
        prov, machine = data.get("provenance") or {}, (data.get("context") or {}).get("machine.id")
    except (OSError, ValueError, AttributeError):
        prov, machine = {}, None
    return {"file": path.name, "captured_at": prov.get("captured_at"),
            "adopted_at": prov.get("adopted_at"), "gapbench_commit": prov.get("gapbench_commit"),
            "machine.id": machine, "command": prov.get("command")}


# ---- adopting --------------------------------------------------------------------------------

def framework_stem(name: str, path: Path, results: Results) -> str:
    fw = str(results.context["framework.name"])
    if not NAME_PATTERN.fullmatch(fw):
        raise ResultsError(f"{path}: framework.name {fw!r} is no framework's name (letters, "
                           "digits, '.', '_' and '-')")
    return f"{name}{SIDE}{fw}"


def adopt(name: str, paths: list[Path], commit: str, how: str, out_dir: Path, command: str,
          limit: float = SPREAD_LIMIT, replace: bool = False) -> Path:
    """Writes NAME.json (and its framework sides) into out_dir and NAME's README row, as one
    set; every check comes first, so a refusal writes nothing."""
    loaded = read_files(paths)
    library = [(p, d, r) for p, d, r in loaded if not framework.is_framework_file(r)]
    probes = [(p, d, r) for p, d, r in loaded if framework.is_framework_file(r)]
    if not library:
        raise Refused("no gapbench results file among them (only gapbench-probe's)")
    machines = {str(r.context.get("machine.id")) for _, _, r in loaded}
    if len(machines) > 1:
        raise Refused(f"the files come from {len(machines)} machines "
                      f"({', '.join(sorted(machines))}); a baseline is one machine")
    sides = [framework_stem(name, p, r) for p, _, r in probes]
    if len(set(sides)) < len(sides):
        raise Refused("two gapbench-probe files of one framework: adopt one")
    document, files = merge([(p.name, d) for p, d, _ in library])
    target = out_dir / f"{name}.json"
    merged = check_results(target, document)
    summary = check_run(merged, limit)
    out_dir.mkdir(parents=True, exist_ok=True)
    with capturing_into(out_dir):  # the folder as it is now, until the files are in
        replaced = replaced_files(name, [name, *sides], out_dir, replace)
        when = datetime.now(timezone.utc)
        document["provenance"] = adopted_provenance(name, command, how, commit, merged, files,
                                                    summary, when)
        if replace:
            document["provenance"]["replaced"] = [replaced_record(p) for p in replaced]
        contents: dict[Path, str] = {}
        for (path, probe, results), stem in zip(probes, sides):
            side = {**probe, "provenance": {
                "name": stem, "adopted": True, "baseline": name, "command": command,
                "how": how, "gapbench_commit": commit,
                "captured_at": results.context.get("date"),
                "adopted_at": document["provenance"]["adopted_at"], "file": path.name,
                "framework": framework_contexts_line(results.context)}}
            contents[out_dir / f"{stem}.json"] = json.dumps(side, indent=1) + "\n"
        contents[target] = json.dumps(document, indent=1) + "\n"
        readme = out_dir / "README.md"
        text = readme.read_text(encoding="utf-8") if readme.exists() else ""
        contents[readme] = update_readme(text, name, readme_row(
            name, document["provenance"], sides=sides))
        write_atomic_together(contents)
        for stale in set(replaced) - set(contents):  # the old baseline's sides not given now
            stale.unlink()
    return target


def run(args, command: str) -> Path:
    """`ci/baseline NAME --adopt FILE...`: the parsed arguments and the command line; the
    baseline written."""
    commit = check_commit(args.commit)
    how = check_how(args.how)
    return adopt(args.name, args.adopt, commit, how, args.out_dir, command, args.spread_limit,
                 args.replace)
