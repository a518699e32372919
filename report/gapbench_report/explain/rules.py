"""explain's rules: the classic causes of a slow GPU in the user's own profiler trace (a
traces.Profile), each a rule that prices its fix with gapbench's measurements of the machine
(explain.prices.Prices), ranked, in one verdict. The rules: docs/explain.md."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from gapbench_report.core.findings import Finding, costliest_first, fix_first
from gapbench_report.core.labels import pct
from gapbench_report.explain.prices import Prices, machine_note, ms, priced
from gapbench_report.explain.words import words
from gapbench_report.inputs.traces import LOOP_ELEMENT_SHARE, Profile, merged

# ---- thresholds (each a named rule of thumb, with where it comes from) ------------------------

# TensorFlow's input-pipeline analyser: a step waiting 5-20% of its time for input is moderately
# input-bound, 20% or more highly.
INPUT_MODERATE, INPUT_HIGH = 0.05, 0.20
# Nsight Systems' GPU utilisation rule: a device busy under 50% of the time.
GPU_IDLE_SHARE = 0.5
# Of which at least this share of the step idles for no cause another finding names.
IDLE_UNEXPLAINED = 0.2
# Copies from pageable memory under this many bytes a step are latency, not bandwidth (a read of
# a loss value): pinning them saves nothing worth saying.
PAGEABLE_MIN_BYTES = 1 << 20
# A cause costing less than this share of the step is not worth a finding.
MIN_SHARE = 0.05
SMALL_MATMUL_MIN_SHARE = 0.01
# Launch-bound: at least this many kernels a step shorter than their launch, and this share.
LAUNCH_MIN_SHORT, LAUNCH_SHORT_SHARE = 100, 0.5
# Without this machine's crossover: matmuls under this n are judged small (gapbench's CPU and GPU
# cross between 128 and 512 on the machines it has measured; the lower end, to stay cautious).
DEFAULT_CROSSOVER = 128
# A burst of tiny host ops (traces.find_loops: no per-element loop by its ops, nor a model's
# layers, an update in place or a loop over the parameters) is a finding from this many ops a step
# and this share of the step: a Python loop over a batch's rows and elements makes thousands,
# where the clean traces' runs that pass as bursts make at most a few dozen (docs/explain.md,
# "Bursts of tiny ops").
BURST_MIN_OPS = 256
BURST_SHARE = 0.1
# Host time with no op running (traces.Profile.host_gap_seconds) is a finding from this share of
# the step: the clean traces' gaps of 100 us or more (the interpreter between layers, the
# scheduler) take at most 22% of their steps; a batch built from nested lists took half.
HOST_GAP_SHARE = 0.3
# On a TensorFlow trace, the longest one gap must also take this share of
# the step: an eager step of Keras layers leaves its own Python, and the loaded machine its
# pauses, between TensorFlow's calls in gaps of a few ms each (tf_cpu_clean_many_layers: 15 gaps
# of 4-14 ms, 36% of its 305 ms step, the longest 4.5%), where NumPy's work on the batch is one
# stretch (tf_cpu_numpy_rows: 85% of the step in one gap).
TF_GAP_LONGEST = 0.1
# TF1's Session.run this many times a step is a loop of calls (once per sample, say), whose
# overhead is a finding from MIN_SHARE of the step; a training step is one call, or a few.
SESSION_RUNS = 16
# A loaded machine is named where its stalls (traces: tiny ops at 10x their kind's median and
# 1 ms or more) add at least this share to the step.
LOADED_SHARE = 0.02
# Without shapes, layers this quick (the median forward matmul or convolution on the host), this
# many a step, are about the framework's cost per op: a batch (or layers) too small.
QUICK_LAYER_SECONDS, QUICK_LAYERS = 25e-6, 16
# A batch this small leaves the step's fixed costs (optimizer, dispatch, launches) to dominate.
SMALL_BATCH = 8
TENSOR_CORES_FROM = (7, 0)  # fp16 tensor cores from Volta; TF32 from (8, 0)


@dataclass(frozen=True)
class Explained(Finding):
    """A Finding of a trace: `impact` is the expected saving per step in seconds where
    priced, else the time lost; the rest says which."""

    lost: float = 0.0  # seconds per step the trace shows this cause costing
    saving: float | None = None  # seconds per step the fix is expected to save, where priced
    basis: str = ""  # the measurement (or the trace figure) the saving rests on
    family: str = ""  # the gapbench family that prices this fix
    evidence: dict = field(default_factory=dict)


def explained(rule: str, severity: str, title: str, text: str, lost: float,
              saving: float | None, basis: str, family: str, cause: str, **evidence
              ) -> Explained:
    # Ranked by the time the trace shows it costing, priced or not: the saving is shown beside
    # it, never used to reorder (a priced saving set against an unpriced cost would rank by
    # whether --results was given).
    return Explained(rule, severity, title, text, impact=lost,
                     cause=cause, lost=lost, saving=saving, basis=basis, family=family,
                     evidence=evidence)


NO_NAME = "(an op with no name)"


def op_label(name: object, prefix: str = "") -> str:
    """An op's name as the findings print it: a name that is empty or blank shown as such,
    never as nothing; `prefix` (aten::) left off."""
    text = str(name).removeprefix(prefix) if name is not None else ""
    return text if text.strip() else NO_NAME


# ---- the rules ---------------------------------------------------------------------------------

Rule = Callable[[Profile, "Prices | None"], list[Explained]]


def timed(p: Profile) -> bool:
    """Whether the trace's steps have a length to share out (a step of no or negative length, or
    of none known, has no shares: nothing is judged against it)."""
    return math.isfinite(p.step_seconds) and p.step_seconds > 0


def device_of(p: Profile) -> str:
    return "gpu" if p.has_device else "cpu"


def rule_input(p: Profile, prices: Prices | None) -> list[Explained]:
    """The step waiting for its input: TensorFlow's analyser's thresholds (5-20% moderately,
    20% and more highly input-bound). A pipeline with no workers or parallel producers is its own
    rule (input_no_prefetch): overlap is its fix; with workers, more of them or a cheaper
    producer."""
    if not timed(p) or p.input_seconds < INPUT_MODERATE * p.step_seconds:
        return []
    share = p.input_seconds / p.step_seconds
    degree = "highly" if share >= INPUT_HIGH else "moderately"
    serial = p.loader_parallel is False
    t_in, t_rest = p.input_seconds, p.step_seconds - p.input_seconds
    what = (f"{p.loader} (num_workers=0)" if p.loader and p.loader.startswith("_Single")
            else p.loader or "the input pipeline")
    text = (f"Each step waits {ms(t_in)} of its {ms(p.step_seconds)} for its input "
            f"({pct(share)}: {degree} input-bound by TensorFlow's measure), from {what}.")
    if p.has_device and p.idle_input_seconds:
        text += f" The GPU idles {ms(p.idle_input_seconds)} of it."
    if p.input_verdict:
        text += f" TensorFlow's analyser: \"{p.input_verdict}\""
    fix = (words(p).more_producers if not serial else words(p).overlap_generator
           if p.loader and "generator" in p.loader else words(p).overlap_input)
    price = prices.overlapped_input(device_of(p), t_in, t_rest, p.step_seconds,
                                    p.has_device) if prices else None
    saving, basis = priced(price, "the time the step waits for input (what overlap can hide at "
                                  "most)" + ("; not priced: these results have no pipeline/ rows "
                                             "(the prefetch and parallel pipelines): gapbench's "
                                             "pipeline family, run on this machine, would price "
                                             "it" if prices else ""))
    if price:
        workers = price.workers
        fix += (f" Measured here, with {workers} producer{'s' if workers > 1 else ''} your step "
                f"would take about {ms(price.step)} instead of {ms(p.step_seconds)}"
                + (f" (this machine's {price.cores} cores bound it: more workers cannot help)"
                   if price.limit == "cores" else "") + ".")
    rule = "input_no_prefetch" if serial else "input_bound"
    title = ("The step waits for an input pipeline without prefetch or workers" if serial
             else "The step waits for its input")
    # A pipeline that already overlaps and runs in parallel, moderately input-bound, is of note:
    # no change of its own leads the page (tf.data's clean pipelines wait 5% and more).
    severity = "warning" if share >= INPUT_HIGH or serial else "info"
    return [explained(rule, severity, title,
                      f"{text} {fix}", t_in, saving, basis, "pipeline",
                      "input pipeline without prefetch" if serial else "waiting for input",
                      input_seconds=t_in, share=share, loader=p.loader,
                      parallel=p.loader_parallel)]


def rule_gpu_idle(p: Profile, prices: Prices | None) -> list[Explained]:
    """The GPU idle under Nsight Systems' 50% utilisation rule, beyond what the other findings
    explain (input, synchronisation, launches): the host's own time between launches."""
    if not p.has_device or not timed(p):
        return []
    idle = p.gpu_idle_seconds
    # HTA's kernel wait (gaps of under 30 us between kernels) is launch overhead, not the host's
    # other work; of its host wait, the input pipeline's and the syncs' share are other findings'.
    explained_by = {"input pipeline": p.idle_input_seconds, "synchronisation":
                    p.sync_bubble_seconds, "kernel wait": p.idle_split.get("kernel_wait", 0.0)}
    rest = max(0.0, idle - sum(explained_by.values()))
    if idle < GPU_IDLE_SHARE * p.step_seconds or rest < IDLE_UNEXPLAINED * p.step_seconds:
        return []
    split = ", ".join(f"{k.replace('_', ' ')} {ms(v)}" for k, v in p.idle_split.items() if v)
    parts = ", ".join(f"{k} {ms(v)}" for k, v in explained_by.items() if v)
    text = (f"The GPU idles {ms(idle)} of each {ms(p.step_seconds)} step "
            f"({pct(idle / p.step_seconds)}; HolisticTraceAnalysis splits it: {split or 'n/a'})."
            + (f" Of it, {parts} are the other findings'." if parts else "")
            + f" The remaining {ms(rest)} the GPU waits for the host: Python and framework work "
            "between launches. Move work off the step's critical path (logging, metrics, "
            f"checkpoints), batch more per launch, or capture the step ({words(p).compile_step}, "
            "CUDA graphs).")
    basis = "the GPU's idle time in the trace (no gapbench figure prices Python's own time)"
    floor = prices.launch("launch") if prices else None
    if floor:
        basis += f"; a kernel launch costs {ms(floor.median)} here ({floor.name})"
    return [explained("gpu_idle", "warning", "The GPU waits for the host", text, rest, None,
                      basis, "overhead", "GPU idle waiting for the host", idle_seconds=idle,
                      idle_split=p.idle_split, unexplained_seconds=rest)]


