"""Reading a user's profiler trace for `explain`: what one trace shows, per step.

PyTorch's profiler traces (Kineto's JSON, gzipped or not) are read by HolisticTraceAnalysis
(HTA), which parses them into a DataFrame (streamed with ijson) and computes the GPU's temporal
breakdown, its idle time split (host wait, kernel wait, other) and the kernel launch statistics;
this module only adds what HTA does not compute (the input pipeline's spans, loops of tiny ops,
synchronising calls, copies by memory kind, matmul sizes, kernel precision). TensorFlow's
profiler output (.xplane.pb) is read through xprof's own converters: the input-pipeline
analyser's per-step breakdown and its verdict, the overview page, and the trace viewer's events.

Both become one Profile: per-step averages of the quantities explain's rules judge. Nothing here
judges or prices; explain/rules.py does.

The libraries are the report's optional extra `explain` (pip install './report[explain]'):
require_extra() refuses with one line when they are missing.
"""

from __future__ import annotations

import bisect
import gzip
import json
import logging
import math
import os
import re
import statistics
import warnings
import zlib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from gapbench_report.inputs import tf_steps
from gapbench_report.inputs.files import kind_of
from gapbench_report.inputs.results import ResultsError

EXTRA_HINT = ("pip install './report[explain]' (or run bash ci/setup --explain, which puts it in "
              ".venv)")
# The largest trace explain reads, as uncompressed JSON (a gzipped trace is measured by its
# content), and the memory a trace costs per byte of it at most: HTA holds a row per event, and
# the fewer bytes an event takes, the more rows a MiB holds. At the worst, host ops in fewer
# bytes than torch.profiler writes for any (117, no args), explain's peak is about 4.4 bytes per
# byte of trace over its fixed cost (the interpreter, pandas and HTA: about 80 MiB): 1.35 GiB for
# 298 MiB on the 2-core machine (report/measure/bench_explain.py --events tiny;
# tests/test_explain_memory.py holds it to MEMORY_PER_TRACE_BYTE at 30 MiB). At the limit: at
# most 1.5 GiB over the fixed cost.
MAX_TRACE_MIB = 300
MEMORY_PER_TRACE_BYTE = 5
GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 20

# ---- what the rules read in a trace -------------------------------------------------------------

