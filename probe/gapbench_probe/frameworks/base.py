"""What every framework adapter provides, and the logic they share: whether a framework is
usable at all, whether it sees the GPU (and if not, why, naming a CUDA mismatch), and the runner
that times an input pipeline.

An adapter module imports its framework only in Adapter.open(): the probe lists a framework's
benchmarks (and skips them with the reason) in a Python that lacks it."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from gapbench_probe.machine import driver_cuda_version, parse_cuda
from gapbench_probe.plan import FP32, Case
from gapbench_probe.problems import ARITHMETIC, Arithmetic

MESSAGE_LIMIT = 400  # characters of an error kept (one line)
TF32_PER_CASE = "the probe's GPU cases: on for math:tf32, off for float32"
# The compute capability whose tensor cores compute each math (as gapbench's device probe has it).
TENSOR_CORES = {"fp16": (7, 0), "tf32": (8, 0), "bf16": (8, 0)}


def one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}"[:MESSAGE_LIMIT] if text else type(e).__name__


class Unavailable(Exception):
    """The framework, or one feature of it, cannot be used here; str() is the reason."""


@dataclass
class Runner:
    """One benchmark's prepared op: call() does one call to completion (synchronized) and returns
    the framework's result; fetch() turns a result into numpy for the check."""

    call: Callable[[], Any]
    fetch: Callable[[Any], Any]
    close: Callable[[], None] = lambda: None
    counters: Callable[[], dict[str, float]] | None = None  # measured since reset()
    reset: Callable[[], None] | None = None


class PipelineRunner:
    """Times a training loop over an input pipeline: each call takes the next batch (waiting for
    it where the producer is behind) and runs the consumer on it. Counts what gapbench's pipeline
    family counts: the share of time spent waiting (idle_fraction) and the consumer's cost."""

    def __init__(self, batches: Iterator[tuple[int, Any]], consume: Callable[[Any], Any],
                 close: Callable[[], None] = lambda: None):
        self.batches, self.consume, self.close_batches = batches, consume, close
        self.reset()

    def reset(self) -> None:
        self.waited = self.busy = 0.0
        self.count = 0

    def call(self) -> tuple[int, Any]:
        start = time.perf_counter()
        index, x = next(self.batches)
        got = time.perf_counter()
        y = self.consume(x)
        self.waited += got - start
        self.busy += time.perf_counter() - got
        self.count += 1
        return int(index), y

    def counters(self) -> dict[str, float]:
        total = self.waited + self.busy
        return {"idle_fraction": self.waited / total if total else 0.0,
                "consume_ms_measured": 1e3 * self.busy / max(self.count, 1)}

    def runner(self, fetch: Callable[[Any], Any]) -> Runner:
        return Runner(self.call, lambda r: (r[0], fetch(r[1])), self.close_batches,
                      self.counters, self.reset)


def cuda_major_newer(built: str | None, driver: str | None) -> bool:
    """Whether the framework's CUDA has a newer major version than the driver supports: that
    cannot run at all (a newer minor one can, through CUDA's minor-version compatibility)."""
    b, d = parse_cuda(built), parse_cuda(driver)
    return bool(b and d and b[0] > d[0])


def gpu_unusable(who: str, cuda_built: str | None, sees_gpu: bool,
                 driver: tuple[str | None, str] | None = None, hint: str = "") -> str | None:
    """None when the framework sees a GPU; else why not, naming the CUDA mismatch as the cause
    only where it is one, a newer major version ("torch 2.5.1 built for CUDA 13.0; the driver
    supports 12.4"); otherwise "sees no GPU" with both versions, and the framework's `hint`."""
    if sees_gpu:
        return None
    if not cuda_built:
        return f"{who} is a CPU-only build (no CUDA)"
    driver_cuda, why = driver if driver is not None else driver_cuda_version()
    if driver_cuda is None:
        return f"{who} built for CUDA {cuda_built}; {why}"
    if cuda_major_newer(cuda_built, driver_cuda):
        return f"{who} built for CUDA {cuda_built}; the driver supports {driver_cuda}"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    shown = f" with CUDA_VISIBLE_DEVICES={visible!r}" if visible is not None else ""
    return (f"{who} sees no GPU{shown} (built for CUDA {cuda_built}, the driver supports "
            f"{driver_cuda}){'; ' + hint if hint else ''}")