def rule_pageable(p: Profile, prices: Prices | None) -> list[Explained]:
    """Host-device copies from pageable memory: the driver stages them through its own pinned
    buffer, at a fraction of the link's speed, and they block the host."""
    found = []
    for c in p.copies:
        if c.memory != "pageable" or c.bytes < PAGEABLE_MIN_BYTES or not c.seconds:
            continue
        direction = c.direction.upper()
        mb = c.bytes / 1e6
        text = (f"{c.count:g} {direction} cop{'ies' if c.count != 1 else 'y'} a step from "
                f"pageable memory move {mb:.0f} MB in {ms(c.seconds)} ({c.gbps:.1f} GB/s).")
        price = prices.pinned_copies(c.direction, c.bytes, c.count, c.seconds) if prices \
            else None
        saving, basis = priced(price, "the pageable copies' time in the trace")
        if price:
            text += (f" Pinned copies ran at {price.pinned / 1e9:.1f} GB/s against "
                     f"{price.pageable / 1e9:.1f} pageable here: your {mb:.0f} MB/step of "
                     f"pageable {direction} would take {ms(price.expected)} instead of "
                     f"{ms(c.seconds)}.")
        text += (" Pin the host buffers: DataLoader(pin_memory=True) and "
                 ".to(device, non_blocking=True), or a pinned staging tensor (pin_memory()).")
        found.append(explained(
            "pageable_copies", "warning", f"{direction} copies from pageable memory", text,
            c.seconds, saving, basis, "transfer", f"pageable {direction} copies",
            bytes=c.bytes, seconds=c.seconds, gbps=c.gbps, count=c.count))
    return found


