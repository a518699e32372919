"""`explain TRACE --against OTHER_TRACE`: the user's step on one machine set against the same step
on another. Each step is split into what it is made of (input waits, host gaps, ops by kind,
launches and syncs), the parts are set side by side, the ops matched by name (else by the
trace's structure), and each part that differs beyond the steps' spread is put down to what
explains it, in the comparison's order (versus/comparison.py): a firm ceiling of the two machines
that bounds that kind of work, else a stack fact that differs (the traces', the framework
probes'), else the work itself differing, else nothing. docs/explain.md#two-traces."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gapbench_report.core.formats import fmt_ratio_short
from gapbench_report.explain.prices import Prices, load_prices, ms
from gapbench_report.inputs.machines import probe_files_beside
from gapbench_report.inputs.results import FP32
from gapbench_report.inputs.traces import Profile, TraceError
from gapbench_report.versus import framework as stack
from gapbench_report.versus.ceilings import Figure, ceilings, gemm_key, kind

# An op's kind by its name (PyTorch's aten ops, their autograd functions and CUDA kernels;
# TensorFlow's op types), the first that matches; the rest are "other ops" (losses, reductions,
# the optimizer's bookkeeping), which no one ceiling bounds.
OP_KINDS = (
    ("rnn", "RNN ops", re.compile(r"lstm|gru|rnn", re.I)),
    ("gemm", "GEMM/conv ops", re.compile(
        r"matmul|addmm|bmm|aten::mm\b|mmbackward|linear|conv|gemm|einsum|cutlass|xmma", re.I)),
    ("copies", "copies", re.compile(r"copy|memcpy|memset|aten::to\b|_to_copy|contiguous|clone",
                                    re.I)),
    ("elementwise", "element-wise ops", re.compile(
        r"add|sub|mul|div|relu|sigmoid|tanh|exp|log|sqrt|pow|neg|abs|clamp|threshold|where|"
        r"elementwise|vectorized|bias|fill|zero|cast|maximum|minimum|select|dropout|gelu", re.I)),
)
OTHER_OPS = "other_ops"
# Each part in the order the page lists it, and its words.
PARTS = {"input": "input waits", "host_gaps": "host gaps",
         **{key: words for key, words, _ in OP_KINDS}, OTHER_OPS: "other ops",
         "launches": "kernel launches", "syncs": "syncs",
         "rest": "the rest of the host's time"}
# The ceilings that can bound each part, the likeliest first (versus/ceilings.py's keys): on the
# host the CPUs the process may use, then the host's SGEMM, its memory read and memcpy; on the
# device its float32 GEMM peak, its memory and PCIe bandwidth, a launch's and a sync's latency.
HOST_SGEMM = gemm_key("cpu", FP32)
HOST_BOUNDS = {"input": ["cpus"], "gemm": ["cpus", HOST_SGEMM], "rnn": ["cpus", HOST_SGEMM],
               "elementwise": ["host_read"], "copies": ["host_memcpy"]}
DEVICE_BOUNDS = {"input": ["cpus"], "gemm": [gemm_key("gpu", FP32)],
                 "rnn": [gemm_key("gpu", FP32)], "elementwise": ["gpu_memory"],
                 "copies": ["pcie"], "launches": ["launch"], "syncs": ["sync"]}
OP_PARTS = frozenset({key for key, _, _ in OP_KINDS} | {OTHER_OPS})
# A part differs when its ranges step by step on the two sides do not overlap, by more than this
# share of the longer step: a loaded machine's steps drift between two profiles of one run by more
# than either's own mean wanders (docs/explain.md#two-traces).
MIN_SHARE = 0.02
# The work differs when a kind's ops a step differ by more than this share.
COUNT_SHARE = 0.1
SHOWN_OPS = 12
SHOWN_PARTS = 3


# The probe's name for each trace's framework (its framework-<name>.json file).
PROBE_NAMES = {"PyTorch": "torch", "TensorFlow": "tensorflow"}
# The parts a probe's fact about some ops bears on (versus/framework.py's FACTS: their ops).
FACT_PARTS = {"matmul": {"gemm"}, "dense": {"gemm"}, "conv": {"gemm"}, "lstm": {"rnn"}}


def load_side(paths: Sequence[str]) -> Prices | None:
    """One machine's gapbench results, with the probe files beside a results file (a committed
    baseline's NAME.framework-*.json): their framework facts are the stack's."""
    given = [Path(p) for p in paths]
    return load_prices([str(p) for p in dict.fromkeys(
        [q for p in given for q in (p, *([] if p.is_dir() else probe_files_beside(p)))])])


def probe_facts(profile: Profile, prices: Prices | None) -> dict:
    """The framework probe's context for the trace's framework, where the results hold one."""
    probe = stack.probes(prices.run).get(PROBE_NAMES[profile.framework]) if prices else None
    return probe.context if probe else {}


def bears_on(fact: stack.Fact, part: str, device: bool) -> bool:
    """Whether a probe's fact can explain a part: its device is the trace's, and its ops are
    the part's (a fact of no ops bears on every op, launch and sync)."""
    if fact.device and fact.device != ("gpu" if device else "cpu"):
        return False
    if not fact.ops:
        return part in OP_PARTS or part in ("launches", "syncs")
    return any(part in FACT_PARTS.get(op, ()) for op in fact.ops)


