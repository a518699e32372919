"""Smoke check of one gapbench results file, as the test suite runs it after each family.

    python -m gapbench_report.check.command results.json --family preprocess

Checks: names follow the scheme and belong to the family (or `peak`); CPU entries have times;
GPU entries ran when the context says the GPU is usable, and were otherwise skipped with the
reason; no entry failed. A CPU variant may be skipped only because this CPU lacks the
instructions its arithmetic needs (bf16 without AVX-512 BF16 or AMX), and only where the file's
own context agrees (oneDNN's instruction set has no bf16); a FLOP-peak row, because the CPU lacks
its instruction set (or the run's cap excludes it). In a framework file
(gapbench-probe's), a compiled-mode case may be skipped because the framework's compiler does not
work on this machine. Exit 0 when all hold, 1 when one does not, 2 for unusable input.
"""

from __future__ import annotations

import sys

from gapbench_report.cli import kit as commandline
from gapbench_report.core.labels import printable
from gapbench_report.inputs.results import SKIP_PREFIX, Entry, Results, load_results

PROG = "gapbench check"


def compiler_missing(results: Results, e: Entry) -> bool:
    """A framework's compiled-mode case skipped as its compiler does not work here (torch.compile
    without a C++ compiler): a fact about the machine, not a fault of the run."""
    compiler = results.context.get("framework.compiled_mode")
    return bool(compiler) and e.name.axis("mode") == "compiled" and \
        e.message.startswith(f"{SKIP_PREFIX}{compiler} does not work here: ")


# How gapbench words a skip for an instruction set the CPU lacks (kernels/onednn_isa.h).
CPU_LACKS_PREFIX = f"{SKIP_PREFIX}this CPU lacks "


def cpu_lacks_instructions(results: Results, e: Entry) -> bool:
    """A bf16 CPU variant skipped because oneDNN, as this run saw the CPU (after any
    DNNL_MAX_CPU_ISA cap), has no bf16 instructions; or a FLOP-peak row
    (`peak/flops/cpu/isa:<isa>/...`) skipped because the CPU lacks its instruction set or
    GAPBENCH_MAX_CPU_ISA caps it away: a fact about the machine, not a fault."""
    if not e.message.startswith(CPU_LACKS_PREFIX):
        return False
    if e.name.family == "peak" and e.name.variant == "flops":
        return True
    isa = results.context.get("onednn.isa")
    return e.name.axis("math") == "bf16" and \
        isinstance(isa, str) and "bf16" not in isa and "amx" not in isa


def problems(results: Results, family: str | None) -> list[str]:
    """Everything wrong with the file, one line each (empty when it passes)."""
    found = []
    runs = [e for e in results.entries if not e.is_aggregate]
    if not runs:
        return ["no benchmark entries"]
    gpu_usable = results.context["gpu.status"] == "ok"
    for e in runs:
        label = e.raw["name"]
        if family and e.name.family not in (family, "peak"):
            found.append(f"{label}: family {e.name.family!r}, expected {family!r}")
        if e.failed:
            found.append(f"{label}: failed: {e.message}")
        elif e.skipped:
            if len(e.message) <= len(SKIP_PREFIX):
                found.append(f"{label}: skipped without a reason")
            if compiler_missing(results, e) or cpu_lacks_instructions(results, e):
                continue
            if e.name.device == "cpu":
                found.append(f"{label}: a CPU variant was skipped: {e.message}")
            elif gpu_usable and not e.message.startswith(SKIP_PREFIX + "needs "):
                found.append(f"{label}: skipped although the GPU is usable: {e.message}")
        else:
            if e.name.device == "gpu" and not gpu_usable:
                status = results.context["gpu.status"]
                found.append(f"{label}: ran although gpu.status is {status!r}")
            if not (e.raw.get("real_time", 0) > 0 and e.raw.get("iterations", 0) > 0):
                found.append(f"{label}: no time recorded")
            for counter in ("bytes_per_second", "items_per_second"):
                if counter in e.raw and not e.raw[counter] > 0:
                    found.append(f"{label}: {counter} is {e.raw[counter]}")
    return found


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, __doc__, epilog="")
    p.add_argument("results", help="a gapbench results JSON file")
    p.add_argument("--family", help="every benchmark must belong to this family (or peak)")
    return p


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    results = load_results(args.results)
    found = problems(results, args.family)
    runs = [e for e in results.entries if not e.is_aggregate]
    skipped = sorted({e.message for e in runs if e.skipped})
    reasons = f" ({'; '.join(skipped)})" if skipped else ""
    print(printable(f"{args.results}: {len(runs)} runs, {sum(not e.skipped for e in runs)} "
                    f"timed, {sum(e.skipped for e in runs)} skipped{reasons}"))
    for line in found:
        print(f"  problem: {printable(line)}")
    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    """0 every check holds, 1 one does not, 2 unusable input (one line on stderr)."""
    return commandline.run(PROG, _run, argv)


if __name__ == "__main__":
    sys.exit(main())