def rule_sync(p: Profile, prices: Prices | None) -> list[Explained]:
    """Synchronising calls and device-to-host reads inside the step: on a GPU each drains the
    queue, and the GPU idles until the host enqueues again. In a trace without a device, a loop
    of reads (.item() or bool(tensor) per element: a per-element loop that reads an element in
    each of its iterations) is the same habit, paid there as host time: the loop's, which
    per_element_loop also names."""
    reading = [lp for lp in p.loops if lp.reads >= LOOP_ELEMENT_SHARE * lp.ops]
    if p.has_device:
        calls, lost = p.sync_calls, p.sync_bubble_seconds
    else:
        calls, lost = sum(lp.reads for lp in reading), sum(lp.seconds for lp in reading)
    if not calls or not timed(p) or lost < MIN_SHARE * p.step_seconds:
        return []
    what = ", ".join(map(op_label, p.sync_examples)) or "synchronising calls"
    if p.has_device:
        text = (f"{calls:g} synchronising call{'s' if calls != 1 else ''} a step ({what}): after "
                f"each the GPU idles until the host enqueues again, {ms(lost)} a step.")
    else:
        text = (f"{calls:.0f} device-to-host reads a step ({what}), in a per-element loop of "
                f"{sum(lp.ops for lp in reading):.0f} ops that takes {ms(lost)}; on a GPU each "
                "read also synchronises, draining its queue.")
    text += (" Keep values on the device (accumulate metrics as tensors, read them once per "
             "epoch or every N steps), and drop explicit synchronize() calls from the loop.")
    price = prices.fewer_syncs(calls, lost) if prices else None
    saving, basis = priced(price, (
        "the trace's time after the syncs" if p.has_device else "the reads' loop in the trace")
        + ("; not priced: these results have no synchronisation's cost (overhead/launch/gpu/"
           "what:sync, measured only on a machine with a GPU): gapbench's results of the GPU "
           "machine the job would run on would price it" if prices else ""))
    return [explained("sync_calls", "warning", "Synchronising calls inside the step", text, lost,
                      saving, basis, "overhead", "synchronising reads inside the step",
                      calls=calls, reads=p.reads, seconds=lost)]


def rule_per_element(p: Profile, prices: Prices | None) -> list[Explained]:
    """A Python loop over a tensor's elements: runs of tiny host ops, enough of them on one
    element each (a read, an index, or 0-d and one-element inputs where the trace has shapes)."""
    loop = p.loop()
    if not loop or not timed(p) or loop.seconds < MIN_SHARE * p.step_seconds:
        return []
    in_ops = merged([lp for lp in p.loops if lp.ops])
    in_python = merged([lp for lp in p.loops if not lp.ops])
    parts = []
    if in_ops:
        parts.append(f"{in_ops.ops:.0f} tiny ops a step, {in_ops.elements:.0f} of them on one "
                     f"element (mostly {op_label(in_ops.example)}), {ms(in_ops.seconds)}")
    if in_python:
        values = f"{in_python.elements:,.0f} " if in_python.elements else ""
        parts.append(f"Python's own work on the {values}values of tensor.tolist(), with no "
                     f"framework op running, {ms(in_python.seconds)}")
    together = f"; together {ms(loop.seconds)}" if len(parts) > 1 else ""
    fix = (f"Write it as whole-tensor operations ({words(p).row_scaling})."
           if loop.what != "samples" else
           "Compute the loss of the whole batch at once: F.cross_entropy(logits, y, "
           "reduction='none') gives each sample's loss in one op; weight them, then .mean().")
    text = (f"A per-element Python loop: {' and '.join(parts)}{together} of the "
            f"{ms(p.step_seconds)} step ({pct(loop.seconds / p.step_seconds)}): "
            f"{over(p, loop)}. Each iteration pays the interpreter, and each op the framework's "
            f"dispatch (on a GPU, a launch), for one element's or sample's work. {fix}")
    saving, basis = vectorized_saving(p, prices, loop.seconds, "the loop's time in the trace")
    return [explained("per_element_loop", "warning", "A per-element Python loop", text,
                      loop.seconds, saving, basis, "preprocess", "per-element Python loop",
                      ops=loop.ops, seconds=loop.seconds, confidence=loop.confidence)]


