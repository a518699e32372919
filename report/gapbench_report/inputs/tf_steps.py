"""TensorFlow's steps, found from the trace's own step markers, and what each step shows about its
input pipeline and its host thread (trace viewer events, microseconds).

xprof's step analysis takes only a root marker (`Trace(..., step_num=i, _r=1)`) and, in a step that
holds a `tf.while_loop` (Keras' LSTM and GRU on a CPU), groups the loop's iterations instead of the
steps. Keras 3's `fit` marks each batch with its TensorBoard callback's `Trace("Profiled batch",
step_num=i)`, without the root flag: xprof finds no step in it. Here a step is any outermost span
that carries a `step_num`, whatever its name or flags; without one, the whole trace is one step.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass

STEP_ARG = "step_num"
# The host waiting for the next batch: the iterator's GetNext (on the Python thread for a custom
# loop's next(iterator), on tf.data's get-next thread inside fit's compiled step).
GET_NEXT = "IteratorGetNextOp::DoCompute"
# tf.data's map stages, as the iterator names them; their `parallelism` arg is how many elements
# they compute at once (1, or a plain Map: one at a time), whatever tf.data fused them into.
MAP_STAGES = ("Iterator::Map", "Iterator::ParallelMap", "Iterator::MapAndBatch",
              "Iterator::ParallelInterleave", "Iterator::ParallelBatch")
PREFETCH_STAGE = "Iterator::Prefetch"
# The stages that batch, with their batch_size arg.
BATCH_STAGES = ("Iterator::BatchV2", "Iterator::Batch", "Iterator::MapAndBatch",
                "Iterator::ParallelBatch", "Iterator::PaddedBatch")
# A model's layers on the host, as TensorFlow's ops name them: their time against the step's.
LAYER_OPS = frozenset({"MatMul", "_FusedMatMul", "BatchMatMulV2", "BatchMatMulV3", "Conv2D",
                       "_FusedConv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"})
# Python called from a compiled step: tf.py_function's op, and tf.numpy_function's.
PYTHON_OPS = frozenset({"EagerPyFunc", "PyFunc", "PyFuncStateless"})
# TF1's Session.run, one span per call on the calling thread; the runtime's own spans around the
# ops it runs on its threads (what is left is the ops' work).
SESSION_RUN = "SessionRun"
RUNTIME_SPANS = frozenset({"ThreadpoolListener::Region", "ExecutorState::Process",
                           "ExecutorDoneCallback", "ExecutorState::ProcessAsync::Done"})
# tf.data's own threads: the ops of its maps run there, not the model's.
DATA_THREAD = "tf_data"
# The prefetch that tf.data inserts itself (its inject_prefetch optimisation): one element deep.
INJECTED = "inject/"


@dataclass
class Steps:
    spans: list[tuple[float, float]]  # (start, end) of each step, microseconds
    thread: tuple | None  # (pid, tid) of the steps' thread; None: the whole trace
    marker: str  # the markers' name ("train", "Profiled batch"); "" for the whole trace

    @property
    def marked(self) -> bool:
        return self.thread is not None

    @property
    def mean_seconds(self) -> float:
        return sum(b - a for a, b in self.spans) / len(self.spans) * 1e-6


def spans_of(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("ph") == "X" and isinstance(e.get("dur"), (int, float))
            and isinstance(e.get("ts"), (int, float))]


def find_steps(spans: list[dict]) -> Steps | None:
    """The steps of a trace: the outermost spans with a step_num on the thread that has the most;
    without any, the whole trace as one step (None for a trace with no span at all)."""
    marked = [e for e in spans if STEP_ARG in (e.get("args") or {})]
    if marked:
        thread = Counter((e.get("pid"), e.get("tid")) for e in marked).most_common(1)[0][0]
        mine = sorted((e for e in marked if (e.get("pid"), e.get("tid")) == thread),
                      key=lambda e: (e["ts"], -e["dur"]))
        outer: list[dict] = []
        for e in mine:  # a marker inside another is no step of its own
            if not outer or e["ts"] >= outer[-1]["ts"] + outer[-1]["dur"]:
                outer.append(e)
        name = Counter(e.get("name", "") for e in outer).most_common(1)[0][0]
        return Steps([(e["ts"], e["ts"] + e["dur"]) for e in outer], thread, name)
    if not spans:
        return None
    return Steps([(min(e["ts"] for e in spans), max(e["ts"] + e["dur"] for e in spans))], None, "")


def union(intervals: list[tuple[float, float]]) -> float:
    """The time the intervals cover, each instant once."""
    total, end = 0.0, -float("inf")
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def clipped(spans: list[dict], start: float, end: float) -> list[tuple[float, float]]:
    return [(max(e["ts"], start), min(e["ts"] + e["dur"], end)) for e in spans
            if e["ts"] < end and e["ts"] + e["dur"] > start]


def data_threads(events: list[dict]) -> set[tuple]:
    """The (pid, tid) of tf.data's threads, by the trace's thread names."""
    return {(e.get("pid"), e.get("tid")) for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name"
            and str((e.get("args") or {}).get("name", "")).startswith(DATA_THREAD)}


def op_seconds(spans: list[dict], steps: Steps, data: set[tuple], names: frozenset
               ) -> list[float]:
    """Each step's time in the ops of these names, off tf.data's threads (a map's ops are the
    input's): the model's matmuls (LAYER_OPS), Python called from the step (PYTHON_OPS)."""
    ops = [e for e in spans if e.get("name") in names and (e.get("pid"), e.get("tid")) not in data]
    return [union(clipped(ops, s, t)) for s, t in steps.spans]


def input_waits(spans: list[dict], steps: Steps) -> list[float]:
    """Each step's time waiting for its batch: the iterator's GetNext spans inside it."""
    waits = [e for e in spans if e.get("name") == GET_NEXT]
    return [union(clipped(waits, a, b)) for a, b in steps.spans]


@dataclass
class Runs:
    """One step's Session.run calls: how many, from the first's start to the last's end, and
    the time their ops worked in (microseconds)."""

    count: int = 0
    window: tuple[float, float] = (0.0, 0.0)
    work_us: float = 0.0

    @property
    def overhead_us(self) -> float:
        return max(0.0, self.window[1] - self.window[0] - self.work_us)


def session_runs(spans: list[dict], steps: Steps) -> list[Runs]:
    """Each step's Session.run calls (TF1's graph and session), and their ops' work: the ops'
    spans, off the calling thread and the runtime's own spans, inside each call."""
    runs = sorted((e for e in spans if e.get("name") == SESSION_RUN), key=lambda e: e["ts"])
    if not runs:
        return [Runs() for _ in steps.spans]
    ops = sorted((e for e in spans if e.get("name") not in RUNTIME_SPANS
                  and e.get("name") != SESSION_RUN and STEP_ARG not in (e.get("args") or {})
                  and (e.get("pid"), e.get("tid")) != steps.thread), key=lambda e: e["ts"])
    starts = [e["ts"] for e in ops]
    out = []
    for a, b in steps.spans:
        mine = [e for e in runs if a <= e["ts"] < b]
        if not mine:
            out.append(Runs())
            continue
        work = 0.0
        for e in mine:
            s, t = e["ts"], e["ts"] + e["dur"]
            near = ops[bisect.bisect_left(starts, s):bisect.bisect_left(starts, t)]
            work += union(clipped(near, s, t))
        out.append(Runs(len(mine), (mine[0]["ts"], max(e["ts"] + e["dur"] for e in mine)), work))
    return out