def kind_of(name: str) -> str:
    return next((key for key, _, pattern in OP_KINDS if pattern.search(name)), OTHER_OPS)


def split(profile: Profile) -> dict[str, float]:
    """A step's seconds by part. On a trace with device events the op kinds are the device's
    kernels and copies (the host's ops only launch them), beside the host's launches and syncs;
    on a CPU trace they are the host's ops, and the rest is what neither the input, the gaps nor
    an op holds (Python between ops, gaps too short to count)."""
    parts = dict.fromkeys(PARTS, 0.0)
    parts["input"], parts["host_gaps"] = profile.input_seconds, profile.host_gap_seconds
    device = profile.has_device and bool(profile.kernel_seconds)
    for name, seconds in (profile.kernel_seconds if device else profile.op_seconds).items():
        parts[kind_of(name)] += seconds
    if device:
        parts["launches"] = profile.runtime_seconds.get("launches", 0.0)
        parts["syncs"] = profile.runtime_seconds.get("syncs", 0.0)
    else:
        parts["rest"] = max(0.0, profile.step_seconds - profile.input_seconds
                            - profile.host_gap_seconds - profile.busy_op_seconds)
    return parts


def ranges(profile: Profile) -> dict[str, tuple[float, float]]:
    """Each part's range step by step (lowest, highest), where the trace gives it step by step
    (the input, the gaps, the host's ops by kind, the rest of a PyTorch step); else its mean
    give or take half the range of the step lengths. "step": the step lengths' own."""
    lengths = profile.step_lengths or [profile.step_seconds]
    half = (max(lengths) - min(lengths)) / 2
    parts = split(profile)
    out = {key: (mean - half, mean + half) for key, mean in parts.items()}
    out["step"] = (min(lengths), max(lengths))
    if profile.step_inputs:
        out["input"] = (min(profile.step_inputs), max(profile.step_inputs))
    if profile.step_gaps:
        out["host_gaps"] = (min(profile.step_gaps), max(profile.step_gaps))
    if profile.step_ops and not (profile.has_device and profile.kernel_seconds):
        kinds = [dict.fromkeys(OP_PARTS, 0.0) for _ in profile.step_ops]
        for mine, ops in zip(kinds, profile.step_ops):
            for name, seconds in ops.items():
                mine[kind_of(name)] += seconds
        for key in OP_PARTS:
            values = [mine[key] for mine in kinds]
            out[key] = (min(values), max(values))
        if profile.framework == "PyTorch" and len(profile.step_inputs) == len(profile.step_ops) \
                == len(profile.step_gaps) == len(lengths):
            rest = [length - wait - gap - sum(ops.values()) for length, wait, gap, ops in zip(
                lengths, profile.step_inputs, profile.step_gaps, profile.step_ops)]
            out["rest"] = (min(rest), max(rest))
    return out