def vectorized_saving(p: Profile, prices: Prices | None, seconds: float, unpriced: str
                      ) -> tuple[float | None, str]:
    """(saving, basis) of writing `seconds` a step of a Python loop as whole-tensor operations:
    priced by gapbench's element-wise loops against one vectorized pass on this device, else
    (None, `unpriced`)."""
    return priced(prices.vectorized(device_of(p), seconds) if prices else None, unpriced)


def loops_over(p: Profile, loop) -> str:
    """What a loop is over (traces.Loop.confidence), as the findings say it."""
    return {"elements": "over elements (the trace's shapes, or its reads of one value each, show "
                        "them)",
            "rows": "over rows or small tensors (the trace's shapes show its ops taking more "
                    "than one element each)",
            "unknown": "over elements or over rows (this trace has no input shapes to tell "
                       f"which; {words(p).no_shapes})"}[loop.confidence]


def over(p: Profile, loop) -> str:
    return (f"a loop {loops_over(p, loop)}" if loop.what != "samples" else
            "a loop over the batch's samples, a loss computed for each (its forward and its "
            "backward)")


def rule_op_burst(p: Profile, prices: Prices | None) -> list[Explained]:
    """A burst of tiny host ops that no per-element loop, model, update in place or loop over the
    parameters explains (traces.find_loops): a Python loop whose ops the trace cannot show to be
    on one element each (without shapes, arithmetic on elements got by iterating; with them, a
    loop over rows). Its fix is the per-element loop's, whatever each op takes: whole-tensor
    operations."""
    burst = p.burst()
    if not burst or not timed(p) or burst.ops < BURST_MIN_OPS or \
            burst.seconds < BURST_SHARE * p.step_seconds:
        return []
    top = sorted(burst.names.items(), key=lambda kv: -kv[1])[:4]
    named = ", ".join(f"{op_label(n, 'aten::')} {c:.0f}" for n, c in top)
    text = (f"A burst of {burst.ops:,.0f} tiny host ops a step (most: {named}) runs back to back, "
            f"{ms(burst.seconds)} of the {ms(p.step_seconds)} step "
            f"({pct(burst.seconds / p.step_seconds)}), outside the model's layers, autograd and "
            f"the optimizer: a Python loop {loops_over(p, burst)}. Each iteration pays "
            "the interpreter, and each op the framework's dispatch (on a GPU, a launch), for a few "
            "values' work. Write it as whole-tensor operations on the batch (a per-row min-max "
            f"scaling, for example, is {words(p).row_min_max}), or {words(p).off_the_step}.")
    saving, basis = vectorized_saving(p, prices, burst.seconds, "the burst's time in the trace")
    return [explained("op_burst", "warning", "A burst of tiny host ops (a Python loop)", text,
                      burst.seconds, saving, basis, "preprocess",
                      f"a Python loop of {burst.ops:,.0f} tiny ops", ops=burst.ops,
                      seconds=burst.seconds, confidence=burst.confidence,
                      top_ops=dict(top))]


def rule_timestep_loop(p: Profile, prices: Prices | None) -> list[Explained]:
    """A model's loop over time steps in Python (traces: an index and a layer's matmul or a cell
    each iteration, or a library cell called once per step): each step's ops are dispatched (on
    a GPU, launched) one by one. Its fix is no vectorised formula (each step needs the last one's
    state) but the library's fused RNN, a compiled step or a graph replay."""
    loop = p.timestep()
    if not loop or not timed(p) or loop.seconds < MIN_SHARE * p.step_seconds:
        return []
    top = sorted(loop.names.items(), key=lambda kv: -kv[1])[:4]
    named = ", ".join(f"{op_label(n, 'aten::').removeprefix(AUTOGRAD_PREFIX)} {c:.0f}"
                      for n, c in top)
    text = (f"A model's loop over time steps in Python: {loop.ops:,.0f} ops a step (most: "
            f"{named}), {ms(loop.seconds)} of the {ms(p.step_seconds)} step "
            f"({pct(loop.seconds / p.step_seconds)}): each time step picks its input (x[:, t]) "
            "and calls the cell's layers, one small op at a time, each paying the framework's "
            "dispatch (on a GPU, a launch). A recurrence cannot be written as one whole-tensor "
            f"formula (each step needs the last one's state): run it with {words(p).fused_rnn}, "
            f"compile the step ({words(p).compile_step}), or on a GPU replay it as a CUDA "
            "graph.")
    basis = ("the loop's time in the trace (no gapbench family measures a fused RNN against a "
             "stepped one: the lstm family's rows would, where they run)")
    return [explained("timestep_loop", "warning", "A model's loop over time steps in Python",
                      text, loop.seconds, None, basis, "lstm",
                      f"a loop over time steps of {loop.ops:,.0f} ops", ops=loop.ops,
                      seconds=loop.seconds, top_ops=dict(top))]