# A DataLoader's iterator, as torch.profiler names its __next__ span.
LOADER_SPAN = re.compile(r"^enumerate\(DataLoader\)#(?P<iterator>\w+)\.__next__$")
SINGLE_PROCESS_LOADER = "_SingleProcessDataLoaderIter"
# Host calls that wait for the device.
SYNC_CALLS = frozenset({"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                        "cudaMemcpy", "hipStreamSynchronize", "hipDeviceSynchronize"})
# A per-element loop (docs/explain.md): thousands of tiny host ops a step, each on one element,
# where a single vectorized op would take the whole tensor. What marks an op as one element's
# work:
# - a device-to-host read of a value (tensor.item(), float(tensor), bool(tensor) in an `if`);
READ_CALLS = {"aten::item": "tensor.item()", "aten::_local_scalar_dense": "tensor.item()",
              "aten::is_nonzero": "bool(tensor)"}
READ_OPS = frozenset(READ_CALLS)
# - taking one element or row out of a tensor by index (x[i], iterating over a tensor: one
#   unbind per tensor iterated, TF's StridedSlice and Unpack). Slices (x[:, :n]) are left out:
#   models take them by the dozen without any loop;
INDEX_OPS = frozenset({"aten::select", "aten::unbind", "StridedSlice", "Unpack"})
# - where the trace has shapes (record_shapes=True), any op whose tensor inputs hold at most this
#   many elements each (0-d tensors, or of shape [1]): v * 2 + 1 on an element, torch.tensor(v),
#   whatever the op is called. Without shapes only the two kinds above are seen.
ELEMENT_NUMEL = 1
# The profiler's "Input type" of an argument that is no tensor (a tensor's is its dtype).
NOT_TENSOR_TYPES = frozenset({"", "Scalar", "ScalarList", "TensorList", "GenericList", "None"})
# A host op this short is per-element work when many follow each other (microseconds).
TINY_OP_US = 100.0
# Consecutive tiny ops this close (microseconds) belong to one loop...
LOOP_GAP_US = 200.0
# ...of at least this many ops.
LOOP_MIN_OPS = 32
# A run of tiny ops is a per-element loop when at least this share of its ops work on one element:
# a loop body has a few ops per element (taking it, its arithmetic, the store), at least one of
# them on the element itself. A model of many small layers, or a per-parameter update, works on
# whole tensors: none of its ops does.
LOOP_ELEMENT_SHARE = 0.1
# A loop is said to be over elements (rather than rows) where the shapes show at least this share
# of its ops on one element: a body taking a row and computing its statistics makes a few 0-d
# tensors per row (the row's mean, its std plus an epsilon), one taking an element makes nearly
# all of its ops 0-d.
ELEMENTS_SHOWN = 0.5
# tensor.tolist() records these two ops and nothing else (conversions to NumPy record them too):
# what follows, until the next framework op, is Python's own work on the values (a loop or a
# comprehension over them), which no op of the trace shows.
TOLIST = ("aten::resolve_conj", "aten::resolve_neg")
TOLIST_EXAMPLE = "tensor.tolist()"
# A burst (docs/explain.md, "Bursts of tiny ops"): a run of tiny ops that no per-element loop
# takes, and that none of three other habits made:
# - a model's layers, forward or backward (BURST_LAYER_SHARE of the run is layers, autograd's
#   functions, or TensorFlow's variable reads and writes, which its eager optimizer makes);
LAYER_OPS = re.compile(
    r"^(autograd::engine::evaluate_function: .*"
    r"|aten::(linear|addmm|mm|matmul|bmm|baddbmm|conv\dd|conv_transpose\dd|convolution"
    r"|_convolution|embedding|embedding_bag|layer_norm|native_layer_norm|batch_norm"
    r"|native_batch_norm|group_norm|instance_norm|lstm|gru|rnn_tanh|rnn_relu"
    r"|scaled_dot_product_attention|_native_multi_head_attention|dropout|max_pool\dd"
    r"|avg_pool\dd|adaptive_avg_pool\dd|adaptive_max_pool\dd|cross_entropy_loss|nll_loss"
    r"|mse_loss|binary_cross_entropy(_with_logits)?)"
    r"|MatMul|BatchMatMul\w*|Conv\dD\w*|DepthwiseConv\w*|BiasAdd\w*|FusedBatchNorm\w*"
    r"|MaxPool\w*|AvgPool\w*|\w+Grad|SparseSoftmaxCrossEntropyWithLogits"
    r"|SoftmaxCrossEntropyWithLogits|ReadVariableOp|AssignVariableOp|Assign(Add|Sub)VariableOp"
    r"|ResourceApply\w+|VarHandleOp)$")
BURST_LAYER_SHARE = 0.1
# - an update in place (BURST_IN_PLACE_SHARE of the run has a trailing underscore: p.add_(...)
#   per parameter; a loop that writes out[i] has one copy_ per element among its arithmetic);
IN_PLACE_OPS = re.compile(r"^aten::\w+_$")
BURST_IN_PLACE_SHARE = 0.5
# - a loop over the model's parameter tensors (a hand-written update; clip_grad_norm_, which
#   loops on a CPU): at most PER_PARAMETER_OPS ops per tensor of the backward's AccumulateGrad
#   count, and no index or read by name, whatever the shapes say (each gradient's norm moved to
#   its device with .to() is 0-d).
PER_PARAMETER_OPS = 4
AUTOGRAD = "autograd::engine::evaluate_function: "
ACCUMULATE_GRAD = AUTOGRAD + "torch::autograd::AccumulateGrad"
# torch.optim's own spans. Its per-parameter loop (foreach=False) does touch 0-d tensors (Adam's
# step count, read with .item() per parameter), but it is the library's loop, whose fix is
# foreach= or fused=, not the user's to vectorize: its ops are left out of the loops.
LIBRARY_SPAN = re.compile(r"^Optimizer\.(step|zero_grad)#")
# A model's loop in Python (issue 51), told from a loop over elements by what each iteration
# calls, LOOP_ITERATIONS times or more in one run of tiny ops (its forward, or its backward):
# - a loop over time steps: an index or slice (x[:, t]) and a layer's matmul or a cell
#   (linear, lstm_cell) per step: a recurrent cell written by hand, or nn.LSTMCell stepped in
#   Python. Its fix is the library's fused RNN (nn.LSTM, nn.GRU: oneDNN, cuDNN), a compiled step
#   or a graph replay, not a vectorised formula: each step needs the last one's state;
# - a loss per sample: a loss op per iteration (F.cross_entropy(logits[i:i+1], y[i:i+1])), a loop
#   over the batch's samples whose fix is the loss of the whole batch (reduction="none").
LOOP_ITERATIONS = 12
CELL_OPS = re.compile(
    r"^(aten::(linear|addmm|mm|matmul|lstm_cell|gru_cell|rnn_tanh_cell|rnn_relu_cell"
    r"|_thnn_fused_lstm_cell|_thnn_fused_gru_cell)"
    r"|autograd::engine::evaluate_function: (Addmm|Mm|Linear|\w*Cell)Backward\d*)$")
PICK_OPS = re.compile(r"^(aten::(select|slice|narrow|unbind)"
                      r"|autograd::engine::evaluate_function: (Select|Slice|Unbind)Backward\d*)$")
LOSS_OPS = re.compile(
    r"^(aten::(cross_entropy_loss|nll_loss|nll_loss_nd|mse_loss|l1_loss|smooth_l1_loss"
    r"|huber_loss|binary_cross_entropy|binary_cross_entropy_with_logits|kl_div)"
    r"|autograd::engine::evaluate_function: (NllLoss|MseLoss|L1Loss|SmoothL1Loss|HuberLoss"
    r"|BinaryCrossEntropy\w*)Backward\d*)$")
# The model's layers on the host, forward: how long each takes tells a batch (or layers) too
# small for the framework's cost per op, where the trace has no shapes to show the batch.
FORWARD_LAYER_OPS = frozenset({"aten::linear", "aten::addmm", "aten::matmul", "aten::conv1d",
                               "aten::conv2d", "aten::conv3d"})
# Host time in which no framework op runs (issue 51): Python's own work (building a tensor from
# nested lists, NumPy, I/O) between ops. Gaps shorter than this are the interpreter between two
# ops (a few to a few tens of microseconds each), not work of its own.
HOST_GAP_MIN_US = 100.0
# A step whose outermost ops mostly have no duration (whole-µs times, sub-µs ops) tells nothing
# of the host time between them: at least this many ops, this share of them of no length.
UNTIMED_OPS_MIN, UNTIMED_SHARE = 20, 0.5
# torch.tensor(python data) records its ops around the conversion, which runs between them.
FROM_PYTHON = (frozenset({"aten::empty"}),
               frozenset({"aten::lift_fresh", "aten::detach_", "aten::to", "aten::_to_copy"}))
# A loaded machine, seen in the trace: ops of a tiny kind (median under TINY_OP_US, at least
# STALL_KIND_MIN of them) that took STALL_FACTOR times their kind's median and at least
# STALL_MIN_US: the process was descheduled, or an op's threads waited for a core (a scheduler
# tick is 1 to 4 ms).
STALL_FACTOR, STALL_MIN_US, STALL_KIND_MIN = 10.0, 1000.0, 16
MATMUL_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"})
CONV_OPS = frozenset({"aten::cudnn_convolution", "aten::convolution", "aten::_convolution",
                      "aten::conv2d", "aten::conv1d", "aten::conv3d"})
# The ops the user's model calls on its batch: a linear layer, a matmul (x @ w), a convolution.
BATCH_OPS = frozenset({"aten::addmm", "aten::linear", "aten::matmul", "aten::conv1d",
                       "aten::conv2d", "aten::conv3d"})
# Float32 matmul and convolution kernels of cuBLAS and cuDNN that use no tensor cores...
FP32_KERNEL = re.compile(r"sgemm|gemmSN|gemmk1|implicit_convolve_sgemm|f32f32_f32f32_f32"
                         r"|fft2d_r2c|winograd", re.IGNORECASE)
# ...and the names of those that do (TF32, half precision, tensor-op tiles).
TENSOR_CORE_KERNEL = re.compile(r"tf32|s1688|s16816|h1688|h16816|884|hmma|tensorop|tensor\d+x"
                                r"|bf16|f16|wgmma|gmma|i8816", re.IGNORECASE)
MEMCPY = re.compile(r"^Memcpy (?P<dir>HtoD|DtoH|DtoD|HtoH|PtoP) \((?P<src>\w+) -> (?P<dst>\w+)\)")


class TraceError(ResultsError):
    """A trace explain cannot read; str() is the one line to show."""


# ---- the profile: what a trace shows, per step ------------------------------------------------

@dataclass
class Loop:
    """A run of tiny host ops in one step: a Python loop over a tensor's elements (enough of its
    ops on one element each), or a burst whose ops the trace cannot show to be (per step, once
    read)."""

    ops: float
    seconds: float
    example: str  # its most frequent op, or "tensor.tolist()"
    elements: float = 0.0  # its ops on one element (reads, indexing, 0-d or one-element inputs)
    reads: float = 0.0  # of which device-to-host reads (.item(), bool(tensor))
    read_seconds: float = 0.0  # the reads' own time
    shown: float = 0.0  # its ops the trace's shapes show on one element, with its reads
    shapes: bool = False  # the trace has shapes to show them
    names: dict[str, float] = field(default_factory=dict)  # its ops by name
    what: str = ""  # "samples": a loss per sample; "" elements or rows (confidence says)

    @property
    def confidence(self) -> str:
        """What it loops over: "elements" where it reads an element back in its iterations (a
        read can only be of one element) or the shapes show most of its ops on one element;
        else "rows" (the shapes show its ops taking more than one element: rows, or small
        tensors); "unknown" without shapes."""
        if self.reads >= LOOP_ELEMENT_SHARE * self.ops or \
                (self.shapes and self.shown >= ELEMENTS_SHOWN * self.ops):
            return "elements"
        return "rows" if self.shapes else "unknown"

    def per_step(self, unit: float, share: float) -> Loop:
        """This loop of one step in a trace's time unit, as seconds and counts per step."""
        return Loop(self.ops * share, self.seconds * unit * share, self.example,
                    self.elements * share, self.reads * share, self.read_seconds * unit * share,
                    self.shown * share, self.shapes,
                    {k: v * share for k, v in self.names.items()}, self.what)


@dataclass
class Copies:
    """Host-device copies of one direction and host memory kind, per step."""

    direction: str  # "h2d", "d2h"
    memory: str  # "pageable", "pinned"
    count: float
    bytes: float
    seconds: float

    @property
    def gbps(self) -> float | None:
        return self.bytes / self.seconds / 1e9 if self.seconds > 0 else None


@dataclass
class SmallOp:
    """A matmul or convolution that ran on the device, its size as a square matmul's n."""

    name: str
    dims: str
    n: float  # (m*n*k)^(1/3) of the GEMM it is
    flops: float
    per_step: float
    gpu_seconds: float  # each: its host op (launch) and its kernels


@dataclass
class Profile:
    """What one trace shows. Times in seconds, per step (averaged over the steps)."""

    path: str
    framework: str  # "PyTorch" or "TensorFlow"
    host_name: str | None = None
    gpus: list[str] = field(default_factory=list)
    compute_capability: tuple[int, int] | None = None
    has_device: bool = False
    steps: int = 0
    step_marked: bool = True  # False: no step markers, the whole trace is one step
    step_seconds: float = 0.0
    step_lengths: list[float] = field(default_factory=list)  # each step's, seconds
    notes: list[str] = field(default_factory=list)
    # the input pipeline
    input_seconds: float = 0.0
    loader: str | None = None  # "_SingleProcessDataLoaderIter", "tf.data: ..."
    loader_parallel: bool | None = None  # workers or parallel producers, None: unknown
    loader_prefetch: bool | None = None  # tf.data's own .prefetch, None: unknown
    input_verdict: str | None = None  # TensorFlow's own sentence
    host_compute_seconds: float | None = None  # TensorFlow's breakdown
    # the device (HTA's breakdown)
    gpu_idle_seconds: float = 0.0
    gpu_busy_seconds: float = 0.0
    idle_split: dict[str, float] = field(default_factory=dict)  # HTA's, per step
    idle_input_seconds: float = 0.0  # idle while the host waits for input
    # synchronisation
    sync_calls: float = 0.0
    reads: float = 0.0
    sync_bubble_seconds: float = 0.0  # device idle from a sync's return to the next work
    sync_examples: list[str] = field(default_factory=list)
    # loops of tiny host ops on one element each
    loops: list[Loop] = field(default_factory=list)
    shapes: bool = False  # the trace has input shapes (record_shapes=True)
    bursts: list[Loop] = field(default_factory=list)  # runs of tiny ops of no per-element loop
    timesteps: list[Loop] = field(default_factory=list)  # a model's loops over time steps
    loops_in_input: float = 0.0  # of the runs' time, inside the input's spans (per step)
    # host time with no op running (outside the input's spans, torch.optim's and the loops')
    host_gap_seconds: float = 0.0
    host_gap_largest: float = 0.0  # the longest one gap
    host_gap_from_python: float = 0.0  # of it, between torch.tensor()'s ops: from Python data
    host_gap_between: tuple[str, str] | None = None  # the ops around the most gap time
    # the loaded machine: stalls of tiny ops
    stalls: float = 0.0  # per step
    stall_seconds: float = 0.0  # per step, beyond their kinds' medians
    stall_examples: list[tuple[str, float, float]] = field(default_factory=list)  # op, s, median
    # the model's forward layer ops on the host: count per step, median seconds
    layer_ops: float = 0.0
    layer_op_seconds: float = 0.0
    # copies
    copies: list[Copies] = field(default_factory=list)
    # kernels and launches (HTA's launch statistics)
    kernels: float = 0.0
    short_kernels: float = 0.0  # shorter on the device than their launch on the host
    launch_seconds: float = 0.0  # median cudaLaunchKernel of the short ones
    short_kernel_seconds: float = 0.0  # median device time of the short ones
    launch_lost_seconds: float = 0.0  # per step: launch minus kernel, over the short ones
    # matmuls and convolutions
    device_matmuls: list[SmallOp] = field(default_factory=list)
    fp32_kernel_seconds: float = 0.0
    fp32_kernel_count: float = 0.0
    fp32_examples: list[str] = field(default_factory=list)
    batch: int | None = None
    matmul_seconds: float = 0.0  # host time in matmul/linear ops, per step
    python_op_seconds: float = 0.0  # TensorFlow: tf.py_function/numpy_function ops in the step
    session_runs: float = 0.0  # TensorFlow 1's Session.run calls a step
    session_overhead_seconds: float = 0.0  # from the first to the last, less their ops' work
    session_work_seconds: float = 0.0

    # What explain --against sets side by side, per step: the ops by name (PyTorch: the
    # outermost host ops outside the input's spans; TensorFlow: the ops off tf.data's
    # threads), their time and count; the device's kernels and copies likewise; the host's
    # time in the CUDA runtime's launches and syncs; the union of the op time; and what the
    # trace shows of its stack (its op library's names, its threads running ops).
    op_seconds: dict[str, float] = field(default_factory=dict)
    # each step's own: its input wait, host gaps, ops' seconds by name (the spread of each part)
    step_inputs: list[float] = field(default_factory=list)
    step_gaps: list[float] = field(default_factory=list)
    step_ops: list[dict[str, float]] = field(default_factory=list)
    # the trace's structure, to match ops whose names differ between library versions: the first
    # step's ops in order (PyTorch), each op's layer paths (TensorFlow's long_name)
    op_order: list[str] = field(default_factory=list)
    op_paths: dict[str, list[str]] = field(default_factory=dict)
    op_counts: dict[str, float] = field(default_factory=dict)
    kernel_seconds: dict[str, float] = field(default_factory=dict)
    kernel_counts: dict[str, float] = field(default_factory=dict)
    runtime_seconds: dict[str, float] = field(default_factory=dict)  # "launches", "syncs"
    busy_op_seconds: float = 0.0
    stack: dict[str, str] = field(default_factory=dict)

    def loop(self) -> Loop | None:
        """The step's per-element loops, as one."""
        return merged(self.loops)

    def burst(self) -> Loop | None:
        """The step's bursts of tiny ops, as one."""
        return merged(self.bursts)

    def timestep(self) -> Loop | None:
        """The step's model loops over time steps, as one."""
        return merged(self.timesteps)


def merged(loops: list[Loop]) -> Loop | None:
    """Loops as one: their counts, times and ops by name summed, the example of the longest."""
    if not loops:
        return None
    total = {f: sum(getattr(lp, f) for lp in loops)
             for f in ("ops", "seconds", "elements", "reads", "read_seconds", "shown")}
    names: Counter = Counter()
    for lp in loops:
        names.update(lp.names)
    longest = max(loops, key=lambda lp: lp.seconds)
    return Loop(example=longest.example, shapes=any(lp.shapes for lp in loops),
                names=dict(names), what=longest.what, **total)


# ---- the extra ----------------------------------------------------------------------------------

def require_extra(framework: str = "PyTorch") -> None:
    """Refuses, with one line, when the libraries of the explain extra are missing."""
    modules = ("hta", "ijson", "pandas") if framework == "PyTorch" else ("xprof",)
    for module in modules:
        try:
            __import__(module)
        except ImportError:
            what = ("HolisticTraceAnalysis" if module == "hta" else module)
            raise TraceError(f"explain needs {what} (the report's optional extra 'explain'), "
                             f"which this Python lacks: {EXTRA_HINT}") from None


# ---- finding and checking the file --------------------------------------------------------------

def trace_files(paths: list[str]) -> list[Path]:
    """The traces named: a file, or a folder's *.pt.trace.json[.gz] and *.xplane.pb (a TensorBoard
    log folder: plugins/profile/<run>/), each once."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            inside = sorted({*p.rglob("*.pt.trace.json"), *p.rglob("*.pt.trace.json.gz"),
                             *p.rglob("*.xplane.pb")})
            if not inside:
                raise TraceError(f"{p}: a folder with no profiler trace in it (*.pt.trace.json, "
                                 "*.pt.trace.json.gz, *.xplane.pb)")
            found += inside
        elif not p.exists():
            raise TraceError(f"{p}: no such file")
        else:
            found.append(p)
    return list(dict.fromkeys(found))


def sniff(path: Path, max_mib: float = MAX_TRACE_MIB) -> str:
    """"kineto" or "xplane", after checking the file whole: a regular file (a device, a FIFO or a
    socket is never opened: /dev/zero would be read for ever, a FIFO waited on), a gzip stream
    read to its end (a truncated or corrupt one is refused here, not half-way through a parse),
    the JSON's size against the memory bound, its text UTF-8 and nested at most MAX_TRACE_DEPTH
    deep (JsonCheck)."""
    limit = max_mib * 2**20
    try:
        kind = kind_of(os.stat(path).st_mode)
        if kind:
            raise TraceError(f"{path}: is {kind}, not a trace file: not read")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        with os.fdopen(fd, "rb") as f:
            kind = kind_of(os.fstat(f.fileno()).st_mode)  # replaced since the stat: checked
            if kind:
                raise TraceError(f"{path}: is {kind}, not a trace file: not read")
            head = f.read(4096)
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror or e}") from None
    if not head:
        raise TraceError(f"{path}: empty file")
    gzipped = head[:2] == GZIP_MAGIC
    if path.name.endswith(".xplane.pb"):
        size = _content(path, gzipped, limit) if gzipped else path.stat().st_size
        if size > limit:
            raise _too_big(path, size, max_mib)
        return "xplane"
    if gzipped:
        with _opened(path, gzipped=True) as f:
            head = f.read(4096)
    if head.lstrip()[:1] != b"{":
        raise TraceError(f"{path}: not a profiler trace explain reads: neither PyTorch's JSON "
                         "(Kineto, gzipped or not) nor TensorFlow's .xplane.pb")
    _content(path, gzipped, limit, JsonCheck(path))
    return "kineto"


def _too_big(path: Path, size: float, max_mib: float, read_whole: bool = True) -> TraceError:
    at_least = "" if read_whole else "at least "
    return TraceError(
        f"{path}: {at_least}{size / 2**20:.0f} MiB of trace is over explain's limit of "
        f"{max_mib:g} MiB (held in memory, up to {MEMORY_PER_TRACE_BYTE}x its size): profile "
        "fewer steps (torch.profiler.schedule's active=, tf.profiler for fewer steps), or pass "
        "--max-trace-mib if this machine has the memory")


@contextmanager
def _opened(path: Path, gzipped: bool) -> Iterator:
    """The file's content, unpacked where it is gzipped; a stream cut short or corrupt, or a
    read that fails, is a TraceError."""
    try:
        with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as f:
            yield f
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise TraceError(f"{path}: the gzip stream is truncated or corrupt ({e}); the trace "
                         "was cut short while it was written or copied") from None
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror or e}") from None


def _content(path: Path, gzipped: bool, limit: float, check: JsonCheck | None = None) -> int:
    """The size of a file's content (a gzip file's unpacked), reading it to the end, each chunk
    through `check`: raises TraceError for a stream cut short or corrupt, and for content past
    `limit` bytes as soon as it is (a small gzip can unpack to any size)."""
    size = 0
    with _opened(path, gzipped) as f:
        while chunk := f.read(CHUNK):
            size += len(chunk)
            if size > limit:
                raise _too_big(path, size, limit / 2**20, read_whole=False)
            if check:
                check.feed(chunk)
    if check:
        check.end()
    return size


# The deepest nesting of a PyTorch trace's JSON explain reads. Kineto's is 6 or 7 (the document,
# its traceEvents, an event, its args, a list of input dims, a tensor list's dims); ijson's memory
# grows with the square of the depth (each value carries its path), so 100,000 nested brackets
# (200 KB) took 23 GB: refused before they are parsed.
MAX_TRACE_DEPTH = 64
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPENING = (ord("["), ord("{"))
_CLOSING = (ord("]"), ord("}"))


# An event's time below zero: torch.profiler never writes one, and HTA drops such events
# without a word (the steps among them with them).
_NEGATIVE_TIME = re.compile(rb'"ts"\s*:\s*-')


class JsonCheck:
    """What a trace's JSON must be before HTA parses it, checked chunk by chunk in one pass, at
    numpy's speed: UTF-8 text, nested at most MAX_TRACE_DEPTH deep (brackets inside strings do
    not count), no event at a negative time."""

    def __init__(self, path: Path, max_depth: int = MAX_TRACE_DEPTH):
        import codecs

        self.path, self.max_depth = path, max_depth
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.offset = 0  # bytes fed so far
        self.depth = 0  # brackets open, outside strings, after what was fed
        self.in_string = False
        self.backslashes = 0  # the run of them that ended what was fed
        self.tail = b""  # the last bytes fed, for a pattern split between two chunks

    def feed(self, chunk: bytes) -> None:
        import numpy as np

        if _NEGATIVE_TIME.search(self.tail + chunk):
            raise TraceError(f"{self.path}: it has events at negative times (\"ts\": -...), "
                             "which torch.profiler never writes and which would be dropped "
                             "unread: a trace edited or converted? Shift its times to start "
                             "at 0")
        self.tail = chunk[-16:]

        pending = len(self.utf8.getstate()[0])  # a character's first bytes, from the last chunk
        try:
            self.utf8.decode(chunk)
        except UnicodeDecodeError as e:
            self._not_utf8(e, self.offset - pending)
        a = np.frombuffer(chunk, np.uint8)
        marks = np.flatnonzero((a == _QUOTE) | (a == _OPENING[0]) | (a == _OPENING[1])
                               | (a == _CLOSING[0]) | (a == _CLOSING[1]))
        tokens = a[marks]
        quote = tokens == _QUOTE
        if self.backslashes or chunk.find(b"\\") >= 0:
            # A quote after an odd run of backslashes is inside its string.
            index = np.arange(len(a))
            last_plain = np.maximum.accumulate(np.where(a == _BACKSLASH, -1, index))
            before = np.concatenate(([-1], last_plain[:-1]))
            run = index - 1 - before + np.where(before < 0, self.backslashes, 0)
            quote &= run[marks] % 2 == 0
            tail = len(a) - 1 - int(last_plain[-1])
            self.backslashes = tail + (self.backslashes if last_plain[-1] < 0 else 0)
            tokens = np.where((tokens == _QUOTE) & ~quote, 0, tokens)  # an escaped quote: none
        quotes = np.cumsum(quote) + self.in_string
        outside = (quotes % 2 == 0) & (tokens != _QUOTE) & (tokens != 0)
        opening = (tokens == _OPENING[0]) | (tokens == _OPENING[1])
        depths = self.depth + np.cumsum(np.where(opening, 1, -1) * outside)
        if len(depths):
            if depths.max() > self.max_depth:
                at = self.offset + int(marks[np.argmax(depths > self.max_depth)])
                raise TraceError(f"{self.path}: its JSON nests deeper than {self.max_depth} "
                                 f"levels (at byte {at:,}), where a profiler trace nests 6 or 7: "
                                 "not a trace explain reads (refused before it is parsed)")
            self.depth = int(depths[-1])
            self.in_string = bool(quotes[-1] % 2)
        self.offset += len(chunk)

    def end(self) -> None:
        try:
            self.utf8.decode(b"", final=True)
        except UnicodeDecodeError as e:
            self._not_utf8(e, self.offset - len(e.object))

    def _not_utf8(self, e: UnicodeDecodeError, offset: int) -> None:
        raise TraceError(f"{self.path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset "
                         f"{offset + e.start:,}): a PyTorch trace is JSON in UTF-8; was it "
                         "written or copied in another encoding?") from None


@contextmanager
def quiet() -> Iterator[None]:
    """HTA's and pandas' log lines and warnings, and the C++ log lines xprof's converters print on
    stderr, are not explain's output: the user sees one answer or one error line."""
    hta_logger = logging.getLogger("hta")
    level, disabled = hta_logger.level, hta_logger.disabled
    hta_logger.disabled = True
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        hta_logger.setLevel(level)
        hta_logger.disabled = disabled