def apart(here: tuple[float, float], there: tuple[float, float], floor: float) -> bool:
    """Beyond the spread of the steps: the two ranges do not overlap, by more than the floor."""
    return here[0] - there[1] > floor or there[0] - here[1] > floor


@dataclass
class Why:
    """What explains a part's difference: "ceiling", "stack", "work" or "unexplained", in
    words, and for a ceiling the ratio it explains."""

    kind: str
    text: str
    explains: float | None = None


@dataclass
class Part:
    key: str
    here: float  # seconds a step
    there: float
    spread: tuple[tuple[float, float], tuple[float, float]]  # its ranges, here and there
    differs: bool
    why: Why | None = None

    @property
    def words(self) -> str:
        return PARTS[self.key]

    @property
    def ratio(self) -> float | None:
        return self.here / self.there if self.there > 0 else None

    def phrase(self) -> str:
        """The verdict's words for it: "input waits 12.6x, 73.8 ms here, 5.86 ms there: ..."."""
        if self.there <= 0:
            sizes = f"{ms(self.here)} here, none there"
        elif self.here <= 0:
            sizes = f"none here, {ms(self.there)} there"
        else:
            sizes = f"{fmt_ratio_short(self.ratio)}, {ms(self.here)} here, {ms(self.there)} there"
        return f"{self.words} {sizes}" + (f": {self.why.text}" if self.why else "")


@dataclass
class MatchedOp:
    name: str
    kind: str
    here: float  # seconds a step
    there: float
    count_here: float
    count_there: float
    there_name: str = ""  # matched by the trace's structure: the op's name there
    matched_by: str = ""  # "position" or "layers" where it was


def by_structure(here: Profile, there: Profile, added: list[str], removed: list[str]
                 ) -> dict[str, tuple[str, str]]:
    """Ops on one side only paired by the trace's structure, where names differ between library
    versions: each op here -> (its name there, how). TensorFlow's by the layers they run in (each
    op's paths); PyTorch's by position, where the first steps hold as many ops and each name
    here stands at its positions for one name there."""
    pairs: dict[str, tuple[str, str]] = {}
    if here.op_paths and there.op_paths:
        free = [t for t in removed if there.op_paths.get(t)]
        for h in added:
            layers = here.op_paths.get(h)
            found = next((t for t in free if layers and there.op_paths[t] == layers), None)
            if found:
                pairs[h] = (found, "layers")
                free.remove(found)
        return pairs
    if not here.op_order or len(here.op_order) != len(there.op_order):
        return pairs
    seen: dict[str, set[str]] = {}
    for h, t in zip(here.op_order, there.op_order):
        if h in added and t in removed:
            seen.setdefault(h, set()).add(t)
        elif h in added or t in removed:  # one of them beside a matched name: no pairing
            seen.setdefault(h, set()).add("")
    taken = set()
    for h, names in seen.items():
        if len(names) == 1 and "" not in names and (t := next(iter(names))) not in taken:
            pairs[h] = (t, "position")
            taken.add(t)
    return pairs


@dataclass
class Comparison:
    here: Profile
    there: Profile
    spread: tuple[tuple[float, float], tuple[float, float]]  # the step lengths' ranges
    parts: list[Part]
    ops: list[MatchedOp]  # matched by name, the largest difference first
    added: list[MatchedOp]  # here only
    removed: list[MatchedOp]  # there only
    verdict: str
    ceilings_of: dict[str, str] = field(default_factory=dict)  # "here"/"there": results' label

    @property
    def step_ratio(self) -> float:
        return self.here.step_seconds / self.there.step_seconds


def _ops(profile: Profile) -> tuple[dict[str, float], dict[str, float]]:
    if profile.has_device and profile.kernel_seconds:
        return profile.kernel_seconds, profile.kernel_counts
    return profile.op_seconds, profile.op_counts