def rule_host_gap(p: Profile, prices: Prices | None) -> list[Explained]:
    """Host time in which no framework op runs, in the step (outside the input's spans, torch.
    optim's and the loops' runs): Python's own work, which no op of the trace shows: building a
    tensor from nested lists, NumPy, I/O, logging."""
    # On a trace with a device, the host's own time is what the GPU waits for: gpu_idle's.
    if p.has_device or not timed(p) or p.host_gap_seconds < HOST_GAP_SHARE * p.step_seconds:
        return []
    if p.framework == "TensorFlow" and p.host_gap_largest < TF_GAP_LONGEST * p.step_seconds:
        return []  # eager Keras' own Python between its calls, and the loaded machine's pauses
    share = p.host_gap_seconds / p.step_seconds
    before, after = p.host_gap_between or ("Python", "Python")
    where = f"mostly between {op_label(before)} and {op_label(after)}"
    if p.host_gap_from_python >= 0.5 * p.host_gap_seconds:
        what = (f"{ms(p.host_gap_from_python)} of it inside torch.tensor(), between its "
                f"{op_label(before)} and its {op_label(after)}: a tensor built from Python data "
                "(nested lists) element by element.")
        fix = ("Build the batch once as an array or a tensor (np.asarray, then torch.from_numpy; "
               "or keep the data as a tensor and index it), not from Python lists each step.")
    else:
        what = (f"{where}: Python's own work between ops (NumPy, a Python loop over values, "
                "I/O, logging), which no op of the trace shows.")
        fix = (f"Vectorise it (whole-array NumPy or tensor operations), or "
               f"{words(p).off_the_step}.")
    text = (f"The host runs no framework op for {ms(p.host_gap_seconds)} of each "
            f"{ms(p.step_seconds)} step ({pct(share)}; the longest gap {ms(p.host_gap_largest)}), "
            f"{what} {fix}")
    basis = ("the gaps' time in the trace (no gapbench figure prices Python's own work; moved "
             "into DataLoader workers, the pipeline family's rows would price the overlap)")
    return [explained("host_gap", "warning", "Host time with no op running", text,
                      p.host_gap_seconds, None, basis, "pipeline",
                      "host time with no op running", seconds=p.host_gap_seconds, share=share,
                      between=[before, after], from_python=p.host_gap_from_python)]


def rule_python_op(p: Profile, prices: Prices | None) -> list[Explained]:
    """Python called from a compiled TensorFlow step (tf.py_function, tf.numpy_function): one
    long op in which the graph waits for the interpreter, holding the GIL, while nothing else of
    the step runs beside it."""
    if not timed(p) or p.python_op_seconds < MIN_SHARE * p.step_seconds:
        return []
    share = p.python_op_seconds / p.step_seconds
    text = (f"Python runs inside the compiled step (tf.py_function or tf.numpy_function: their "
            f"EagerPyFunc and PyFunc ops) for {ms(p.python_op_seconds)} of each "
            f"{ms(p.step_seconds)} step ({pct(share)}): the graph waits for the interpreter, "
            "which holds the GIL, and tf.function can neither compile nor parallelise it. Write "
            f"it in TensorFlow ops ({words(p).row_scaling}, for a per-row normalisation) so "
            f"the step compiles whole, or {words(p).off_the_step}.")
    saving, basis = vectorized_saving(p, prices, p.python_op_seconds,
                                      "the Python ops' time in the trace")
    return [explained("python_op", "warning", "Python inside the compiled step", text,
                      p.python_op_seconds, saving, basis, "preprocess",
                      "Python inside the compiled step", seconds=p.python_op_seconds,
                      share=share)]


def rule_session_runs(p: Profile, prices: Prices | None) -> list[Explained]:
    """TF1's Session.run called many times a step on tiny work (once per sample): each call
    pays the session's overhead (feeding, fetching, the executor's start) for a little work."""
    if not timed(p) or p.session_runs < SESSION_RUNS or \
            p.session_overhead_seconds < MIN_SHARE * p.step_seconds:
        return []
    lost = p.session_overhead_seconds
    text = (f"{p.session_runs:.0f} Session.run calls a step, their ops working "
            f"{ms(p.session_work_seconds)} of the {ms(lost + p.session_work_seconds)} from the "
            f"first call to the last: {ms(lost)} of each {ms(p.step_seconds)} step "
            f"({pct(lost / p.step_seconds)}) is the calls' own overhead (feeding and fetching, "
            "the executor's start). Feed the whole batch in one call (a placeholder of shape "
            "[None, ...]), or move the step to TensorFlow 2's tf.function over a tf.data "
            "pipeline.")
    basis = "the calls' time beyond their ops' work, in the trace"
    return [explained("session_runs", "warning", "Session.run per sample", text, lost, None,
                      basis, "overhead", f"{p.session_runs:.0f} Session.run calls a step",
                      runs=p.session_runs, seconds=lost)]