def read_profile(path: Path, max_mib: float = MAX_TRACE_MIB) -> Profile:
    """The Profile of one trace file; TraceError with one line for what cannot be read."""
    kind = sniff(path, max_mib)
    if kind == "xplane":
        require_extra("TensorFlow")
        return read_xplane(path)
    require_extra("PyTorch")
    return read_kineto(path)


# ---- PyTorch: HTA -------------------------------------------------------------------------------

# The event args HTA keeps as columns: those explain reads (external_id, bytes, input_dims,
# input_type) and those the HTA analyses it calls need (stream, correlation). Each other default
# arg (input_strides, memory_bw_gbps, wait_on_*) is a column of every event, copied at each step
# of HTA's parse.
HTA_ARGS = ("stream", "correlation", "external_id", "bytes", "input_dims", "input_type")
# Event categories HTA's parse drops anyway, for having no duration (flows, instant events): not
# read at all, rather than held as rows until it drops them. python_function is HTA's default.
HTA_SKIPPED = frozenset({"python_function", "ac2g", "fwdbwd", "cpu_instant_event"})


def _hta_config():
    from hta.configs.parser_config import ParserBackend, ParserConfig

    config = ParserConfig.get_default_cfg()
    config.parser_backend = ParserBackend.IJSON_BATCH_AND_COMPRESS  # streamed, compressed
    config.set_args([a for a in config.get_args() if a.name in HTA_ARGS])
    config.set_skip_event_types(set(HTA_SKIPPED))
    return config