def matched(here: Profile, there: Profile) -> list[MatchedOp]:
    """Every op (kernel, on a device trace) by name on either side, a step's time and count; of
    those on one side only, the pairs the traces' structure matches, as one."""
    (h, hc), (t, tc) = _ops(here), _ops(there)
    pairs = by_structure(here, there, [n for n in h if n not in t], [n for n in t if n not in h])
    paired = {name for name, _ in pairs.values()}
    out = []
    for name in dict.fromkeys([*h, *t]):
        if name in paired:
            continue
        there_name, how = pairs.get(name, (name, ""))
        out.append(MatchedOp(name, kind_of(name), h.get(name, 0.0), t.get(there_name, 0.0),
                             hc.get(name, 0.0), tc.get(there_name, 0.0),
                             there_name if how else "", how))
    return out


def _loader(p: Profile) -> str | None:
    if p.loader is None:
        return None
    if p.framework == "PyTorch":
        return ("DataLoader workers" if p.loader_parallel else "no DataLoader workers") + \
            f" ({p.loader})"
    return p.loader + (", prefetched" if p.loader_prefetch else ", no prefetch")


def stack_facts(p: Profile, part: str) -> dict[str, str]:
    """The stack facts the trace shows that bear on a part: the input pipeline for the input's
    waits; pageable or pinned host memory for the copies; the op library the ops' names show for
    the ops."""
    if part == "input":
        return {"the input pipeline": found} if (found := _loader(p)) else {}
    if part == "copies" and p.copies:  # pageable or pinned: what bounds a copy's GB/s
        return {"the copies' host memory": ", ".join(sorted({c.memory for c in p.copies}))}
    if part in OP_PARTS:
        return dict(p.stack)
    return {}


def ceiling_why(key: str, here: dict[str, Figure], there: dict[str, Figure], ratio: float
                ) -> Why | None:
    """A ceiling explains a part's ratio where both machines have it, it differs beyond both
    figures' spread (firm), and in the part's direction."""
    if key not in here or key not in there or here[key].value <= 0 or there[key].value <= 0:
        return None
    k = kind(key)
    slower = there[key].value / here[key].value if k.higher_is_faster else \
        here[key].value / there[key].value  # how much slower the ceiling makes this machine
    firm = max(slower, 1 / slower) > max(here[key].spread, there[key].spread)
    if not firm or (slower > 1) != (ratio > 1):
        return None
    return Why("ceiling", f"the machines' {k.words} explains {fmt_ratio_short(slower)}, "
                          f"{here[key].shown(key)} here, {there[key].shown(key)} there", slower)


def work_why(part: str, ops: list[MatchedOp], here: Profile, there: Profile) -> Why | None:
    """The work differs: another batch, or this kind's ops added, removed or more frequent."""
    if here.batch and there.batch and here.batch != there.batch:
        return Why("work", f"batch {here.batch} here, {there.batch} there")
    if part not in OP_PARTS:
        return None
    mine = [o for o in ops if o.kind == part]
    added = [o.name for o in mine if o.count_there == 0 and o.count_here > 0]
    removed = [o.name for o in mine if o.count_here == 0 and o.count_there > 0]
    if added or removed:
        said = [f"{len(added)} here only ({', '.join(added[:2])})" if added else "",
                f"{len(removed)} there only ({', '.join(removed[:2])})" if removed else ""]
        return Why("work", "the work differs: ops " + ", ".join(s for s in said if s))
    count_here, count_there = sum(o.count_here for o in mine), sum(o.count_there for o in mine)
    if count_there and abs(count_here - count_there) > COUNT_SHARE * count_there:
        return Why("work", f"the work differs: {count_here:.0f} ops a step here, "
                           f"{count_there:.0f} there")
    return None


def renamed(part: str, ops: list[MatchedOp]) -> str:
    """The ops of a part that the structure matched under other names, in words."""
    found = [o for o in ops if o.kind == part and o.matched_by]
    return "; the same work under other names, by the trace's " + ", ".join(
        f"{o.matched_by}: {o.name} here, {o.there_name} there" for o in found[:2]) if found else ""