class Adapter:
    """One framework. Subclasses name it, import it in open(), and implement the ops: each takes
    the device and the problem's inputs and returns a Runner whose data already sits on the
    device (what is timed is the call, not the set-up)."""

    name: ClassVar[str]
    module: ClassVar[str]  # what `import` takes
    compiler: ClassVar[str]  # the compiled mode, in the framework's words
    # Whether set_intra_op_threads works at any time; False: only before the framework's first
    # op, and its lib_threads cases run in a child process per count (threads_child.py).
    threads_in_process: ClassVar[bool] = True

    def __init__(self, framework: Any):
        self.fw = framework

    @classmethod
    def supports(cls, case: Case) -> bool:
        """Whether the framework has this case at all (known without importing it)."""
        return True

    @classmethod
    def open(cls) -> Adapter:
        try:
            framework = importlib.import_module(cls.module)
        except ModuleNotFoundError as e:
            if e.name != cls.module:
                raise Unavailable(f"{cls.name} does not import: {e}") from None
            raise Unavailable(f"{cls.name} is not installed in this Python "
                              f"({sys.executable})") from None
        except Exception as e:  # noqa: BLE001 - any import failure makes it unusable
            raise Unavailable(f"{cls.name} does not import: {type(e).__name__}: {e}") from None
        return cls(framework)

    # ---- facts -------------------------------------------------------------------------------
    def version(self) -> str:
        return str(self.fw.__version__)

    def who(self) -> str:
        return f"{self.name} {self.version()}"

    def fact_readers(self) -> dict[str, Any]:
        """The framework.* context keys, each a value or a function that reads it."""
        raise NotImplementedError

    def facts(self) -> dict[str, str]:
        """The framework.* context keys; one that cannot be read (a CUDA call failing) is
        "unknown: <error>", and the others are still given."""
        out = {}
        for key, fact in self.fact_readers().items():
            try:
                out[key] = str(fact() if callable(fact) else fact)
            except Exception as e:  # noqa: BLE001 - whatever the framework raises
                out[key] = f"unknown: {one_line(e)}"
        return out

    def gpu_status(self) -> str:
        """"ok" where the framework sees a GPU, else the reason."""
        raise NotImplementedError

    def tf32(self, op: str) -> bool:
        """Whether the framework, left to itself, computes this op's float32 in TF32 on the GPU
        (its default, recorded in the context; the probe sets it per case)."""
        return False

    def tf32_fact(self, op: str) -> str:
        """The framework.tf32_* context keys: the framework's default, and that the probe does
        not keep it ("on" alone would mean that its float32 GPU figures are TF32)."""
        return f"{'on' if self.tf32(op) else 'off'} by default; {TF32_PER_CASE}"

    def set_tf32(self, on: bool) -> Callable[[], None]:
        """Turns the framework's TF32 for float32 on the GPU on or off, every op; returns what
        puts the setting back."""
        return lambda: None

    def gpu_capability(self) -> tuple[int, int] | None:
        """The GPU's compute capability, (8, 0); None where the framework cannot say."""
        return None

    def dtype(self, math: str):
        """The tensors' type for the case's math: float16, bfloat16, else float32 (PyTorch and
        TensorFlow name them alike)."""
        fw = self.fw
        return {"fp16": fw.float16, "bf16": fw.bfloat16}.get(math, fw.float32)

    def lacks(self, math: str) -> str | None:
        """Why this GPU's tensor cores cannot compute in `math`, in gapbench's words; None where
        they can, or where the framework does not say which GPU it has."""
        need = TENSOR_CORES.get(math)
        have = self.gpu_capability() if need else None
        if have is None or have >= need:
            return None
        what = "TF32" if math == "tf32" else math
        return (f"{what} tensor cores need compute capability {need[0]}.{need[1]}, this GPU is "
                f"{have[0]}.{have[1]}")

    @contextlib.contextmanager
    def arithmetic(self, device: str, math: str) -> Iterator[Arithmetic]:
        """While a case is set up, checked and timed: the framework's TF32 on for math:tf32 and
        off for every other GPU case (float32 is float32, whatever the framework's default);
        yields the arithmetic its result is checked in. The CPU computes float32 as it is. A
        math this GPU's tensor cores lack is Unavailable: the case is skipped, saying so."""
        if device != "gpu":
            yield ARITHMETIC[FP32]
            return
        lacking = self.lacks(math)
        if lacking:
            raise Unavailable(lacking)
        restore = self.set_tf32(math == "tf32")
        try:
            yield ARITHMETIC[math]
        finally:
            restore()

    def set_intra_op_threads(self, count: int) -> Callable[[], None]:
        """Sets the framework's intra-op threads to `count`; returns what puts the user's
        setting back. Unavailable (the case skipped, saying why) where it cannot here."""
        raise Unavailable(f"{self.name} cannot set its intra-op threads")

    def intra_op_threads(self) -> int:
        """The intra-op threads in force: the lib_threads counter of a threads case."""
        raise NotImplementedError

    @contextlib.contextmanager
    def lib_threads(self, count: int | None) -> Iterator[int | None]:
        """While a case of gapbench's threads family is set up, checked and timed: the framework
        on `count` intra-op threads, the user's setting put back after; yields the threads in
        force. None: a case without lib_threads, the framework's setting untouched."""
        if count is None:
            yield None
            return
        restore = self.set_intra_op_threads(count)
        try:
            yield self.intra_op_threads()
        finally:
            restore()

    def misplaced(self, device: str, result: Any) -> str | None:
        """Why the result of a call on `device` did not come from there, or None where it did."""
        return None

    # ---- ops (numpy in, Runner out) ------------------------------------------------------------
    # conv, lstm and matmul also take the case's math: the framework holds the data in float16
    # or bfloat16 for fp16 and bf16 (float32 otherwise; TF32 is arithmetic()'s), and fetch()
    # returns float32.
    def sumsq(self, device: str, x, style: str) -> Runner:
        raise NotImplementedError

    def image(self, device: str, images, delta, flip, style: str) -> Runner:
        raise NotImplementedError

    def conv(self, device: str, x, w, stride: int, pad: int, math: str = FP32) -> Runner:
        raise NotImplementedError

    def lstm(self, device: str, x, w, u, b, h0, c0, scope: str, compiled: bool,
             math: str = FP32) -> Runner:
        raise NotImplementedError

    def matmul(self, device: str, a, b, math: str = FP32) -> Runner:
        raise NotImplementedError

    def dense(self, device: str, params, x, labels, lr: float, compiled: bool) -> Runner:
        raise NotImplementedError

    def copy(self, device: str, host, memory: str) -> Runner:
        raise NotImplementedError

    def pipeline(self, device: str, producer: Callable[[int], Any], w, repeats: int, depth: int,
                 workers: int) -> Runner:
        raise NotImplementedError