def stream_number(value) -> int:
    """An event's stream as HTA 0.5 normalises it: int(value), or -1 where that is no number
    (HTA's catches ValueError only; a None, which its parse fills in before, would stop it)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


@contextmanager
def _stream_numbers_by_column() -> Iterator[None]:
    """HTA 0.5's parse normalises the events' stream numbers with DataFrame.apply(axis=1), which
    boxes every cell of every event as a Python object: on a trace of many tiny events, a fifth
    of the parse's peak memory. HTA has since fixed it upstream (facebookresearch/
    HolisticTraceAnalysis#296, in no release yet) by converting the one column; while HTA
    parses, the same conversion (the same numbers, stream_number) replaces the row-wise one
    where the installed HTA still has it."""
    import inspect

    from hta.common import trace_parser

    row_wise = getattr(trace_parser, "normalize_gpu_stream_numbers", None)
    try:
        by_row = row_wise is not None and "axis=1" in inspect.getsource(row_wise)
    except (OSError, TypeError):
        by_row = False
    if not by_row:
        yield
        return

    def by_column(df) -> None:
        if "stream" in df.columns:
            df["stream"] = df["stream"].map(stream_number).astype("int64")

    trace_parser.normalize_gpu_stream_numbers = by_column
    try:
        yield
    finally:
        trace_parser.normalize_gpu_stream_numbers = row_wise


STEP_NUMBER = re.compile(r"ProfilerStep\s*#\s*(\d+)")


def iterations(df, symbol_table) -> None:
    """HTA 0.5's add_iteration, in time linear in the events: each host event's iteration is the
    number of the ProfilerStep whose [ts, ts + dur) holds its start (of several, the last in the
    table's order, as HTA's), each device event's that of its host event, -1 where none is.
    HTA's own compares every event with every step (10 s for 1,000 steps of 18 events each, 35 s
    for 2,000); this takes, for each step, the slice of the host's events in time order that
    starts in it."""
    import numpy as np
    import pandas as pd

    numbers = {i: int(m.group(1)) for i, name in enumerate(symbol_table.sym_table)
               if (m := STEP_NUMBER.match(str(name)))}
    iteration = np.full(len(df), np.nan)
    host = np.flatnonzero((df["stream"] < 0).to_numpy())
    iteration[host] = -1
    ts = df["ts"].to_numpy()
    order = host[np.argsort(ts[host], kind="stable")]
    starts = ts[order]
    steps = df[df["name"].isin(list(numbers))]
    for start, dur, name in zip(steps["ts"], steps["dur"], steps["name"]):
        first, last = np.searchsorted(starts, [start, start + dur], "left")
        iteration[order[first:last]] = numbers[name]
    device = (df["stream"] > 0).to_numpy()
    if device.any():
        correlated = df["index_correlation"].to_numpy()[device]
        by_label = pd.Series(iteration, index=df.index)
        iteration[device] = np.where(
            correlated > 0, by_label.reindex(np.where(correlated > 0, correlated, df.index[0]))
            .to_numpy(), -1)
    df["iteration"] = pd.to_numeric(pd.Series(iteration, index=df.index), downcast="integer")


@contextmanager
def _iterations_in_linear_time() -> Iterator[None]:
    """While HTA parses, its add_iteration (steps x events) replaced by iterations (linear)."""
    from hta.common import trace as hta_trace

    own = getattr(hta_trace, "add_iteration", None)
    if own is None:
        yield
        return
    hta_trace.add_iteration = iterations
    try:
        yield
    finally:
        hta_trace.add_iteration = own


def read_kineto(path: Path) -> Profile:
    import ijson
    import numpy as np
    from hta.common.trace import Trace

    config = _hta_config()
    # HTA rounds nanosecond times to whole microseconds by default, which leaves the sub-
    # microsecond ops of a per-element loop (aten::item, views) with no length: kept exact.
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    with quiet(), _stream_numbers_by_column(), _iterations_in_linear_time():
        try:
            trace = Trace(trace_files={0: str(path)}, trace_dir="", parser_config=config)
            trace.load_traces(include_last_profiler_step=True, use_multiprocessing=False,
                              use_memory_profiling=False)
        except ijson.JSONError as e:
            raise TraceError(f"{path}: not valid JSON (truncated?): {e}") from None
        except Exception as e:  # noqa: BLE001 -- HTA's failures, as one line
            _events_of(path)  # what is wrong with its events, where that is it
            raise TraceError(f"{path}: HolisticTraceAnalysis could not read it as a PyTorch "
                             f"profiler trace: {type(e).__name__}: {e}") from None
    df = trace.get_trace(0)
    meta = trace.meta_data.get(0) or {}
    if df.empty:
        raise TraceError(f"{path}: a PyTorch profiler trace with no events")
    symbols = np.asarray(trace.symbol_table.get_sym_table(), dtype=object)
    df = df.assign(op=symbols[df["name"].to_numpy()], category=symbols[df["cat"].to_numpy()])
    df["end"] = df["ts"] + df["dur"]
    profile, (cpu, gpu, syncs, loader_spans) = profile_of(path, df, meta)
    if profile.has_device:
        _device(profile, df, cpu, gpu, syncs, loader_spans, 1.0 / profile.steps, trace)
    return profile


JSON_KINDS = {"start_map": "an object", "start_array": "a list", "number": "a number",
              "string": "a string", "boolean": "true or false", "null": "null",
              "end_array": "nothing"}


def _events_of(path: Path) -> None:
    """Raises TraceError saying what is wrong with a document's traceEvents (none, not a list,
    empty, not of events), reading only as far as its first event; returns where it looks
    right."""
    import ijson

    with _opened(path, _is_gzip(path)) as f:
        parsed = ijson.parse(f)
        try:
            for prefix, event, _ in parsed:
                if prefix != "traceEvents":
                    continue
                if event != "start_array":
                    raise TraceError(f"{path}: its traceEvents is {JSON_KINDS.get(event, event)}"
                                     ", not a list of events: not a PyTorch profiler trace")
                _, first, _ = next(parsed)
                if first == "end_array":
                    raise TraceError(f"{path}: a PyTorch profiler trace with no events (its "
                                     "traceEvents is empty)")
                if first != "start_map":
                    raise TraceError(f"{path}: its traceEvents holds {JSON_KINDS.get(first, first)}"
                                     ", not events (objects with ph, name, ts, dur): not a "
                                     "PyTorch profiler trace")
                return
        except ijson.JSONError:
            return
    raise TraceError(f"{path}: JSON with no traceEvents: not a PyTorch profiler trace")


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


def innermost(windows: list[tuple[float, float]]) -> list[int]:
    """The indexes of the windows (start, end) that hold no other window: an outer ProfilerStep
    (a record_function of that name around the loop, a nested schedule) would read its inner
    steps as one long step."""
    import numpy as np

    order = sorted(range(len(windows)), key=lambda i: (windows[i][0], -windows[i][1]))
    ends = np.array([windows[i][1] for i in order] + [math.inf])
    # the smallest end among the windows that start at or after each one (after it in order):
    # one of them inside it ends before it does
    later = np.minimum.accumulate(ends[::-1])[::-1][1:]
    return [i for k, i in enumerate(order) if later[k] > windows[i][1]]


def _spans(n: int) -> str:
    return f"{n} ProfilerStep span{'s' if n != 1 else ''}"


def profile_of(path: Path, df, meta: dict) -> tuple[Profile, tuple]:
    """A PyTorch trace's Profile from HTA's event table (ts, dur, end in microseconds; op and
    category by name): the host's findings' figures, and what _device reads beside them (the
    host's events, the device's, the syncs, the input's spans). The work is linear in the
    events: each step's events are a slice of the host's events in time order (searchsorted),
    never a scan of all of them per step."""
    import numpy as np
    import pandas as pd

    devices = meta.get("deviceProperties") or []
    if not isinstance(devices, list):
        devices = []
    profile = Profile(str(path), "PyTorch", host_name=meta.get("host_name"),
                      gpus=[str(d.get("name")) for d in devices if isinstance(d, dict)])
    capabilities = [(int(d["computeMajor"]), int(d.get("computeMinor", 0))) for d in devices
                    if isinstance(d, dict) and isinstance(d.get("computeMajor"), (int, float))]
    profile.compute_capability = max(capabilities) if capabilities else None

    cpu = df[df["stream"] < 0].sort_values("ts", kind="stable")
    at = cpu["ts"].to_numpy(float)  # the host's events in time order, for _within
    gpu = df[(df["stream"] >= 0) & df["category"].isin(("kernel", "gpu_memcpy", "gpu_memset"))]
    profile.has_device = not gpu.empty

    steps = cpu[(cpu["category"] == "user_annotation") & cpu["op"].str.startswith("ProfilerStep#")]
    windows = [(float(s.ts), float(s.end), int(s.tid) if _is_int(s.tid) else s.tid)
               for s in steps.itertuples() if s.end > s.ts]  # a step of no length is none
    if len(windows) < len(steps):
        profile.notes.append(f"{_spans(len(steps) - len(windows))} of no or negative duration "
                             "(a trace edited, or a clock that went back) left out.")
    kept = innermost([(start, end) for start, end, _ in windows])
    if len(kept) < len(windows):
        profile.notes.append(f"{_spans(len(windows) - len(kept))} around other steps (a "
                             "record_function of that name around the loop?) read as the steps "
                             "inside them.")
        windows = [windows[i] for i in sorted(kept)]
    windows = sorted(windows, key=lambda w: (w[0], w[1]))
    overlapping = sum(a[1] > b[0] for a, b in zip(windows, windows[1:]))
    if overlapping:  # each op is one step's: a step ends where the next begins
        windows = [(start, min(end, after[0]), tid) for (start, end, tid), after in
                   zip(windows, windows[1:] + [(math.inf,)])]
        profile.notes.append(f"{_spans(overlapping)} overlapping the next (a trace edited or "
                             "merged?) read as ending where the next begins, so that no op is "
                             "counted in two steps.")
    if not windows:
        profile.step_marked = False
        profile.notes.append("No ProfilerStep markers (torch.profiler's schedule and prof.step()): "
                             "the whole trace is read as one step.")
        windows = [(float(df["ts"].min()), float(df["end"].max()), None)]
    profile.steps = len(windows)
    per_step = 1.0 / len(windows)
    us = 1e-6
    profile.step_lengths = [(end - start) * us for start, end, _ in windows]
    profile.step_seconds = statistics.mean(profile.step_lengths)

    # Each step's host events, as positions in the host's events in time order: the slice that
    # starts in the step, of those that end in it on its thread.
    op = cpu["op"].to_numpy()
    ts_all, dur_all, end_all = (cpu["ts"].to_numpy(float), cpu["dur"].to_numpy(float),
                                cpu["end"].to_numpy(float))
    thread = cpu["tid"].astype(str).to_numpy()
    kinds = {name: i for i, name in enumerate(pd.unique(op))}  # each name judged once
    code = np.array([kinds[n] for n in op], dtype=np.int64) if len(op) else np.zeros(0, int)

    def named(test) -> np.ndarray:
        by_kind = np.array([bool(test(str(n))) for n in kinds], dtype=bool)
        return by_kind[code] if len(code) else np.zeros(0, bool)

    is_loader = named(LOADER_SPAN.match)
    is_library = named(LIBRARY_SPAN.match)
    is_op = (cpu["category"] == "cpu_op").to_numpy()

    def within(start: float, end: float, tid) -> np.ndarray:
        inside = np.arange(np.searchsorted(at, start, "left"), np.searchsorted(at, end, "right"))
        keep = end_all[inside] <= end
        if tid is not None:
            keep &= thread[inside] == str(tid)
        return inside[keep]

    # The input pipeline: the DataLoader's __next__ spans inside the steps.
    loader_spans = []
    steps_at = [within(start, end, tid) for start, end, tid in windows]
    for inside in steps_at:
        spans = inside[is_loader[inside]]
        loader_spans += list(zip(ts_all[spans], end_all[spans]))
        for name in dict.fromkeys(op[spans]):
            iterator = LOADER_SPAN.match(name)["iterator"]
            profile.loader = iterator
            profile.loader_parallel = iterator != SINGLE_PROCESS_LOADER
        profile.step_inputs.append(float(dur_all[spans].sum()) * us)
    profile.input_seconds = statistics.mean(profile.step_inputs)

    # Loops of tiny host ops on one element each, per step. The ops the user's code calls are
    # the outermost framework ops: record_function's spans (the DataLoader's __next__, the user's
    # own) are seen through, torch.optim's spans left out (LIBRARY_SPAN).
    profile.shapes = "input_type" in cpu and bool(
        cpu["input_type"].map(lambda t: isinstance(t, list) and len(t) > 0).any())
    types = cpu["input_type"].to_numpy() if profile.shapes else None
    dims = cpu["input_dims"].to_numpy() if profile.shapes else None
    read_kinds: set[str] = set()
    # the backward's AccumulateGrad calls, on whichever thread it ran (a GPU's own): each step's
    # count of parameter tensors
    grads = np.sort(ts_all[op == ACCUMULATE_GRAD])
    durations: dict[str, list[float]] = {}  # each outermost op's, by name: the stalls
    gaps = Counter()  # host time with no op, by the ops around it
    untimed_steps = 0
    for (start, end, _), inside in zip(windows, steps_at):
        library = inside[is_library[inside]]
        every = inside[is_op[inside]]
        ops = every
        if len(library):
            ops = ops[~_overlapping(ts_all[ops], end_all[ops], ts_all[library],
                                    end_all[library])]
        ts, dur, names = ts_all[ops], dur_all[ops], op[ops]
        top = top_level(ts, dur)
        for i in top:
            if names[i] in FORWARD_LAYER_OPS:
                profile.layer_ops += per_step
                durations.setdefault("\0layer", []).append(dur[i])
        # A read the user's code makes (tensor.item()) is an outermost op; one inside an op
        # (aten::std reads its count) is the op's business.
        profile.reads += sum(names[i] in READ_OPS for i in top) * per_step
        read_kinds.update(READ_CALLS[names[i]] for i in top if names[i] in READ_OPS)
        element = top_dims = None
        if profile.shapes:
            element = [on_one_element(types[ops[i]], dims[ops[i]]) for i in top]
            top_dims = dims[ops[top]]
        parameters = int(np.searchsorted(grads, end) - np.searchsorted(grads, start))
        runs = find_runs(ts[top], dur[top], names[top], element, top_dims, parameters)
        profile.loops += [loop.per_step(us, per_step) for loop in runs.loops]
        profile.bursts += [burst.per_step(us, per_step) for burst in runs.bursts]
        profile.timesteps += [t.per_step(us, per_step) for t in runs.timesteps]
        loading = inside[is_loader[inside]]
        if len(loading) and runs.spans:
            profile.loops_in_input += _overlap(
                _merged([a for a, _ in runs.spans], [b for _, b in runs.spans]),
                list(zip(ts_all[loading], end_all[loading]))) * us * per_step
        # Host time with no op: the step less every outermost op (torch.optim's too), the
        # input's spans, torch.optim's spans and the loops' runs, in gaps of HOST_GAP_MIN_US or
        # more, each named by the ops around it.
        outer = every[top_level(ts_all[every], dur_all[every])]
        for k in outer:
            durations.setdefault(op[k], []).append(dur_all[k])
        profile.step_gaps.append(0.0)
        _count_ops(profile, outer, op, dur_all, us * per_step,
                   _overlapping(ts_all[outer], end_all[outer], ts_all[loading], end_all[loading])
                   if len(loading) and len(outer) else None)
        if len(every) >= UNTIMED_OPS_MIN and np.mean(dur_all[every] <= 0) >= UNTIMED_SHARE:
            untimed_steps += 1  # its ops' lengths unknown: the time between them is too
            continue
        started = {float(ts_all[k]): str(op[k]) for k in outer}
        ended = {float(end_all[k]): str(op[k]) for k in outer}
        busy = [(float(ts_all[k]), float(end_all[k])) for k in outer] + [
            (float(ts_all[k]), float(end_all[k]))
            for k in inside[is_loader[inside] | is_library[inside]]] + runs.spans
        busy = _merged([a for a, _ in busy], [b for _, b in busy])
        edges = [(start, "the step's start")] + [(e, ended.get(e, "Python")) for _, e in busy]
        starts_at = [(a, started.get(a, "Python")) for a, _ in busy] + [(end, "the step's end")]
        for (gap_from, before), (gap_to, after) in zip(edges, starts_at):
            # between two of the backward's functions the autograd engine runs, not Python
            if gap_to - gap_from >= HOST_GAP_MIN_US and not (
                    before.startswith(AUTOGRAD) and after.startswith(AUTOGRAD)):
                gaps[(before, after)] += gap_to - gap_from
                profile.step_gaps[-1] += (gap_to - gap_from) * us
                profile.host_gap_largest = max(profile.host_gap_largest,
                                               (gap_to - gap_from) * us)
    if untimed_steps:
        profile.notes.append(
            f"In {untimed_steps} of {len(windows)} steps most ops have no duration (a trace "
            "whose times are whole microseconds records a shorter op so): the host time between "
            "ops is not judged there.")
    gap_total = sum(gaps.values())
    profile.host_gap_seconds = gap_total * us * per_step
    profile.host_gap_from_python = sum(
        t for (a, b), t in gaps.items() if a in FROM_PYTHON[0] and b in FROM_PYTHON[1]
    ) * us * per_step
    if gaps:
        profile.host_gap_between = max(gaps, key=gaps.get)
    # The loaded machine: tiny ops that stalled.
    for name, seen in durations.items():
        if name == "\0layer" or len(seen) < STALL_KIND_MIN:
            continue
        median = statistics.median(seen)
        if median >= TINY_OP_US:
            continue
        for d in seen:
            if d >= STALL_FACTOR * median and d >= STALL_MIN_US:
                profile.stalls += per_step
                profile.stall_seconds += (d - median) * us * per_step
                profile.stall_examples.append((str(name), d * us, median * us))
    profile.stall_examples.sort(key=lambda e: -e[1])
    del profile.stall_examples[3:]
    if "\0layer" in durations:
        profile.layer_op_seconds = statistics.median(durations["\0layer"]) * us
    if not profile.shapes:
        profile.notes.append(
            "This trace has no input shapes (torch.profiler's default): the batch, the sizes of "
            "matmuls and Python loops over tensor.tolist()'s values are not judged, and whether a "
            "loop of tiny ops works on elements or on rows is not known; profile with "
            "record_shapes=True for them.")

    # Device-to-host reads and synchronising calls.
    in_steps = cpu.iloc[np.concatenate(steps_at)] if steps_at else cpu.iloc[0:0]
    syncs = in_steps[(in_steps["category"] == "cuda_runtime") & in_steps["op"].isin(SYNC_CALLS)]
    profile.sync_calls = len(syncs) * per_step
    profile.sync_examples = list(dict.fromkeys(
        sorted(read_kinds) + list(syncs["op"])))[:4]

    # Matmul sizes for the batch, and the host time in them.
    batch_ops = in_steps[in_steps["op"].isin(BATCH_OPS)]
    batches = [b for b in (batch_of(op, dims) for op, dims in
                           zip(batch_ops["op"], batch_ops["input_dims"])) if b]
    profile.batch = int(statistics.median(batches)) if batches else None
    matmuls = in_steps[in_steps["op"].isin(MATMUL_OPS | CONV_OPS | {"aten::linear"})]
    profile.matmul_seconds = _outermost_seconds(matmuls) * us * per_step

    # The device's work by name, and the host's time launching and waiting for it.
    for name, group in gpu.groupby("op"):
        profile.kernel_seconds[str(name)] = float(group["dur"].sum()) * us * per_step
        profile.kernel_counts[str(name)] = len(group) * per_step
    runtime = in_steps[in_steps["category"] == "cuda_runtime"]
    profile.runtime_seconds = {
        "launches": float(runtime[runtime["op"].str.contains("Launch")]["dur"].sum()) * us
        * per_step, "syncs": float(syncs["dur"].sum()) * us * per_step}

    return profile, (cpu, gpu, syncs, loader_spans)


def _count_ops(profile: Profile, outer, op, dur, scale: float, in_input) -> None:
    """One step's outermost ops by name into the profile, per step; those inside the input's
    spans (`in_input`, a mask) are the input's time, not the step's compute."""
    kept = outer if in_input is None else outer[~in_input]
    mine: dict[str, float] = {}
    for k in kept:
        name = str(op[k])
        mine[name] = mine.get(name, 0.0) + float(dur[k]) * 1e-6
        profile.op_seconds[name] = profile.op_seconds.get(name, 0.0) + float(dur[k]) * scale
        profile.op_counts[name] = profile.op_counts.get(name, 0.0) + 1.0 / profile.steps
        profile.busy_op_seconds += float(dur[k]) * scale
    if not profile.step_ops:
        profile.op_order = [str(op[k]) for k in kept]
    profile.step_ops.append(mine)


def _is_int(value) -> bool:
    try:
        int(value)
        return True
    except (TypeError, ValueError):
        return False


def _outermost_seconds(ops) -> float:
    """The summed time of ops that no other op of the set contains."""
    total, reach = 0.0, -math.inf
    for ts, end in sorted(zip(ops["ts"], ops["end"])):
        if ts >= reach:
            total += end - ts
            reach = end
    return total


def _overlapping(ts, end, span_ts, span_end):
    """Which events (ts, end) overlap one of the spans, in one pass: the spans merged, each event
    against the last of them that starts before it ends."""
    import numpy as np

    spans = _merged(span_ts, span_end)
    starts, ends = np.array([a for a, _ in spans]), np.array([b for _, b in spans])
    k = np.searchsorted(starts, end, "left") - 1
    return (k >= 0) & (ends[np.maximum(k, 0)] > ts)


def on_one_element(types, dims) -> bool:
    """An op's inputs, as the profiler records them with record_shapes: whether it has tensor
    inputs and each holds at most ELEMENT_NUMEL elements."""
    if not isinstance(types, list) or not isinstance(dims, list):
        return False
    tensors = [d for t, d in zip(types, dims) if str(t) not in NOT_TENSOR_TYPES]
    try:
        return bool(tensors) and all(math.prod(d) <= ELEMENT_NUMEL for d in tensors)
    except TypeError:
        return False


def top_level(ts, dur) -> list[int]:
    """The indexes of the ops no other op contains, in time order (ops of no length left out).
    HTA's CallGraph would give each op's depth, but HTA 0.5 fails to build it on a CPU trace
    with numpy 2 (np.unique over its object columns), and TensorFlow's events need it too."""
    order = sorted((i for i in range(len(ts)) if dur[i] > 0), key=lambda i: (ts[i], -dur[i]))
    top, reach = [], -math.inf
    for i in order:
        if ts[i] >= reach:
            top.append(i)
            reach = ts[i] + dur[i]
    return top


def find_loops(ts, dur, names, element=None, element_dims=None, parameters: int = 0
               ) -> tuple[list[Loop], list[Loop]]:
    """find_runs' per-element loops and bursts."""
    runs = find_runs(ts, dur, names, element, element_dims, parameters)
    return runs.loops, runs.bursts


@dataclass
class Runs:
    """What find_runs finds among a step's outermost host ops."""

    loops: list[Loop]
    bursts: list[Loop]
    timesteps: list[Loop]
    spans: list[tuple[float, float]]  # every run of tiny ops, and Python's loops: their time


# A recurrent cell of the library called once per time step from Python (nn.LSTMCell, nn.GRUCell,
# nn.RNNCell): no model calls one LOOP_ITERATIONS times a step otherwise.
CELL_CALLS = frozenset({"aten::lstm_cell", "aten::gru_cell", "aten::rnn_tanh_cell",
                        "aten::rnn_relu_cell"})


def stepped_cells(ts, dur, names) -> list[Loop]:
    """A library cell stepped over time in Python: from its first call to its last, where it is
    called LOOP_ITERATIONS times or more (its calls need not be tiny: a cell of a wide layer takes
    longer than TINY_OP_US)."""
    calls = [i for i, n in enumerate(names) if n in CELL_CALLS]
    if len(calls) < LOOP_ITERATIONS:
        return []
    a, b = calls[0], calls[-1] + 1
    return [Loop(b - a, float(ts[b - 1] + dur[b - 1] - ts[a]), names[calls[0]],
                 names=dict(Counter(names[a:b])))]


def model_loop(names: list[str]) -> str | None:
    """"samples" for a run that computes a loss per iteration, "timesteps" for one that picks a
    step (an index or slice) and calls a layer's matmul or a cell each iteration, None for
    neither (LOOP_ITERATIONS of them at least)."""
    losses = sum(bool(LOSS_OPS.match(n)) for n in names)
    if losses >= LOOP_ITERATIONS:
        return "samples"
    picks = sum(bool(PICK_OPS.match(n)) for n in names)
    cells = sum(bool(CELL_OPS.match(n)) for n in names)
    if min(picks, cells) >= LOOP_ITERATIONS:
        return "timesteps"
    return None


def find_runs(ts, dur, names, element=None, element_dims=None, parameters: int = 0) -> Runs:
    """Per-element loops and bursts among outermost host ops (given in time order): runs of at
    least LOOP_MIN_OPS consecutive ops, each shorter than TINY_OP_US and at most LOOP_GAP_US
    apart. A run is a per-element loop when at least LOOP_ELEMENT_SHARE of its ops work on one
    element (a read, an index, or, where `element` gives it from the trace's shapes, inputs of one
    element each); else a burst unless it is a model's layers or an update in place (is_burst).
    Neither is a run of at most PER_PARAMETER_OPS ops per parameter tensor (`parameters`, where
    the backward counts them) with no index or read by name: a loop over the parameters. A
    loop's (a burst's) runs that a pause splits (the interpreter's own work in the body, the
    process descheduled) are one while nothing but tiny ops, and no run of another kind, lies
    between them. With the loops, python_loops' (element_dims: the ops' input dims, where the
    trace has them). Times in the trace's microseconds."""
    names = [str(n) for n in names]
    read = [n in READ_OPS for n in names]
    named = [r or n in INDEX_OPS for r, n in zip(read, names)]
    on_element = [m or (element is not None and bool(element[i])) for i, m in enumerate(named)]
    runs: list[list[int]] = []  # [first, last + 1] of each run
    for i in range(len(ts)):
        if dur[i] >= TINY_OP_US:
            continue
        if runs and runs[-1][1] == i and ts[i] - (ts[i - 1] + dur[i - 1]) <= LOOP_GAP_US:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    spans: list[list] = []  # [kind, first, last + 1]: kind "loop", "burst" or None (neither)
    for a, b in runs:
        if b - a < LOOP_MIN_OPS:
            continue
        over_parameters = b - a <= PER_PARAMETER_OPS * parameters and \
            sum(named[a:b]) < LOOP_ELEMENT_SHARE * (b - a)
        model = model_loop(names[a:b])
        kind = ("timestep" if model == "timesteps" else
                "samples" if model == "samples" else
                None if over_parameters else
                "loop" if sum(on_element[a:b]) >= LOOP_ELEMENT_SHARE * (b - a) else
                "burst" if is_burst(names[a:b]) else None)
        if kind and spans and spans[-1][0] == kind and \
                all(dur[k] < TINY_OP_US for k in range(spans[-1][2], a)):
            spans[-1][2] = b
        else:
            spans.append([kind, a, b])
    found: dict[str, list[Loop]] = {"loop": [], "burst": [], "timestep": [], "samples": []}
    for kind, a, b in spans:
        if kind is None:
            continue
        counts = Counter(names[a:b])
        shown = sum(read[k] or (element is not None and bool(element[k])) for k in range(a, b))
        found[kind].append(Loop(b - a, float(ts[b - 1] + dur[b - 1] - ts[a]),
                                counts.most_common(1)[0][0], sum(on_element[a:b]),
                                sum(read[a:b]),
                                float(sum(dur[k] for k in range(a, b) if read[k])), shown,
                                element is not None, dict(counts),
                                "samples" if kind == "samples" else ""))
    if not found["timestep"]:
        found["timestep"] = stepped_cells(ts, dur, names)
    in_python = python_loops(ts, dur, names, element_dims,
                             [(a, b - 1) for kind, a, b in spans if kind == "loop"])
    # every run's time, and Python's loops' (a gap after a tolist()): none is time with no op
    runs_at = [(float(ts[a]), float(ts[b - 1] + dur[b - 1])) for _, a, b in spans]
    runs_at += [(float(ts[i] + dur[i]), float(ts[i] + dur[i] + lp.seconds))
                for i, lp in in_python]
    return Runs(found["loop"] + found["samples"] + [lp for _, lp in in_python], found["burst"],
                found["timestep"], runs_at)


def is_burst(names: list[str]) -> bool:
    """A run of tiny ops that is neither a model's layers nor an update of tensors in place (the
    shares of LAYER_OPS and IN_PLACE_OPS among its ops, by name)."""
    layers = sum(bool(LAYER_OPS.match(n)) for n in names)
    in_place = sum(bool(IN_PLACE_OPS.match(n)) for n in names)
    return layers < BURST_LAYER_SHARE * len(names) and in_place < BURST_IN_PLACE_SHARE * len(names)


def python_loops(ts, dur, names, dims=None, inside=()) -> list[tuple[int, Loop]]:
    """Python's own work on the values of tensor.tolist(): from the end of its two ops (TOLIST)
    to the next framework op, no op runs (ops=0; elements: the values). Only where the trace's
    shapes (dims) count at least LOOP_MIN_OPS values: converting a loss to log it is no loop,
    whatever Python does next. Conversions inside a loop of ops (`inside`: first and last op of
    each) are that loop's. Each with the index of its last op; times in the trace's
    microseconds."""
    found = []
    if dims is None:
        return found
    in_loop = [False] * len(ts)
    for a, b in inside:
        in_loop[a:b + 1] = [True] * (b + 1 - a)
    for i in range(1, len(ts) - 1):
        if in_loop[i] or (names[i - 1], names[i]) != TOLIST:
            continue
        shape = dims[i][0] if isinstance(dims[i], list) and dims[i] else None
        values = math.prod(shape) if isinstance(shape, list) else 0
        if values >= LOOP_MIN_OPS:
            found.append((i, Loop(0, float(ts[i + 1] - ts[i] - dur[i]), TOLIST_EXAMPLE, values,
                                  shown=values, shapes=True)))
    return found


def batch_of(op: str, dims) -> int | None:
    """The batch of a layer's input: the rows of aten::linear's and aten::matmul's first input
    and of aten::addmm's second (the first is the bias); a convolution's N (N C H W)."""
    try:
        shape = dims[1] if op == "aten::addmm" else dims[0]
        if op.startswith("aten::conv"):
            return int(shape[0]) if len(shape) == int(op[-2]) + 2 else None
        return int(shape[0]) if len(shape) == 2 else None
    except (TypeError, IndexError, ValueError):
        return None


def gemm_size(op: str, dims) -> tuple[float, float] | None:
    """(n, flops) of a matmul or convolution from its input dims: n is the side of the square
    matmul of the same work, (m*n*k)^(1/3)."""
    try:
        if op in ("aten::mm",):
            (m, k), (_, n) = dims[0], dims[1]
            mnk = m * k * n
        elif op in ("aten::addmm",):
            (m, k), (_, n) = dims[1], dims[2]
            mnk = m * k * n
        elif op in ("aten::bmm",):
            (b, m, k), (_, _, n) = dims[0], dims[1]
            mnk = b * m * k * n
        elif op in ("aten::baddbmm",):
            (b, m, k), (_, _, n) = dims[1], dims[2]
            mnk = b * m * k * n
        else:  # a convolution: input N C H W, weight K C R S; stride 1, same padding
            x, w = dims[0], dims[1]
            spatial = math.prod(x[2:])
            mnk = x[0] * spatial * w[0] * math.prod(w[1:])
    except (TypeError, ValueError, IndexError):
        return None
    if mnk <= 0:
        return None
    return float(mnk) ** (1 / 3), 2.0 * mnk


def _device(profile: Profile, df, cpu, gpu, syncs, loader_spans, per_step, trace) -> None:
    """What HTA computes about the device, and what explain adds beside it."""
    import numpy as np
    from hta.analyzers.breakdown_analysis import BreakdownAnalysis
    from hta.analyzers.cuda_kernel_analysis import CudaKernelAnalysis

    us = 1e-6
    with quiet():
        temporal = BreakdownAnalysis.get_temporal_breakdown(trace, visualize=False)
        idle, _ = BreakdownAnalysis.get_idle_time_breakdown(
            trace, 30, 0, None, False, False, False)
        launches = CudaKernelAnalysis.cuda_kernel_launch_stats(
            trace, [0], 50, 100, False, False)[0]
    profile.gpu_idle_seconds = float(temporal["idle_time(us)"].sum()) * us * per_step
    profile.gpu_busy_seconds = float(temporal["kernel_time(us)"].sum()) * us * per_step \
        - profile.gpu_idle_seconds
    for category, seconds in idle.groupby("idle_category")["idle_time"].sum().items():
        profile.idle_split[str(category)] = float(seconds) * us * per_step

    # The device's busy intervals, merged, for what the idle time overlaps.
    busy = _merged(gpu["ts"].to_numpy(float), gpu["end"].to_numpy(float))
    gaps = [(busy[i][1], busy[i + 1][0]) for i in range(len(busy) - 1)
            if busy[i + 1][0] > busy[i][1]]
    profile.idle_input_seconds = float(_overlap(gaps, loader_spans)) * us * per_step
    starts = np.array([s for s, _ in busy])
    ends = np.array([e for _, e in busy])
    bubble = 0.0
    for returned in syncs["end"].to_numpy(float):
        k = int(np.searchsorted(starts, returned))
        if k < len(starts) and (k == 0 or ends[k - 1] <= returned):
            bubble += starts[k] - returned
    profile.sync_bubble_seconds = float(bubble) * us * per_step

    # Copies, by direction and host memory.
    copies = gpu[gpu["category"] == "gpu_memcpy"]
    groups: dict[tuple[str, str], list[float]] = {}
    for name, nbytes, seconds in zip(copies["op"], copies["bytes"], copies["dur"]):
        m = MEMCPY.match(str(name))
        if not m or m["dir"] not in ("HtoD", "DtoH"):
            continue
        host = m["src"] if m["dir"] == "HtoD" else m["dst"]
        key = (m["dir"].lower().replace("to", "2"), "pageable" if host == "Pageable" else "pinned")
        g = groups.setdefault(key, [0, 0.0, 0.0])
        g[0] += 1
        g[1] += float(nbytes) if nbytes == nbytes and nbytes > 0 else 0.0
        g[2] += float(seconds) * us
    profile.copies = [Copies(d, mem, n * per_step, b * per_step, s * per_step)
                      for (d, mem), (n, b, s) in sorted(groups.items())]

    # Kernels against their launches (HTA's launch statistics).
    kernels = gpu[gpu["category"] == "kernel"]
    profile.kernels = len(kernels) * per_step
    if len(launches):
        short = launches[launches["gpu_duration"] < launches["cpu_duration"]]
        profile.short_kernels = len(short) * per_step
        if len(short):
            profile.launch_seconds = float(short["cpu_duration"].median()) * us
            profile.short_kernel_seconds = float(short["gpu_duration"].median()) * us
            profile.launch_lost_seconds = float(
                (short["cpu_duration"] - short["gpu_duration"]).sum()) * us * per_step

    # Float32 kernels without tensor cores.
    # Judged per distinct name: a trace repeats a few kernels thousands of times.
    fp32_names = [n for n in kernels["op"].unique()
                  if FP32_KERNEL.search(str(n)) and not TENSOR_CORE_KERNEL.search(str(n))]
    fp32 = kernels[kernels["op"].isin(fp32_names)]
    profile.fp32_kernel_seconds = float(fp32["dur"].sum()) * us * per_step
    profile.fp32_kernel_count = len(fp32) * per_step
    profile.fp32_examples = list(dict.fromkeys(fp32["op"].astype(str)))[:2]

    # Matmuls and convolutions that ran on the device: their size and their cost there.
    device_time = kernels.groupby("external_id")["dur"].sum()
    ops = cpu[cpu["op"].isin(MATMUL_OPS | CONV_OPS) & cpu["external_id"].isin(device_time.index)]
    by_shape: dict[tuple[str, str], list] = {}
    for op, dims, ext, dur in zip(ops["op"], ops["input_dims"], ops["external_id"], ops["dur"]):
        size = gemm_size(op, dims)
        if size is None:
            continue
        entry = by_shape.setdefault((op, str(dims)), [size, 0, 0.0])
        entry[1] += 1
        entry[2] += (float(dur) + float(device_time.get(ext, 0.0))) * us
    profile.device_matmuls = [SmallOp(op, dims, n, flops, count * per_step, total / count)
                              for (op, dims), ((n, flops), count, total) in by_shape.items()]


def _merged(starts, ends) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for s, e in sorted(zip(starts, ends)):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """The total length of the intersection of two sets of intervals (each sorted, disjoint)."""
    a, b = sorted(a), _merged([s for s, _ in b], [e for _, e in b])
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


# ---- TensorFlow: xprof's converters -------------------------------------------------------------

# xprof's step analysis is taken where its mean step is within this share of the markers' (then
# it took the same steps): its own breakdown of the input's time, and its verdict.
XPROF_AGREES = 0.1
# The ops a tf.while_loop's iterations run (an RNN's on a CPU): xprof groups them as steps.
WHILE_OPS = frozenset({"TensorListPushBack", "TensorListPopBack", "TensorListGetItem",
                       "TensorListSetItem", "While", "StatelessWhile"})

def _xprof(path: Path, tool: str):
    """xprof's tool data for one .xplane.pb, parsed. Its saved results are neither read nor
    written (use_saved_result): they would be a stale cache in the user's log folder."""
    from xprof.convert import raw_to_tool_data

    with quiet():
        try:
            # Absolute: xprof reads the file's folder, which a bare name has none of.
            data, _ = raw_to_tool_data.xspace_to_tool_data(
                [str(path.absolute())], tool, {"use_saved_result": False})
        except Exception as e:  # noqa: BLE001 -- the converters' failures, as one line
            raise TraceError(f"{path}: xprof could not read it as TensorFlow profiler "
                             f"output: {type(e).__name__}: {e}") from None
    if not data:
        raise TraceError(f"{path}: xprof could not read it as TensorFlow profiler output "
                         f"(its {tool} tool returned nothing): not an XSpace, or cut short")
    try:
        return json.loads(data)
    except ValueError:
        raise TraceError(f"{path}: xprof's {tool} returned no JSON") from None


def _table(table: dict) -> list[dict]:
    cols = [c.get("id") for c in table.get("cols", [])]
    return [{c: cell.get("v") if isinstance(cell, dict) else None
             for c, cell in zip(cols, row.get("c", []))} for row in table.get("rows", [])]


def _varint(f) -> int | None:
    shift = value = 0
    while byte := f.read(1):
        value |= (byte[0] & 0x7F) << shift
        if byte[0] < 0x80:
            return value
        shift += 7
    return None


def xspace_hostnames(path: Path) -> list[str]:
    """XSpace's `hostnames` (field 4 of tsl's xplane.proto), read from the protobuf's wire format
    field by field, seeking past the planes: xprof ships no Python class for XSpace."""
    names: list[str] = []
    with open(path, "rb") as f:
        while (tag := _varint(f)) is not None:
            number, wire = tag >> 3, tag & 7
            if wire != 2:  # XSpace has only length-delimited fields: not an XSpace
                break
            length = _varint(f)
            if length is None:
                break
            if number == 4:
                names.append(f.read(length).decode("utf-8", "replace"))
            else:
                f.seek(length, os.SEEK_CUR)
    return names


def read_xplane(path: Path) -> Profile:
    hosts = xspace_hostnames(path)
    profile = Profile(str(path), "TensorFlow", host_name=hosts[0] if hosts else None)
    analysis = _xprof(path, "input_pipeline_analyzer")
    if not isinstance(analysis, list) or len(analysis) < 3:
        raise TraceError(f"{path}: xprof's input-pipeline analysis has an unexpected shape")
    summary = analysis[1].get("p") or {}
    hardware = summary.get("hardware_type", "")
    profile.has_device = bool(hardware) and hardware != "CPU_ONLY"
    events = _xprof(path, "trace_viewer").get("traceEvents", [])
    spans = tf_steps.spans_of(events)
    steps = tf_steps.find_steps(spans)
    ms, us = 1e-3, 1e-6
    xprof_steps = _table(analysis[1])
    xprof_mean = statistics.mean(float(s.get("stepTimeMs") or 0) for s in xprof_steps) * ms \
        if xprof_steps else 0.0
    if steps and steps.marked and xprof_steps and \
            abs(xprof_mean - steps.mean_seconds) <= XPROF_AGREES * steps.mean_seconds:
        # xprof's step analysis took the same steps: its breakdown and its verdict.
        profile.steps = len(xprof_steps)
        profile.step_seconds = xprof_mean
        profile.step_lengths = [float(s.get("stepTimeMs") or 0) * ms for s in xprof_steps]
        profile.step_inputs = [float(s.get("infeedTimeMs") or 0) * ms for s in xprof_steps]
        profile.input_seconds = statistics.mean(profile.step_inputs)
        profile.host_compute_seconds = statistics.mean(
            float(s.get("hostComputeTimeMs") or 0) for s in xprof_steps) * ms
        profile.input_verdict = summary.get("input_conclusion") or None
    elif steps:
        profile.steps = len(steps.spans)
        profile.step_seconds = steps.mean_seconds
        profile.step_lengths = [(b - a) * us for a, b in steps.spans]
        profile.step_inputs = [w * us for w in tf_steps.input_waits(spans, steps)]
        profile.input_seconds = statistics.mean(profile.step_inputs)
        if not steps.marked:
            profile.step_marked = False
            profile.notes.append(
                f"No step markers: the whole trace ({profile.step_seconds * 1e3:.1f} ms) is read "
                "as one step, so each figure is the trace's, not a step's. Mark the steps: with "
                "Keras' fit, its TensorBoard callback's profile_batch; in a loop of your own, "
                "tf.profiler.experimental.Trace(\"train\", step_num=step).")
        else:
            why = ("its grouping takes a tf.while_loop's iterations, an RNN's on a CPU, for "
                   "steps" if spans_hold_loops(spans) else "their mean length differs by more "
                   f"than {XPROF_AGREES:.0%}" if xprof_steps else "it takes only root markers, "
                   "_r=1, which Keras 3's fit does not set")
            profile.notes.append(
                f"Steps read from the trace's {len(steps.spans)} \"{steps.marker}\" markers: "
                "TensorFlow's own step analysis "
                + (f"took {len(xprof_steps)} other steps" if xprof_steps else "found none")
                + f" ({why}).")
    if pipeline := tf_steps.pipeline_of(spans):
        profile.loader = pipeline.describe()
        profile.loader_parallel = pipeline.parallel
        profile.loader_prefetch = pipeline.prefetch
        profile.batch = pipeline.batch
    if profile.has_device:
        overview = _xprof(path, "overview_page")
        device = (overview[0].get("p") or {}) if overview else {}
        idle = _percent(device.get("device_idle_time_percent"))
        if idle is not None and profile.step_seconds:
            profile.gpu_idle_seconds = idle * profile.step_seconds
            profile.gpu_busy_seconds = profile.step_seconds - profile.gpu_idle_seconds
            profile.idle_input_seconds = min(profile.input_seconds, profile.gpu_idle_seconds)
    if steps:
        runs = tf_steps.session_runs(spans, steps)
        profile.session_runs = statistics.mean(r.count for r in runs)
        profile.session_overhead_seconds = statistics.mean(r.overhead_us for r in runs) * us
        profile.session_work_seconds = statistics.mean(r.work_us for r in runs) * us
        gaps = tf_steps.host_gaps(spans, steps, HOST_GAP_MIN_US, [r.window for r in runs])
        if gaps:
            profile.step_gaps = [g.seconds_us * us for g in gaps]
            profile.host_gap_seconds = statistics.mean(profile.step_gaps)
            longest = max(gaps, key=lambda g: g.longest_us)
            profile.host_gap_largest = longest.longest_us * us
            profile.host_gap_between = longest.between
        data = tf_steps.data_threads(events)
        profile.matmul_seconds = statistics.mean(
            tf_steps.op_seconds(spans, steps, data, tf_steps.LAYER_OPS)) * us
        profile.python_op_seconds = statistics.mean(
            tf_steps.op_seconds(spans, steps, data, tf_steps.PYTHON_OPS)) * us
        _eager_loops(spans, steps, profile)
        _tf_ops(spans, steps, data, profile)
    return profile


# oneDNN's own TensorFlow ops (_MklMatMul, _MklFusedConv2D, ...): named so where the graph is
# rewritten for oneDNN, and absent with TF_ENABLE_ONEDNN_OPTS=0.
ONEDNN_OP = "_Mkl"


def _tf_ops(spans: list[dict], steps: tf_steps.Steps, data: set[tuple], profile: Profile) -> None:
    """The steps' ops by name (xprof names each op event by its type, its path in `long_name`),
    off tf.data's threads, per step; their union; and the op library the names show."""
    ops = [e for e in spans if "long_name" in (e.get("args") or {})
           and (e.get("pid"), e.get("tid")) not in data]
    per_step = 1e-6 / len(steps.spans)
    for a, b in steps.spans:
        inside = [e for e in ops if e["ts"] < b and e["ts"] + e["dur"] > a]
        mine: dict[str, float] = {}
        for e in inside:
            name = str(e.get("name", ""))
            seconds = (min(e["ts"] + e["dur"], b) - max(e["ts"], a)) * 1e-6
            mine[name] = mine.get(name, 0.0) + seconds
            profile.op_seconds[name] = profile.op_seconds.get(name, 0.0) + seconds / len(
                steps.spans)
            profile.op_counts[name] = profile.op_counts.get(name, 0.0) + 1.0 / len(steps.spans)
        profile.step_ops.append(mine)
        profile.busy_op_seconds += tf_steps.union(tf_steps.clipped(inside, a, b)) * per_step
    paths: dict[str, set[str]] = {}
    for e in ops:  # "sequential/dense/Relu:_FusedMatMul": the layer, its node, the op's type
        paths.setdefault(str(e.get("name", "")), set()).add(
            str(e["args"]["long_name"]).rsplit(":", 1)[0].rsplit("/", 1)[0])
    profile.op_paths = {name: sorted(found) for name, found in paths.items()}
    if profile.op_seconds:
        onednn = any(name.startswith(ONEDNN_OP) for name in profile.op_seconds)
        profile.stack["oneDNN's ops (_Mkl*)"] = "yes" if onednn else "none"


def spans_hold_loops(spans: list[dict]) -> bool:
    """Whether a tf.while_loop ran (its ops record their iteration: TensorList pushes and pops,
    or a While op)."""
    return any(e.get("name") in WHILE_OPS for e in spans)


def _percent(text) -> float | None:
    try:
        return float(str(text).rstrip("%")) / 100
    except ValueError:
        return None


def _eager_loops(spans: list[dict], steps: tf_steps.Steps, profile: Profile) -> None:
    """Per-element loops of eager ops, from the trace viewer's events: each eager op is an
    "EagerLocalExecute: <Op>" span inside a step's span on the Python thread."""
    eager = [e for e in spans if str(e.get("name", "")).startswith("EagerLocalExecute: ")
             and (not steps.marked or (e.get("pid"), e.get("tid")) == steps.thread)]
    if not eager:
        return
    per_step = 1.0 / len(steps.spans)
    eager.sort(key=lambda e: e["ts"])
    starts = [e["ts"] for e in eager]
    for begin, end in steps.spans:
        first, last = bisect.bisect_left(starts, begin), bisect.bisect_right(starts, end)
        inside = [e for e in eager[first:last] if e["ts"] + e["dur"] <= end]
        ts, dur = [e["ts"] for e in inside], [e["dur"] for e in inside]
        top = top_level(ts, dur)
        names = [inside[i]["name"].split(": ", 1)[1] for i in top]
        loops, bursts = find_loops([ts[i] for i in top], [dur[i] for i in top], names)
        profile.loops += [loop.per_step(1e-6, per_step) for loop in loops]
        profile.bursts += [burst.per_step(1e-6, per_step) for burst in bursts]