def why(part: Part, ops: list[MatchedOp], here: Profile, there: Profile,
        ceilings_here: dict[str, Figure], ceilings_there: dict[str, Figure],
        probes: Sequence[stack.FactDifference] = ()) -> Why:
    device = here.has_device and there.has_device
    bounds = DEVICE_BOUNDS if device else HOST_BOUNDS
    ratio = part.ratio if part.ratio is not None else float("inf")
    for key in bounds.get(part.key, []):
        if found := ceiling_why(key, ceilings_here, ceilings_there, ratio):
            return found
    facts_here, facts_there = stack_facts(here, part.key), stack_facts(there, part.key)
    differing = [f"{name} differs, {facts_here.get(name, 'unknown')} here, "
                 f"{facts_there.get(name, 'unknown')} there"
                 for name in dict.fromkeys([*facts_here, *facts_there])
                 if facts_here.get(name) != facts_there.get(name)]
    differing += [f"{d.fact.words.format(fw=PROBE_NAMES[here.framework])}, {d.here} here, "
                  f"{d.there} there (gapbench-probe)" for d in probes
                  if bears_on(d.fact, part.key, device)]
    if differing:
        return Why("stack", "; ".join(differing))
    if found := work_why(part.key, ops, here, there):
        return found
    return Why("unexplained", "unexplained (no firm ceiling of the machines, no stack fact "
                              f"that differs, the same work{renamed(part.key, ops)})")


def refuse_mismatch(here: Profile, there: Profile) -> None:
    if here.framework != there.framework:
        raise TraceError(f"{here.path} is a {here.framework} trace and {there.path} a "
                         f"{there.framework} one: --against compares a framework's trace with "
                         "one of the same framework")
    for p in (here, there):
        if not p.steps or not p.step_seconds > 0:
            raise TraceError(f"{p.path}: no step to compare (no step of any length found)")


def compare(here: Profile, there: Profile, prices_here: Prices | None = None,
            prices_there: Prices | None = None) -> Comparison:
    refuse_mismatch(here, there)
    ceilings_here = ceilings(prices_here.run) if prices_here else {}
    ceilings_there = ceilings(prices_there.run) if prices_there else {}
    probes = stack.fact_differences(probe_facts(here, prices_here),
                                    probe_facts(there, prices_there))
    floor = MIN_SHARE * max(here.step_seconds, there.step_seconds)
    ranges_here, ranges_there = ranges(here), ranges(there)
    ops = sorted(matched(here, there), key=lambda o: -abs(o.here - o.there))
    split_here, split_there = split(here), split(there)
    parts = []
    for key in PARTS:
        h, t = split_here[key], split_there[key]
        if h <= 0 and t <= 0:
            continue
        spread = (ranges_here[key], ranges_there[key])
        part = Part(key, h, t, spread, apart(*spread, floor))
        if part.differs:
            part.why = why(part, ops, here, there, ceilings_here, ceilings_there, probes)
        parts.append(part)
    comparison = Comparison(
        here, there, (ranges_here["step"], ranges_there["step"]), parts, ops[:SHOWN_OPS],
        [o for o in ops if o.count_there == 0 and not o.matched_by],
        [o for o in ops if o.count_here == 0 and not o.matched_by], "",
        {side: p.label for side, p in (("here", prices_here), ("there", prices_there)) if p})
    comparison.verdict = verdict(comparison)
    return comparison


def verdict(c: Comparison) -> str:
    """The first line (docs/explain.md#two-traces)."""
    step_here, step_there = c.here.step_seconds, c.there.step_seconds
    differing = sorted((p for p in c.parts if p.differs), key=lambda p: -abs(p.here - p.there))
    (low, high), (low_there, high_there) = c.spread
    if not apart(*c.spread, 0.0) and not differing:
        return (f"No difference beyond the spread of the steps: {ms(step_here)} a step here "
                f"({ms(low)} to {ms(high)}), {ms(step_there)} there ({ms(low_there)} to "
                f"{ms(high_there)}).")
    head = (f"Your step takes {fmt_ratio_short(c.step_ratio)} as long here ({ms(step_here)} "
            f"against {ms(step_there)} there)")
    if not differing:
        return head + ": no one part of it differs beyond the spread of the steps."
    return head + ": " + "; ".join(p.phrase() for p in differing[:SHOWN_PARTS]) + "."