def rule_launch_bound(p: Profile, prices: Prices | None) -> list[Explained]:
    """Kernels shorter than their launch (HolisticTraceAnalysis' launch statistics): the GPU
    finishes each before the host has launched the next."""
    if not p.has_device or p.short_kernels < LAUNCH_MIN_SHORT or \
            p.short_kernels < LAUNCH_SHORT_SHARE * p.kernels or not timed(p):
        return []
    rate = p.kernels / p.step_seconds
    # What the GPU waits between them: HTA's kernel wait, at least the launches' excess.
    lost = max(p.launch_lost_seconds, p.idle_split.get("kernel_wait", 0.0))
    text = (f"{p.short_kernels:g} of the step's {p.kernels:g} kernels run shorter on the GPU "
            f"(median {ms(p.short_kernel_seconds)}) than their launch on the host (median "
            f"{ms(p.launch_seconds)}): {rate:,.0f} launches/s, the GPU waiting {ms(lost)} between "
            "kernels a step. Fuse them (torch.compile, foreach/fused optimizers), capture the step "
            "as a CUDA graph, or give each launch more work.")
    price = prices.graph_replay(lost, p.short_kernels, p.short_kernel_seconds) if prices \
        else None
    saving, basis = priced(price, "launch minus kernel time of the short kernels, in the trace")
    if price:
        text += (f" Measured here, a graph's kernel costs {ms(price.graph_kernel)}: the short "
                 f"kernels would take about {ms(p.short_kernels * price.per_kernel)} a step "
                 f"instead of {ms(p.short_kernels * p.short_kernel_seconds + lost)}.")
    return [explained("launch_bound", "warning", "Launch-bound kernels", text, lost, saving,
                      basis, "overhead", "launch-bound kernels", kernels=p.kernels,
                      short_kernels=p.short_kernels, launches_per_second=rate)]


def rule_small_matmul(p: Profile, prices: Prices | None) -> list[Explained]:
    """Matmuls and convolutions on the GPU smaller than the size from which this machine's GPU
    beats its CPU (gapbench's overhead family), where the CPU would do them faster."""
    if not p.has_device or not timed(p):
        return []
    measured = prices.crossover() if prices else None
    limit, won = measured or (DEFAULT_CROSSOVER, True)
    small = [m for m in p.device_matmuls if m.n < limit or (not won and m.n <= limit)]
    lost = sum(m.per_step * m.gpu_seconds for m in small)
    if not small or lost < SMALL_MATMUL_MIN_SHARE * p.step_seconds:
        return []
    worst = max(small, key=lambda m: m.per_step * m.gpu_seconds)
    judged = (f"this machine's measured crossover, n = {limit}" if measured and won else
              f"n = {limit}, up to which the GPU never beat the CPU here" if measured else
              f"a default of n = {DEFAULT_CROSSOVER} (run gapbench's overhead family for this "
              "machine's crossover)")
    text = (f"{sum(m.per_step for m in small):g} matmuls/convolutions a step are smaller than "
            f"{judged}, e.g. {worst.per_step:g}x {op_label(worst.name)} {worst.dims} (as a "
            f"square matmul n = {worst.n:.0f}), each {ms(worst.gpu_seconds)} on the GPU with its "
            "launch: "
            f"{ms(lost)} a step. Batch them (bmm, one bigger matmul), or, where their inputs "
            "live on the host, run them there.")
    saving, basis = priced(prices.matmuls_on_the_cpu(small) if prices and measured else None,
                           "their GPU time with launches, in the trace")
    return [explained("small_matmul", "info", "Matmuls too small for the GPU", text, lost,
                      saving, basis, "overhead", "matmuls too small for the GPU",
                      crossover=limit, ops_per_step=sum(m.per_step for m in small))]


def rule_fp32(p: Profile, prices: Prices | None) -> list[Explained]:
    """Float32 matmul and convolution kernels without tensor cores on a GPU that has them."""
    cc = p.compute_capability
    if not p.has_device or not cc or cc < TENSOR_CORES_FROM or not timed(p) or \
            p.fp32_kernel_seconds < MIN_SHARE * p.step_seconds:
        return []
    tf32 = cc >= (8, 0)
    text = (f"{p.fp32_kernel_count:g} float32 matmul/convolution kernels a step use no tensor "
            f"cores ({', '.join(map(op_label, p.fp32_examples))}), {ms(p.fp32_kernel_seconds)} "
            f"a step, on a GPU of compute capability {cc[0]}.{cc[1]} that has them. "
            + ("Allow TF32 (torch.set_float32_matmul_precision('high'), "
               "torch.backends.cudnn.allow_tf32 = True) or use torch.autocast."
               if tf32 else "Use torch.autocast (float16) where the model's accuracy allows."))
    saving, basis = priced(prices.tf32(p.fp32_kernel_seconds) if prices and tf32 else None,
                           "the float32 kernels' time in the trace")
    return [explained("fp32_no_tensor_cores", "warning", "Float32 kernels without tensor cores",
                      text, p.fp32_kernel_seconds, saving, basis, "overhead",
                      "float32 without tensor cores", kernels=p.fp32_kernel_count)]


