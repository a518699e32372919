"""Adopt results measured elsewhere as a baseline: a machine this checkout cannot run on (a lent
GPU), whose gapbench results files were brought back.

    ci/baseline NAME --adopt FILE... --commit SHA --how TEXT

The files (one per family, and any full-size runs of some of them) become one baseline file,
NAME.json: their benchmarks merged, a name measured in more than one file kept from the first
file given that has it (each family's run repeats the `peak/` ceilings), the context of the first
file. A gapbench-probe file among them is kept beside it as NAME.framework-<framework>.json,
the framework side of the same machine (render pairs the two when both are given as the run).

Nothing is re-measured and nothing is estimated: the provenance says where each row came from,
how each file was made (--how, in the adopter's words: what the files cannot say, such as the
OS and where the libraries came from) and the commit it was built from (--commit: results files
from before gapbench recorded gapbench.commit do not carry it). Refused, with nothing written:
files from more than one machine, a failed benchmark, repetitions spread beyond the limit.
"""

from __future__ import annotations

import re
import shlex
from datetime import datetime, timezone
from pathlib import Path

from gapbench_report import framework
from gapbench_report.commandline import UsageError
from gapbench_report.files import write_atomic, write_json_atomic
from gapbench_report.results import Results, load_results

from gapbench_ci import baseline
from gapbench_ci.runner import read_document

COMMIT_PATTERN = re.compile(r"^[0-9a-f]{7,40}$")
# Context keys that describe one file's run, not the machine (the rest are doctor's facts).
RUN_KEYS = re.compile(r"^(finding|stability)\.|^gapbench\.(profile|seed|schema|commit|tree)$")


def merge(documents: list[tuple[str, dict]]) -> tuple[dict, list[dict]]:
    """One results document from several (file name, document) of one machine, and per file
    what it gave: its profile, date, the benchmarks kept and those already taken from an earlier
    file. Every entry of a benchmark (its repetitions, aggregates, error) comes from one file."""
    taken: set[str] = set()
    entries: list[dict] = []
    files = []
    for name, doc in documents:
        mine = {str(e.get("run_name", e.get("name"))) for e in doc["benchmarks"]}
        fresh = mine - taken
        entries += [e for e in doc["benchmarks"] if str(e.get("run_name", e.get("name"))) in fresh]
        repetitions = max((int(e.get("repetitions", 1)) for e in doc["benchmarks"]
                           if str(e.get("run_name", e.get("name"))) in fresh), default=0)
        files.append({"file": name, "profile": doc["context"].get("gapbench.profile"),
                      "date": doc["context"].get("date"), "benchmarks": len(fresh),
                      "already_in_an_earlier_file": len(mine - fresh),
                      "repetitions": repetitions})
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
        "captured_at": min(str(f["date"]) for f in files if f["date"]),
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
        "libraries": {k: v for k, v in facts.items() if baseline.LIBRARY_KEYS.match(k)},
        "machine": facts,
        "machine_findings": [str(v) for k, v in context.items() if k.startswith("finding.")],
    }


def framework_stem(name: str, results: Results) -> str:
    return f"{name}.framework-{results.context['framework.name']}"


def adopt(name: str, paths: list[Path], commit: str, how: str, out_dir: Path, command: str,
          limit: float = baseline.SPREAD_LIMIT) -> Path:
    loaded = [(p, load_results(p)) for p in paths]
    library = [(p, r) for p, r in loaded if not framework.is_framework_file(r)]
    probes = [(p, r) for p, r in loaded if framework.is_framework_file(r)]
    if not library:
        raise baseline.Refused("no gapbench results file among them (only gapbench-probe's)")
    machines = {str(r.context.get("machine.id")) for _, r in loaded}
    if len(machines) > 1:
        raise baseline.Refused(f"the files come from {len(machines)} machines "
                               f"({', '.join(sorted(machines))}); a baseline is one machine")
    names = [framework_stem(name, r) for _, r in probes]
    if len(set(names)) < len(names):
        raise baseline.Refused("two gapbench-probe files of one framework: adopt one")
    document, files = merge([(p.name, read_document(p)) for p, _ in library])
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{name}.json"
    staging = out_dir / f".{name}.adopt.json"  # checked as a results file before it is the baseline
    try:
        write_json_atomic(staging, document)
        merged = load_results(staging)
        summary = baseline.check_run(merged, limit)
    finally:
        staging.unlink(missing_ok=True)
    when = datetime.now(timezone.utc)
    document["provenance"] = adopted_provenance(name, command, how, commit, merged, files,
                                                summary, when)
    for (path, results), stem in zip(probes, names):
        side = read_document(path)
        side["provenance"] = {
            "name": stem, "adopted": True, "baseline": name, "command": command, "how": how,
            "gapbench_commit": commit, "captured_at": results.context.get("date"),
            "adopted_at": document["provenance"]["adopted_at"], "file": path.name,
            "framework": framework_contexts_line(results.context)}
        write_json_atomic(out_dir / f"{stem}.json", side)
    write_json_atomic(target, document)
    readme = out_dir / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.exists() else ""
    write_atomic(readme, baseline.update_readme(text, name, baseline.readme_row(
        name, document["provenance"], sides=names)))
    return target


def framework_contexts_line(context: dict) -> str:
    """"torch 2.11.0+cu130 (CUDA 13.0)": which framework the probe measured."""
    who = f"{context.get('framework.name', '?')} {context.get('framework.version', '')}".strip()
    cuda = context.get("framework.cuda_built")
    return f"{who} (CUDA {cuda})" if cuda else who


def run(args, argv: list[str]) -> int:
    """`ci/baseline NAME --adopt FILE...`: the parsed arguments; 0 written."""
    if not args.commit or not COMMIT_PATTERN.match(args.commit):
        raise UsageError("--adopt needs --commit: the gapbench commit the files were built from "
                         "(7 to 40 lowercase hex digits)")
    if not args.how or not args.how.strip():
        raise UsageError("--adopt needs --how: how the files were made (machine, OS, build, "
                         "libraries, commands), in words the files cannot say")
    target = adopt(args.name, args.adopt, args.commit, " ".join(args.how.split()), args.out_dir,
                   shlex.join([baseline.PROG, *argv]), args.spread_limit)
    print(target)
    return 0