def host_gaps(spans: list[dict], steps: Steps, min_us: float,
              taken: list[tuple[float, float]] | None = None) -> list[Gaps]:
    """Each step's host time on its own thread in which no traced call runs, in gaps of at least
    `min_us`. TensorFlow traces its calls into the runtime on that thread (eager ops, a compiled
    step's call, the iterator, tensors made and freed), so what is left is Python's own work:
    NumPy, a loop over values, I/O. A step's `taken` window (its Session.run calls, whose
    Python between them is their overhead) is left out."""
    if not steps.marked:
        return []
    mine = sorted((e for e in spans if (e.get("pid"), e.get("tid")) == steps.thread
                   and STEP_ARG not in (e.get("args") or {})), key=lambda e: e["ts"])
    starts = [e["ts"] for e in mine]
    out = []
    for i, (a, b) in enumerate(steps.spans):
        gaps = Gaps()
        skip = taken[i] if taken else (0.0, 0.0)
        last, before = a, "the step's start"
        # The step's thread's calls start inside it: the step's marker is their outermost span.
        for e in mine[bisect.bisect_left(starts, a):bisect.bisect_left(starts, b)]:
            s, t = e["ts"], e["ts"] + e["dur"]
            if not skip[0] <= last < skip[1]:
                gaps.add(max(s, a) - last, before, e.get("name", ""), min_us)
            if t > last:
                last, before = min(t, b), e.get("name", "")
        gaps.add(b - last, before, "the step's end", min_us)
        out.append(gaps)
    return out


@dataclass
class Gaps:
    """One step's gaps: their time, the longest, and the calls around it (microseconds)."""

    seconds_us: float = 0.0
    longest_us: float = 0.0
    between: tuple[str, str] = ("", "")

    def add(self, gap: float, before: str, after: str, min_us: float) -> None:
        if gap < min_us:
            return
        self.seconds_us += gap
        if gap > self.longest_us:
            self.longest_us, self.between = gap, (before, after)


@dataclass
class Pipeline:
    """tf.data's pipeline as its iterator's spans show it."""

    maps: dict[str, int]  # each map stage's name and its parallelism (1: one element at a time)
    batch: int | None  # the smallest batch_size of its batch stages
    prefetch: bool  # a prefetch the user asked for (not the one tf.data inserts)
    generator: bool  # from a Python generator (from_generator): the GIL serialises it

    @property
    def parallel(self) -> bool | None:
        """Whether its producers run in parallel: any map (or the generator) one at a time is
        serial; None where no map shows."""
        if self.generator:
            return False
        if not self.maps:
            return None
        return min(self.maps.values()) > 1

    def describe(self) -> str:
        if self.generator:
            return "tf.data from a Python generator"
        serial = [name for name, degree in self.maps.items() if degree <= 1]
        if serial:
            return f"tf.data's map() one element at a time ({', '.join(serial)})"
        return "tf.data"


def pipeline_of(spans: list[dict]) -> Pipeline | None:
    stages = [e for e in spans if str(e.get("name", "")).startswith("Iterator::")]
    if not stages:
        return None
    maps: dict[str, int] = {}
    batches: set[int] = set()
    prefetch = generator = False
    for e in stages:
        name, args = e["name"], e.get("args") or {}
        if name.startswith(MAP_STAGES):
            label = str(args.get("name") or name)
            try:
                degree = int(args.get("parallelism", 1))
            except ValueError:
                degree = 1
            # AUTOTUNE's -1 (not yet tuned) runs in parallel.
            maps[label] = max(maps.get(label, 0), degree if degree > 0 else 2)
        elif name == PREFETCH_STAGE and not str(args.get("name", "")).startswith(INJECTED):
            prefetch = True
        generator = generator or name == "Iterator::Generator"
        if name.startswith(BATCH_STAGES) and str(args.get("batch_size", "")).isdigit():
            batches.add(int(args["batch_size"]))
    return Pipeline(maps, min(batches, default=None), prefetch, generator)