def rule_small_batch(p: Profile, prices: Prices | None) -> list[Explained]:
    """A batch so small that each step's fixed costs (optimizer, dispatch, launches) dwarf its
    arithmetic."""
    if p.batch is None or p.batch > SMALL_BATCH or not timed(p):
        return []
    fixed = max(0.0, p.step_seconds - p.matmul_seconds)
    # TensorFlow's traces have no shapes: the batch is tf.data's, from its batch stage.
    seen = "tf.data's batch() makes batches" if p.framework == "TensorFlow" else \
        "The model's layers see batches"
    text = (f"{seen} of {p.batch}: of the {ms(p.step_seconds)} step, "
            f"{ms(fixed)} ({pct(fixed / p.step_seconds)}) is not the layers' matmuls but what "
            "each step pays whatever its batch (optimizer, dispatch, launches). Use bigger "
            "batches (with gradient accumulation if memory binds).")
    saving, basis = priced(prices.bigger_batch(device_of(p), p.step_seconds) if prices else None,
                           "the step's time outside its matmuls, in the trace")
    return [explained("small_batch", "warning", f"A batch of {p.batch}", text, fixed, saving,
                      basis, "overhead", f"a batch of {p.batch}", batch=p.batch)]


RULES: tuple[Rule, ...] = (rule_input, rule_gpu_idle, rule_pageable, rule_sync, rule_per_element,
                           rule_op_burst, rule_timestep_loop, rule_host_gap, rule_python_op,
                           rule_session_runs, rule_launch_bound,
                           rule_small_matmul, rule_fp32, rule_small_batch)
AUTOGRAD_PREFIX = "autograd::engine::evaluate_function: "


def rank(f: Explained) -> tuple:
    """The most time the trace shows it costing first, priced or not (its saving beside it)."""
    return (costliest_first(f), f.rule)


# Findings whose times are, by how they are found, partly the same time: (a, b, the seconds of
# b's that are a's too). A CPU trace's sync reads are its per-element loop's reads; an input
# pipeline's wait holds the loops found inside the DataLoader's spans.
def shared_seconds(p: Profile, a: Explained, b: Explained) -> float:
    pair = {a.rule, b.rule}
    if pair == {"sync_calls", "per_element_loop"} and not p.has_device:
        return min(a.lost, b.lost)
    if pair & {"input_no_prefetch", "input_bound"} and \
            pair & {"per_element_loop", "op_burst", "host_gap", "timestep_loop"}:
        return min(a.lost, b.lost, p.loops_in_input)
    if "gpu_idle" in pair:
        return 0.0  # the idle rule counts only what no other finding explains
    return 0.0


def with_overlaps(p: Profile, found: list[Explained]) -> list[Explained]:
    """Each finding that shares time with another says so (evidence "shares"), in its text."""
    from dataclasses import replace

    out = []
    for f in found:
        shares = {g.rule: s for g in found if g is not f and (s := shared_seconds(p, f, g)) > 0}
        if shares:
            said = "; ".join(f"{ms(s)} of it is also {g} (below)" for g, s in shares.items())
            f = replace(f, text=f"{f.text} Counted twice: {said}: the two do not add.",
                        evidence={**f.evidence, "shares": shares})
        out.append(f)
    return out


# Findings no gapbench figure prices on any machine (their basis says why).
NEVER_PRICED = frozenset({"gpu_idle", "host_gap", "timestep_loop", "session_runs"})


def what_would_price(f: Explained, prices: Prices | None) -> Explained:
    """A finding that results were given for but that they do not price says which rows would
    (their family's, run on this machine)."""
    from dataclasses import replace

    if prices is None or f.saving is not None or f.rule in NEVER_PRICED or \
            "not priced" in f.basis:
        return f
    return replace(f, basis=f"{f.basis}; not priced: these results have no {f.family}/ rows that "
                   f"price it: gapbench's {f.family} family, run on this machine, would")


def explain(profile: Profile, prices: Prices | None) -> list[Explained]:
    found = sorted((what_would_price(f, prices) for rule in RULES
                    for f in rule(profile, prices)), key=rank)
    return with_overlaps(profile, found)


def overlap_note(profile: Profile, findings: list[Explained]) -> str | None:
    """A line where findings share time or their shares of the step add past 100%: how much of
    the step they take together, each shared second counted once."""
    if not findings or not timed(profile):
        return None
    total = sum(f.lost for f in findings)
    shared = sum(s for i, f in enumerate(findings) for g in findings[i + 1:]
                 if (s := shared_seconds(profile, f, g)) > 0)
    if not shared and total <= profile.step_seconds:
        return None
    once = total - shared
    return (f"The findings' times add to {ms(total)} ({pct(total / profile.step_seconds)} of the "
            f"{ms(profile.step_seconds)} step), but {ms(shared)} of it is counted in two of them: "
            f"together they take {ms(once)} ({pct(once / profile.step_seconds)}). Their savings "
            "do not add either: fixing one shrinks the other." if shared else
            f"The findings' times add to {ms(total)}, past the {ms(profile.step_seconds)} step "
            f"({pct(total / profile.step_seconds)}): some of them are the same time, counted "
            "twice; their savings do not add.")


