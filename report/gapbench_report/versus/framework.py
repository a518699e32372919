"""The user's own framework between two machines: each work both probes ran (gapbench-probe's
framework/<torch|tensorflow>/... rows), its difference split into what the hardware explains (the
ratio of gapbench's own library row for the same work on the two machines, judged by versus) and
what the software stack explains (the rest: the framework's ratio over the library's, put down to
the framework facts in which the two probes differ). Two probe runs of one machine with another
stack, against each other, answer "is it my install?": their library rows are the same.
The rules: docs/report.md#your-framework-on-two-machines."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gapbench_report.core import framework
from gapbench_report.core.formats import fmt_ratio_short
from gapbench_report.core.labels import axes_label, fmt_seconds, math_words
from gapbench_report.core.run_model import Run
from gapbench_report.inputs.results import FRAMEWORK_TF32_KEYS, MATH_AXIS, Benchmark
from gapbench_report.versus import comparison as versus

# The causes a verdict names before it counts the rest ("3 more explained otherwise").
VERDICT_ITEMS = 3


# ---- the framework's facts, by meaning --------------------------------------------------------

@dataclass(frozen=True)
class Fact:
    """A probe's fact that can explain a stack difference: its key, the device and ops whose
    rows it concerns ("" and () for all), and its words."""

    key: str
    device: str
    ops: tuple[str, ...]
    words: str


COMPILED_ROWS = "compiled rows"  # in Fact.ops: the rows of the framework's compiled mode alone
FACTS = (
    Fact("framework.version", "", (), "another {fw} version"),
    Fact("framework.cuda_built", "gpu", (), "{fw} built for another CUDA"),
    Fact("framework.cudnn_built", "gpu", (), "{fw} built with another cuDNN"),
    Fact("cuda.driver_version", "gpu", (), "another CUDA driver"),
    Fact("framework.tf32_matmul", "gpu", ("matmul", "dense"), "TF32 for matmuls by default"),
    Fact("framework.tf32_conv", "gpu", ("conv", "lstm"),
         "TF32 for convolutions and LSTMs by default"),
    Fact("framework.mixed_precision", "", (), "another mixed-precision policy"),
    Fact("framework.threads_intra_op", "cpu", (), "another number of threads per op"),
    Fact("framework.threads_inter_op", "cpu", (), "another number of threads between ops"),
    Fact("framework.onednn", "cpu", (),
         "TensorFlow's oneDNN optimisations set otherwise (TF_ENABLE_ONEDNN_OPTS)"),
    Fact("framework.compiled_mode", "", (COMPILED_ROWS,), "another compiler"),
    Fact("python.version", "", (), "another Python"),
)
ON_OFF = frozenset({"framework.tf32_matmul", "framework.tf32_conv", "framework.onednn",
                    "framework.mixed_precision"})
ON_WORDS = {"on": "on", "1": "on", "true": "on", "yes": "on", "enabled": "on",
            "off": "off", "0": "off", "false": "off", "no": "off", "disabled": "off",
            "float32": "off"}  # Keras' policy "float32": no mixed precision
THREADS = frozenset({"framework.threads_intra_op", "framework.threads_inter_op"})
NONE_WORD = "none"


def meaning(key: str, value: object) -> str:
    """What a fact says, whatever its wording: "off" and "off by default; the probe's GPU cases:
    ..." are both "off"; TF_ENABLE_ONEDNN_OPTS "0" is "off" and "unset (on by default)" "on";
    "2 (TensorFlow's choice)" is "2"; "none (CPU-only build)" is "none". "" where the probe
    could not tell (absent, "unknown: ...")."""
    text = "" if value is None else str(value).strip()
    if not text or text.lower().startswith(("unknown", "unavailable")):
        return ""
    if key in ON_OFF:
        head = text.split(";")[0].strip().lower()
        if head.startswith("unset"):
            return "on" if "on by default" in head else "off" if "off by default" in head \
                else "unset"
        return ON_WORDS.get(re.split(r"[\s(]", head)[0], head)
    if key in THREADS:
        found = re.match(r"\d+", text)
        return found[0] if found else text
    if text.lower().startswith(NONE_WORD):
        return NONE_WORD
    return text


@dataclass(frozen=True)
class FactDifference:
    """A fact whose meaning differs between the two probes."""

    fact: Fact
    here: str  # each side's value as recorded
    there: str

    def concerns(self, b: Benchmark) -> bool:
        p = b.parsed
        if self.fact.device and self.fact.device != p.device:
            return False
        compiled = p.axis(framework.COMPILED[0]) == framework.COMPILED[1]
        if COMPILED_ROWS in self.fact.ops:
            return compiled
        return not self.fact.ops or (p.axis("op") or "") in self.fact.ops


def fact_differences(here: Mapping, there: Mapping) -> list[FactDifference]:
    """The FACTS in which two probe contexts differ by meaning; one a probe could not tell is
    no difference."""
    found = []
    for fact in FACTS:
        mine, theirs = meaning(fact.key, here.get(fact.key)), meaning(fact.key, there.get(fact.key))
        if mine and theirs and mine != theirs:
            found.append(FactDifference(fact, str(here.get(fact.key)), str(there.get(fact.key))))
    return found


# ---- one work on both machines ----------------------------------------------------------------

@dataclass(frozen=True)
class Library:
    """gapbench's own row of the same work on both machines, as versus judged it: the hardware
    part. `why_not` says why there is none (then the framework's ratio stands alone)."""

    work: versus.Work | None = None
    why_not: str = ""

    @property
    def ratio(self) -> float | None:
        """The library's time here over there; None where its rows are missing or not
        comparable."""
        if self.work is None or self.work.pair.reasons:
            return None
        return self.work.pair.here.median / self.work.pair.there.median


@dataclass(frozen=True)
class Work:
    """A framework's work on both machines: the rows of each (the same op, shape, device, mode
    and math, whatever their names), or why they are not comparable."""

    name: str  # the framework: "torch"
    here: Benchmark
    there: Benchmark
    reasons: tuple[str, ...] = ()
    library: Library = Library()
    facts: tuple[FactDifference, ...] = ()  # those that concern this work, where the stack acts

    @property
    def ratio(self) -> float:
        """The framework's time here over there: above 1, slower here."""
        return self.here.median / self.there.median

    @property
    def differs(self) -> bool:
        return not self.reasons and versus.Pair(self.here, self.there).differs

    @property
    def hardware(self) -> float | None:
        return self.library.ratio

    @property
    def stack(self) -> float | None:
        """What the hardware leaves: the framework's ratio over the library's."""
        return None if self.hardware is None else self.ratio / self.hardware

    @property
    def cost(self) -> float:
        return max(self.ratio, 1 / self.ratio)

    @property
    def stack_acts(self) -> bool:
        return self.stack is not None and beyond_noise(self.stack)

    @property
    def words(self) -> str:
        return work_words(self.name, self.here)


def beyond_noise(ratio: float) -> bool:
    return abs(math.log(ratio)) > math.log(1 + versus.DIFFERS)


def work_words(name: str, b: Benchmark) -> str:
    """"torch GPU lstm (scope seq · batch 64 · …) in TF32": the work, its device and math."""
    p = b.parsed
    axes = {k: v for k, v in p.axes_but_math().items() if k != "op"}
    text = f"{name} {p.device.upper()} {p.axis('op') or ''}"
    text += f" ({axes_label(axes)})" if axes else ""
    return text if b.math == "fp32" else f"{text} in {math_words(b.math)}"


def framework_rows(run: Run, name: str) -> list[Benchmark]:
    return [b for b in run.benchmarks
            if b.parsed.family == framework.FAMILY and b.parsed.variant == name]


def work_key(b: Benchmark) -> tuple:
    """The same work in a framework: device, every axis but the math, and the math computed."""
    return b.parsed.device, frozenset(b.parsed.axes_but_math().items()), b.math


def math_reason(here: Benchmark, there: Benchmark, contexts: tuple[Mapping, Mapping],
                there_label: str) -> str:
    """Why two rows of one name computed otherwise, in words: each side's math, and where a
    probe from before the math axis let the framework's TF32 default decide it, that fact."""
    text = f"math: {math_words(here.math)} here, {math_words(there.math)} on {there_label}"
    notes = []
    for b, where, ctx in ((here, "here", contexts[0]), (there, f"on {there_label}", contexts[1])):
        key = FRAMEWORK_TF32_KEYS.get(b.parsed.axis("op") or "", "")
        if MATH_AXIS not in b.parsed.axes and b.math != "fp32" and key:
            notes.append(f"{where}, the probe predates the math axis and recorded {key} "
                         f"{ctx.get(key)}: its plain {b.parsed.axis('op')} ran "
                         f"{math_words(b.math)}")
    return text + (f" ({'; '.join(notes)})" if notes else "")


# ---- the comparison -------------------------------------------------------------------------

@dataclass(frozen=True)
class Probe:
    """One framework as one machine's probe ran it: its file's context and its rows."""

    name: str
    context: Mapping
    rows: tuple[Benchmark, ...]

    @property
    def version(self) -> str:
        return f"{self.name} {self.context.get('framework.version', '')}".strip()

    def ran_on(self, device: str) -> list[Benchmark]:
        return [b for b in self.rows if b.parsed.device == device and b.median]


@dataclass(frozen=True)
class FrameworkComparison:
    """One framework on this machine against another."""

    name: str
    here: Probe | None
    there: Probe | None
    works: tuple[Work, ...] = ()
    only_here: tuple[Benchmark, ...] = ()
    only_there: tuple[Benchmark, ...] = ()
    facts: tuple[FactDifference, ...] = ()
    gpu_missing: str = ""  # why one side ran no GPU work the other did, in words
    library_note: str = ""  # where the library rows come from, where not each machine's own

    @property
    def differing(self) -> list[Work]:
        return [w for w in self.works if w.differs]

    @property
    def slower(self) -> list[Work]:
        return sorted((w for w in self.differing if w.ratio > 1), key=lambda w: -w.cost)

    @property
    def faster(self) -> list[Work]:
        return sorted((w for w in self.differing if w.ratio < 1), key=lambda w: -w.cost)

    @property
    def not_comparable(self) -> list[Work]:
        return [w for w in self.works if w.reasons]

    @property
    def alike(self) -> list[Work]:
        return [w for w in self.works if not w.reasons and not w.differs]


@dataclass(frozen=True)
class Comparison:
    """Every framework of either machine's probes, against the other machine."""

    here_label: str
    there_label: str
    frameworks: tuple[FrameworkComparison, ...]
    there_folder: str = ""  # where the other machine's results are, for the probe's command


def probes(run: Run) -> dict[str, Probe]:
    contexts = framework.framework_contexts(run.files)
    return {name: Probe(name, ctx, tuple(framework_rows(run, name)))
            for name, ctx in contexts.items()}


def library_run(here: versus.Side, there: versus.Side) -> tuple[Run, str]:
    """The other machine's run for its framework's library twins: its own; where it has no
    gapbench results and is this machine (the same machine.id: another stack's probe run), this
    run's library rows, said so."""
    if there.run.library_files:
        return there.run, ""
    mine = {r.machine for r in here.run.library_files}
    theirs = {r.machine for r in there.run.framework_files}
    if mine and mine == theirs and "" not in mine:
        return (Run.of(list(here.run.library_files) + list(there.run.framework_files)),
                f"{there.label} is this machine (machine.id {next(iter(mine))}) with another "
                "stack: both sides' library rows are this run's, so the hardware part is 1 "
                "and the whole difference is the stack's")
    return there.run, (f"{there.label} has no gapbench results beside its probe file: the "
                       "hardware part cannot be measured (run gapbench there too)")


def library_work(twins: Sequence[framework.Pair | None], fw_math: str, here: versus.Side,
                 there: versus.Side, there_run: Run, library: versus.Comparison | None
                 ) -> Library:
    """The library row of the work on both machines: the twin of either side's framework row
    that both timed, in the framework's math; judged as the comparison judged it (or, for a
    family it leaves out, peak/'s GEMM, by the same rules)."""
    mine = {b.name: b for b in here.run.benchmarks if b.median}
    theirs = {b.name: b for b in there_run.benchmarks if b.median}
    found = [t.library for t in twins if t is not None]
    if not found:
        return Library(why_not="gapbench has no library row of this work")
    both = [b for b in found if b.name in mine and b.name in theirs]
    if not both:
        return Library(why_not=f"gapbench's {framework.library_words(found[0].parsed.variant)} "
                               "row of this work ran on one machine only")
    same_math = [b for b in both if mine[b.name].math == fw_math == theirs[b.name].math]
    if not same_math:
        return Library(why_not=f"gapbench's row of this work computes "
                               f"{math_words(mine[both[0].name].math)}, the framework "
                               f"{math_words(fw_math)}")
    name = same_math[0].name
    judged = next((w for w in (library.works if library else ())
                   if w.pair.here.name == name and not w.pair.across_devices), None)
    if judged is None:
        pair = versus.pair_of(mine[name], theirs[name],
                              versus.method_identity(here, there, mine[name]))
        explained = (versus.explain(pair, here, there) if not pair.reasons and pair.differs
                     else versus.Explanation())
        judged = versus.Work(pair, explained)
    why = f"gapbench's rows are not comparable: {'; '.join(judged.pair.reasons)}" \
        if judged.pair.reasons else ""
    return Library(judged, why)


def compare_framework(name: str, here: versus.Side, there: versus.Side, there_run: Run,
                      library: versus.Comparison | None, note: str) -> FrameworkComparison:
    mine, theirs = probes(here.run).get(name), probes(there_run).get(name)
    if mine is None or theirs is None:
        return FrameworkComparison(name, mine, theirs)
    twins_here = {p.framework.name: p for p in here.run.pairs}
    twins_there = {p.framework.name: p for p in there_run.pairs}
    facts = fact_differences(mine.context, theirs.context)
    by_work = {work_key(b): b for b in theirs.rows if b.median}
    by_name = {b.name: b for b in theirs.rows if b.median}
    works, paired = [], set()
    for b in (b for b in mine.rows if b.median):
        other = by_work.get(work_key(b))
        if other is not None:
            lib = library_work([twins_here.get(b.name), twins_there.get(other.name)], b.math,
                               here, there, there_run, library)
            work = Work(name, b, other, (), lib)
            if work.stack_acts:
                work = Work(name, b, other, (), lib, tuple(f for f in facts if f.concerns(b)))
            works.append(work)
            paired |= {other.name}
        elif b.name in by_name and work_key(by_name[b.name]) not in {work_key(r) for r in
                                                                       mine.rows if r.median}:
            other = by_name[b.name]
            works.append(Work(name, b, other, (math_reason(
                b, other, (mine.context, theirs.context), there.label),)))
            paired |= {other.name}
    done_here = {w.here.name for w in works}
    only_here = tuple(b for b in mine.rows if b.median and b.name not in done_here)
    only_there = tuple(b for b in theirs.rows if b.median and b.name not in paired)
    return FrameworkComparison(name, mine, theirs, tuple(works), only_here, only_there,
                               tuple(facts), gpu_missing(mine, theirs, facts, there.label), note)


def gpu_missing(mine: Probe, theirs: Probe, facts: Sequence[FactDifference], there: str) -> str:
    """Why one side's probe ran no GPU work where the other's did: a CPU-only build, a framework
    that does not see the GPU (its reason), else its GPU rows' skip reason."""
    for side, other, where, there_where in ((mine, theirs, "here", f"on {there}"),
                                            (theirs, mine, f"on {there}", "here")):
        if side.ran_on("gpu") or not other.ran_on("gpu"):
            continue
        count = len(other.ran_on("gpu"))
        cuda = next((f for f in facts if f.fact.key == "framework.cuda_built"), None)
        if cuda is not None and meaning(cuda.fact.key, side.context.get(cuda.fact.key)) \
                == NONE_WORD:
            why = (f"{side.version} is a CPU-only build (framework.cuda_built "
                   f"{side.context.get('framework.cuda_built')} {where}, "
                   f"{other.context.get('framework.cuda_built')} {there_where})")
        else:
            skip = next((b.skip_reason for b in side.rows
                         if b.parsed.device == "gpu" and b.skip_reason), "")
            seen = str(side.context.get("framework.gpu", ""))
            why = (f"{side.version} does not use the GPU: "
                   f"{skip or seen or 'its probe ran no GPU case (--device cpu)'}")
        return (f"{side.name} ran no GPU work {where}, {count} "
                f"{'work' if count == 1 else 'works'} {there_where}: {why}")
    return ""


def compare(here: versus.Side, there: versus.Side,
            library: versus.Comparison | None = None) -> Comparison:
    """Each framework either machine's probes ran, this machine against `there`; `library` is
    the comparison of their library rows (versus.compare), whose judgement of each library row
    the hardware part quotes."""
    there_run, note = library_run(here, there)
    names = list(dict.fromkeys([*probes(here.run), *probes(there_run)]))
    folders = {r.path.parent for r in there.run.files}
    folder = str(next(iter(folders))) if len(folders) == 1 and next(iter(folders)).name \
        == there.label else ""
    return Comparison(here.label, there.label,
                      tuple(compare_framework(n, here, there, there_run, library, note)
                            for n in names), folder)


# ---- in words -------------------------------------------------------------------------------

def facts_text(facts: Sequence[FactDifference], name: str, slower_here: bool, there: str
               ) -> str:
    """"another number of threads per op: 2 here, 1 on X", the slower side's value first."""
    parts = []
    for d in facts:
        words = d.fact.words.format(fw=name)
        sides = [(d.here, "here"), (d.there, f"on {there}")]
        slow, fast = sides if slower_here else sides[::-1]
        parts.append(f"{words}: {slow[0]} {slow[1]}, {fast[0]} {fast[1]}")
    return "; ".join(parts)


def hardware_text(w: Work, c: Comparison) -> str:
    """The hardware part in words: the library's ratio and what versus says of it."""
    judged = w.library.work
    if not judged.pair.differs:
        return f"{fmt_ratio_short(w.hardware)} (gapbench's own row, {library_name(judged)}, agrees)"
    return (f"{fmt_ratio_short(w.hardware)} (gapbench's own row, {library_name(judged)}: "
            f"{versus.reading(judged, c.here_label, c.there_label)})")


def library_name(judged: versus.Work) -> str:
    return framework.library_words(judged.pair.here.parsed.variant)


def stack_text(w: Work, c: Comparison) -> str:
    """The stack part in words: the facts that differ, the slower side's first; else
    unexplained (with what the framework times beyond the library's row, where it does)."""
    if not w.stack_acts:
        return f"{fmt_ratio_short(w.stack)} (the same within {versus.DIFFERS:.0%})"
    facts = facts_text(w.facts, w.name, w.stack > 1, c.there_label)
    if not facts:
        sides = framework.SIDES.get((w.here.parsed.axis("op") or "", w.here.parsed.device))
        facts = "unexplained by the recorded facts" + (f"; {sides}" if sides else "")
    return f"{fmt_ratio_short(w.stack)} ({facts})"


def reading(w: Work, c: Comparison) -> str:
    """"the hardware accounts for 1.10x (...); your stack for 1.72x (...)", or why it cannot be
    split."""
    if w.stack is None:
        return f"not split ({w.library.why_not}): the framework's ratio alone"
    return f"the hardware accounts for {hardware_text(w, c)}; your stack for {stack_text(w, c)}"


def how_long(w: Work, c: Comparison) -> str:
    """"takes 1.9x as long here", "takes 1.4x as long on X"."""
    if w.ratio >= 1:
        return f"takes {fmt_ratio_short(w.ratio)} as long here"
    return f"takes {fmt_ratio_short(1 / w.ratio)} as long on {c.there_label}"


def item(w: Work, c: Comparison) -> str:
    """"torch GPU lstm (...) takes 1.9x as long here: the hardware accounts for ..."."""
    return f"{w.words} {how_long(w, c)}: {reading(w, c)}"


def cause(w: Work) -> tuple:
    """What a work's difference is put down to, for the verdict's groups: the larger of its two
    parts, and that part's cause (the stack's facts; the library row's ceiling), empty where
    nothing recorded explains it; or that it cannot be split."""
    if w.stack is None:
        return ("not split",)
    if abs(math.log(w.stack)) >= abs(math.log(w.hardware)):
        return ("stack", tuple(d.fact.key for d in w.facts)) if w.facts else ()
    e = w.library.work.explanation
    return ("hardware", e.ceiling, e.other_key) if e.explained else ()


def cause_words(w: Work) -> str:
    """An explained work's cause alone: the stack's facts, or the hardware's ceiling."""
    if cause(w)[0] == "stack":
        return "; ".join(d.fact.words for d in w.facts)
    return versus.kind(w.library.work.explanation.ceiling).words


def short(w: Work, c: Comparison) -> str:
    split = f"; stack {fmt_ratio_short(w.stack)}" if w.stack is not None else ""
    return f"{w.words} ({how_long(w, c)[len('takes '):]}{split})"


def grouped(works: Sequence[Work], c: Comparison, items: int = VERDICT_ITEMS) -> list[str]:
    """One direction's works by cause, as versus.causes groups the library's: each cause with
    its costliest work and how many more it explains (the first `items` causes); then what
    nothing recorded explains; then what cannot be split."""
    groups: dict[tuple, list[Work]] = {}
    for w in works:
        groups.setdefault(cause(w), []).append(w)
    explained = [g for k, g in groups.items() if k and k != ("not split",)]
    if not items:  # each cause in words and counted, for a verdict that must be short
        counts = [(f"put down to {cause_words(g[0])}", len(g)) for g in explained] + [
            ("unexplained", len(groups.get((), []))),
            ("not split", len(groups.get(("not split",), [])))]
        return [", ".join(f"{n} {words}" for words, n in counts if n) + " (see the list)"]
    parts = []
    for group in explained[:items]:
        more = f"; and {len(group) - 1} more it explains" if len(group) > 1 else ""
        parts.append(item(group[0], c) + more)
    if rest := sum(len(g) for g in explained[items:]):
        parts.append(f"{rest} more explained otherwise (below)")
    for key, lead in (((), "unexplained by the recorded facts"),
                      (("not split",), "not split (no library row of the same work and math "
                                       "on both machines)")):
        if found := groups.get(key, []):
            shown = found[:items]
            more = f"; and {len(found) - len(shown)} more" if len(found) > len(shown) else ""
            parts.append(f"{lead}: " + "; ".join(short(w, c) for w in shown) + more)
    return parts


def probe_command(side: Probe, where: str) -> str:
    """The one command that makes the missing probe file, as the other side's was made."""
    devices = {b.parsed.device for b in side.rows if b.median}
    device = next(iter(devices)) if len(devices) == 1 else "all"
    profile = side.context.get("gapbench.profile", "quick")
    return (f"PYTHONPATH=probe python -m gapbench_probe --framework {side.name} --device "
            f"{device} --profile {profile} --out {where}")


# How many causes each direction names with their figures, from the fullest verdict to the
# shortest (0: each cause in words and counted): the slower direction keeps its figures longest.
VERDICT_DETAIL = ((VERDICT_ITEMS, VERDICT_ITEMS), (2, 2), (1, 1), (1, 0), (0, 0))


def verdict_lines(fc: FrameworkComparison, c: Comparison, level: int = 0
                  ) -> list[tuple[str, list[str]]]:
    """One framework's verdict, in the grouped form of the library works' (versus), within the
    library verdict's length where it can be: fewer causes given their figures, the faster
    direction's first (the one command that makes a missing probe file is given whole)."""
    name = fc.name
    if fc.here is None or fc.there is None:
        missing, side = ("here", fc.there) if fc.here is None else (f"on {c.there_label}",
                                                                    fc.here)
        where = "results/local" if fc.here is None else (
            c.there_folder or f"results/local (then keep it beside {c.there_label}.json as "
                              f"{c.there_label}.framework-{name}.json)")
        return [(f"Your {name} has a probe file on one machine only: none {missing}. Make it "
                 f"there with `{probe_command(side, where)}`.", [])]
    lines = []
    if fc.gpu_missing:
        lines.append((f"Your {fc.gpu_missing}.", []))
    there = versus.shortened(c.there_label)
    slower_items, faster_items = VERDICT_DETAIL[level]
    if fc.slower:
        lines.append((f"Your {name} is slower here than on {there}:",
                      grouped(fc.slower, c, slower_items)))
    if fc.faster:
        than = "" if fc.slower else f" than on {there}"
        lines.append((f"Your {name} is faster here{than}:",
                      grouped(fc.faster, c, faster_items if fc.slower else slower_items)))
    if not fc.differing:
        lines.append((f"Your {name} does the {len(fc.alike)} works both probes ran within "
                      f"{versus.DIFFERS:.0%} of {c.there_label}.", []))
    if fc.not_comparable:
        lines.append((f"{len(fc.not_comparable)} not comparable (another math: see the list).",
                      []))
    if level + 1 < len(VERDICT_DETAIL) and len(versus.verdict(lines)) > versus.VERDICT_CHARS:
        return verdict_lines(fc, c, level + 1)
    return versus.bounded(lines)


def verdict(fc: FrameworkComparison, c: Comparison) -> str:
    return " ".join(f"{lead} {'; '.join(items)}." if items else lead
                    for lead, items in verdict_lines(fc, c))


# ---- the page's rows ------------------------------------------------------------------------

WORK_HEADERS = ("work", "this run", "there", "here / there", "hardware (library here / there)",
                "stack (the rest)", "put down to")
FACT_HEADERS = ("fact", "this run", "there", "by meaning")


@dataclass(frozen=True)
class Section:
    """One framework against one machine, as the writers print it."""

    title: str
    verdict: list[tuple[str, list[str]]]
    findings: list[tuple[str, str]]  # (title, text) per differing work, the costliest first
    works: list[list[str]]  # WORK_HEADERS
    not_comparable: list[list[str]]  # versus's NOT_COMPARABLE_HEADERS
    facts: list[list[str]]  # FACT_HEADERS
    summary: str  # how many works agree, and which ran on one machine only


def put_down_to(w: Work, c: Comparison) -> str:
    """The table's last column: the part that acts, and why."""
    if w.stack is None:
        return f"not split: {w.library.why_not}"
    parts = []
    if beyond_noise(w.hardware):
        parts.append(f"hardware {hardware_text(w, c)}")
    if w.stack_acts:
        parts.append(f"stack {stack_text(w, c)}")
    return "; ".join(parts) or "neither part beyond the noise"


def section(fc: FrameworkComparison, c: Comparison) -> Section:
    title = f"Your {fc.name} against {c.there_label}"
    if fc.here is None or fc.there is None:
        return Section(title, verdict_lines(fc, c), [], [], [], [], "")
    findings = [(f"{w.words}: {fmt_ratio_short(w.ratio)} the time it takes on {c.there_label}",
                 f"{fmt_seconds(w.here.median)} here, {fmt_seconds(w.there.median)} on "
                 f"{c.there_label}: {reading(w, c)}.")
                for w in fc.slower + fc.faster]
    works = [[w.words, fmt_seconds(w.here.median), fmt_seconds(w.there.median),
              fmt_ratio_short(w.ratio), fmt_ratio_short(w.hardware) if w.hardware else "—",
              fmt_ratio_short(w.stack) if w.stack else "—", put_down_to(w, c)]
             for w in fc.slower + fc.faster + fc.alike]
    not_comparable = [[w.words, fmt_seconds(w.here.median), fmt_seconds(w.there.median),
                       "; ".join(w.reasons)] for w in fc.not_comparable]
    differing = {d.fact.key for d in fc.facts}
    compared = {f.key for f in FACTS}
    keys = list(dict.fromkeys([*(f.key for f in FACTS),
                               *(k for k in fc.here.context if k.startswith("framework."))]))
    facts = [[k, str(fc.here.context.get(k, "—")), str(fc.there.context.get(k, "—")),
              "differs" if k in differing else "the same" if k in compared else "—"]
             for k in keys if k in fc.here.context or k in fc.there.context]
    only = []
    if fc.only_here:
        only.append(f"{len(fc.only_here)} ran here only")
    if fc.only_there:
        only.append(f"{len(fc.only_there)} on {c.there_label} only")
    summary = (f"{len(fc.alike)} {'work agrees' if len(fc.alike) == 1 else 'works agree'} "
               f"within {versus.DIFFERS:.0%} (or within the spread of their repetitions); "
               f"{len(not_comparable)} not comparable" + (f"; {', '.join(only)}" if only else "")
               + (f". {fc.library_note}" if fc.library_note else "") + ".")
    return Section(title, verdict_lines(fc, c), findings, works, not_comparable, facts, summary)


def sections(comparisons: Iterable[Comparison]) -> list[tuple[str, list[Section]]]:
    """Per baseline (its label), a Section per framework either machine's probes ran."""
    return [(c.there_label, [section(fc, c) for fc in c.frameworks]) for c in comparisons]


# ---- comparison.json ----------------------------------------------------------------------

def row_json(b: Benchmark) -> dict:
    return {"name": b.name, "seconds": b.median, "math": b.math,
            "repetitions": len(b.samples)}


def work_json(w: Work, c: Comparison) -> dict:
    lib = w.library
    judged = lib.work
    return {
        "work": w.words, "this": row_json(w.here), "baseline": row_json(w.there),
        "time_ratio": w.ratio, "differs": w.differs, "comparable": not w.reasons,
        "not_comparable_because": list(w.reasons),
        "hardware": None if w.reasons else {
            "ratio": lib.ratio,
            "library": None if judged is None else {
                "this": row_json(judged.pair.here), "baseline": row_json(judged.pair.there),
                "comparable": not judged.pair.reasons,
                "ceiling": judged.explanation.ceiling,
                "explained": judged.explanation.how if judged.pair.differs else None,
                "reading": (versus.reading(judged, c.here_label, c.there_label)
                            if judged.pair.differs and not judged.pair.reasons else None)},
            "why_not": lib.why_not or None},
        "stack": None if w.stack is None else {
            "ratio": w.stack, "beyond_noise": w.stack_acts,
            "facts": [{"key": d.fact.key, "words": d.fact.words.format(fw=w.name),
                       "this": d.here, "baseline": d.there} for d in w.facts]},
        "reading": None if w.reasons else reading(w, c),
    }


def probe_json(p: Probe | None) -> dict | None:
    if p is None:
        return None
    return {"version": p.context.get("framework.version"),
            "facts": {k: v for k, v in p.context.items() if k.startswith("framework.")}}


def document(c: Comparison) -> list[dict]:
    """comparison.json's "framework" of one baseline: per framework, its verdict and works."""
    return [{
        "framework": fc.name, "verdict": verdict(fc, c),
        "this": probe_json(fc.here), "baseline": probe_json(fc.there),
        "facts_differing": [{"key": d.fact.key, "this": d.here, "baseline": d.there}
                            for d in fc.facts],
        "gpu_missing": fc.gpu_missing or None, "library_note": fc.library_note or None,
        "works": [work_json(w, c) for w in fc.slower + fc.faster + fc.not_comparable
                  + fc.alike],
        "only_this": [b.name for b in fc.only_here],
        "only_baseline": [b.name for b in fc.only_there],
    } for fc in c.frameworks]


def with_framework(doc: dict, comparisons: Sequence[Comparison]) -> dict:
    """versus.document's comparison.json with each baseline's framework comparison added."""
    for entry, c in zip(doc.get("comparisons", []), comparisons):
        entry["framework"] = document(c)
    return doc