def load_note(p: Profile) -> str | None:
    """The loaded machine, as the trace shows it: tiny ops that stalled for milliseconds."""
    if not timed(p) or not p.stalls or p.stall_seconds < LOADED_SHARE * p.step_seconds:
        return None
    examples = ", ".join(f"{op_label(n)} {ms(d)} (its median {ms(m)})"
                         for n, d, m in p.stall_examples[:2])
    share = p.stall_seconds / p.step_seconds
    return (f"The machine was loaded while it was traced: {p.stalls:g} tiny op"
            f"{'s' if p.stalls != 1 else ''} a step took 10x their kind's median time or more, "
            f"and 1 ms or more ({examples}): the process was descheduled, or an op's threads "
            f"waited for a core. The stalls add {ms(p.stall_seconds)} a step ({pct(share)}): "
            "every figure here includes them. The step is that much longer than on an idle "
            "machine (so each finding's share of it is smaller), a loop or burst a stall splits is "
            "counted without the stall, and the savings are of a loaded step. Profile again "
            f"with the machine otherwise idle, and {words(p).threads} no more than the cores "
            "free.")


def small_layers_note(p: Profile) -> str | None:
    """Without shapes, layers as quick as the framework's cost per op: a batch too small (or
    layers too small), which record_shapes=True would show."""
    if p.shapes or p.layer_ops < QUICK_LAYERS or not p.layer_op_seconds or \
            p.layer_op_seconds > QUICK_LAYER_SECONDS:
        return None
    return (f"The model's layers take {ms(p.layer_op_seconds)} each on the host (the median of "
            f"{p.layer_ops:.0f} matmuls and convolutions a step): about the framework's cost per "
            "op, which a small batch (or very small layers) gives: each step then pays its fixed "
            "costs for little arithmetic. This trace has no shapes to show the batch: profile "
            "with record_shapes=True, where a batch of 8 or less is a finding (small_batch).")


def not_judged(p: Profile) -> str | None:
    """Why the trace's steps could not be judged, and the one change that lets them be; None
    where they were."""
    if timed(p):
        return None
    why = ("it holds no step of any length" if p.steps else "it holds no step at all (no event "
           "the profiler recorded)")
    fix = ("Profile a few training steps: with Keras' fit, TensorBoard(log_dir, "
           "profile_batch=(3, 5)); in a loop of your own, tf.profiler.experimental.start(log_dir), "
           "each step inside tf.profiler.experimental.Trace(\"train\", step_num=step), then "
           "tf.profiler.experimental.stop()." if p.framework == "TensorFlow" else
           "Profile a few training steps: torch.profiler.profile(schedule=torch.profiler."
           "schedule(wait=1, warmup=1, active=4)), calling prof.step() after each step.")
    return f"Not judged: {why}, so no cause can be found or ruled out in it. {fix}"


def verdict(profile: Profile, findings: list[Explained], limit: int = 3) -> str:
    """One line: what to change first and what it is worth a step, then the next. Only a
    warning leads; a trace whose steps could not be judged says so, never that all is well."""
    if unjudged := not_judged(profile):
        return unjudged
    whole = ("" if profile.step_marked else
             " (the whole trace read as one step: it has no step markers)")

    def worded(f: Explained) -> str:
        worth = f"costs {ms(f.lost)} of {ms(profile.step_seconds)} a step" + (
            f"; saves about {ms(f.saving)}, measured here" if f.saving is not None else "")
        return f"{f.cause} ({worth})"

    leading = [f for f in findings if f.severity == "warning"][:limit]
    minor = [f for f in findings if f.severity != "warning"]
    if not leading:
        said = ("Nothing in this trace points to a known cause of slowness"
                + ("" if profile.has_device else " on the host (it has no device events)")
                + whole)
        if minor:
            said += "; of note: " + "; ".join(map(worded, minor[:limit]))
        return said + "."
    return fix_first([*map(worded, leading)], then=True).removesuffix(".") + whole + "."


# ---- the answer: a trace's findings, its notes and its verdict -----------------------------------

def notes(profile: Profile, prices: Prices | None) -> list[str]:
    out = [machine_note(profile, prices)]
    if loaded := load_note(profile):
        out.append(loaded)
    if not profile.has_device:
        out.append("This trace has no device events (the job ran on the CPU, or the profiler did "
                   "not record CUDA activity): the GPU's findings (idle time, copies, "
                   "synchronisation, launches, small matmuls, tensor cores) are not judged; the "
                   "host's follow.")
    if small := small_layers_note(profile):
        out.append(small)
    return out + profile.notes


@dataclass
class Answer:
    profile: Profile
    findings: list[Explained]
    notes: list[str]

    def __post_init__(self):
        if shared := overlap_note(self.profile, self.findings):
            self.notes = [*self.notes, shared]

    @property
    def judged(self) -> bool:
        """Whether the trace's steps could be judged (a verdict on them, not why none is)."""
        return not_judged(self.profile) is None

    @property
    def verdict(self) -> str:
        return verdict(self.profile, self.findings)
