"""A small fake framework for the tests: an Adapter whose ops are numpy (float32 results of the
probe's own references), whose framework module is a stand-in put into sys.modules, and whose
faults are chosen per op: a wrong result, an error in the middle of the timing, a feature that
is unavailable here.

Its arithmetic is a real framework's on a GPU: conv, lstm and matmul read their inputs rounded to
float16 or bfloat16 for math:fp16 and bf16 and store the result in that format, and read them
truncated to TF32 wherever its TF32 switch is on (on by default, as TensorFlow's is), so that a
float32 case the probe forgot to switch off computes in TF32."""

from __future__ import annotations

import sys
import types
from typing import ClassVar

import numpy as np

from gapbench_probe import problems
from gapbench_probe.frameworks.base import Adapter, PipelineRunner, Runner, Unavailable
from gapbench_probe.plan import DEVICES, FP32, HALF, Case

MODULE = "gapbench_probe_fake_framework"
USER_THREADS = 3  # the intra-op threads the fake framework starts with: the user's setting


def case(op: str, *axes: tuple[str, object], devices: tuple[str, ...] = DEVICES) -> Case:
    """A case of the tests' own sizes (the probe's come from gapbench's list)."""
    return Case(op, tuple((k, str(v)) for k, v in axes), devices)


def rounded(x: np.ndarray, fmt: str) -> np.ndarray:
    """float32 `x` as the format holds it: TF32 truncated to 10 mantissa bits, bfloat16 and
    float16 rounded to nearest; float32 as it is."""
    x = np.asarray(x, dtype=np.float32)
    if fmt == "fp16":
        return x.astype(np.float16).astype(np.float32)
    bits = x.view(np.uint32)
    if fmt == "tf32":
        return (bits & np.uint32(0xFFFFE000)).view(np.float32)
    if fmt == "bf16":
        half = np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
        return ((bits + half) & np.uint32(0xFFFF0000)).view(np.float32)
    return x


def install_module(version: str = "1.2.3") -> types.ModuleType:
    module = types.ModuleType(MODULE)
    module.__version__ = version
    sys.modules[MODULE] = module
    return module


class FakeAdapter(Adapter):
    name = "torch"
    module = MODULE
    compiler = "fake.compile"
    faults: ClassVar[dict[str, str]] = {}  # op -> "wrong" | "raise" | "unavailable"
    gpu: ClassVar[str] = "ok"
    switchable: ClassVar[bool] = True  # False: set_tf32 does nothing (a framework ignoring it)
    capability: ClassVar[tuple[int, int]] = (9, 0)  # the GPU's compute capability
    instances: ClassVar[tuple[FakeAdapter, ...]] = ()

    def gpu_capability(self):
        return self.capability

    @classmethod
    def open(cls):
        # For the tests to read what the run left set: the last one opened, and every one (a
        # child process's, where the test plays it in this one).
        cls.opened = super().open()
        cls.instances = (*cls.instances, cls.opened)
        return cls.opened

    def __init__(self, framework):
        super().__init__(framework)
        self.tf32_on = True
        self.tf32_calls: list[bool] = []  # what the probe's calls to set_tf32 asked for
        self.threads = USER_THREADS  # the user's intra-op threads
        self.threads_seen: list[int] = []  # what the probe's calls to set_intra_op_threads asked

    def set_intra_op_threads(self, count):
        before = self.threads
        self.threads = count
        self.threads_seen.append(count)

        def restore():
            self.threads = before
        return restore

    def intra_op_threads(self):
        return self.threads

    def set_tf32(self, on):
        self.tf32_calls.append(on)
        before = self.tf32_on
        if self.switchable:
            self.tf32_on = on

        def restore():
            self.tf32_on = before
        return restore

    def read(self, device: str, math: str, *arrays: np.ndarray) -> list[np.ndarray]:
        """The inputs as the arithmetic reads them."""
        fmt = math if math != FP32 else "tf32" if device == "gpu" and self.tf32_on else FP32
        return [rounded(a, fmt) for a in arrays]

    @staticmethod
    def store(math: str, out):
        """The result as the format stores it."""
        if math in HALF:
            return tuple(rounded(o, math) for o in out) if isinstance(out, tuple) \
                else rounded(out, math)
        return out

    def fact_readers(self):
        return {"framework.version": self.version(), "framework.cuda_built": "12.4",
                "framework.gpu": "Fake GPU (1 device)" if self.gpu == "ok" else f"none: {self.gpu}"}

    def gpu_status(self):
        return self.gpu

    def runner(self, op: str, fn, fetch=lambda v: v) -> Runner:
        fault = self.faults.get(op)
        calls = [0]

        def call():
            calls[0] += 1
            if fault == "unavailable":
                raise Unavailable(f"{self.compiler} does not work here: no compiler")
            if fault == "raise" and calls[0] > 3:  # after the check, in the middle of the timing
                raise RuntimeError(f"{op} kernel crashed\nsecond line of the error")
            out = fn()
            if fault == "wrong":
                return tuple(np.asarray(o) * 1.5 for o in out) if isinstance(out, tuple) \
                    else np.asarray(out) * 1.5
            return out
        return Runner(call, fetch)

    def sumsq(self, device, x, style):
        return self.runner("sumsq", lambda: (x * x).sum(1, dtype=np.float32))

    def image(self, device, images, delta, flip, style):
        return self.runner("image", lambda: problems.image_op_float32(images, delta, flip))

    def conv(self, device, x, w, stride, pad, math=FP32):
        def run():
            return self.store(math, problems.conv_reference(*self.read(device, math, x, w), stride,
                                                            pad).astype(np.float32))
        return self.runner("conv", run)

    def lstm(self, device, x, w, u, b, h0, c0, scope, compiled, math=FP32):
        def run():
            hs, cs, _ = problems.lstm_reference(*self.read(device, math, x, w, u, b, h0, c0))
            h = hs.transpose(1, 0, 2) if scope == "seq" else hs[0]
            return self.store(math, (h.astype(np.float32), cs[-1].astype(np.float32)))
        return self.runner("lstm", run)

    def matmul(self, device, a, b, math=FP32):
        def run():
            a_read, b_read = self.read(device, math, a, b)
            return self.store(math, (a_read.astype(np.float64) @ b_read).astype(np.float32))
        return self.runner("matmul", run)

    def dense(self, device, params, x, labels, lr, compiled):
        def run():
            loss, _, after, _ = problems.dense_reference(params, x, labels, lr)
            return (np.float32(loss), *(p.astype(np.float32) for p in after))
        return self.runner("dense", run)

    def copy(self, device, host, memory):
        return self.runner("copy", lambda: host.copy())

    def pipeline(self, device, producer, w, repeats, depth, workers):
        def batches():
            index = 0
            while True:
                yield index, producer(index)
                index += 1
        return PipelineRunner(batches(), lambda x: x.reshape(len(x), -1) @ w).runner(
            lambda y: y)


def fake(name: str = "torch", gpu: str = "ok", switchable: bool = True,
         capability: tuple[int, int] = (9, 0), threads_in_process: bool = True,
         **faults: str) -> type[FakeAdapter]:
    """A FakeAdapter class under a framework's name, with its GPU status and faults; with
    threads_in_process False, its lib_threads cases run in a child process as TensorFlow's."""
    return type(f"Fake{name.capitalize()}", (FakeAdapter,),
                {"name": name, "gpu": gpu, "faults": faults, "switchable": switchable,
                 "capability": capability, "threads_in_process": threads_in_process})


def tiny_cases(profile=None) -> list[Case]:
    """One small case of every op, so a whole run takes well under a second."""
    return [
        case("sumsq", ("style", "elementwise"), ("rows", 8), ("cols", 4)),
        case("sumsq", ("style", "vectorized"), ("rows", 8), ("cols", 4)),
        case("image", ("style", "vectorized"), ("n", 2), ("hw", 4), ("c", 3)),
        case("conv", ("n", 1), ("c", 2), ("hw", 5), ("k", 2), ("r", 3), ("stride", 1),
             ("pad", 1)),
        case("lstm", ("scope", "seq"), ("batch", 2), ("input", 3), ("hidden", 4), ("steps", 3)),
        case("lstm", ("scope", "step"), ("batch", 2), ("input", 3), ("hidden", 4), ("steps", 3),
             ("mode", "compiled")),
        case("copy", ("dir", "h2d"), ("memory", "pinned"), ("bytes", 64), devices=("gpu",)),
        case("pipeline", ("produce_ms", 0), ("consume_ms", 0), ("depth", 0), ("workers", 1)),
        case("matmul", ("n", 4)),
        case("matmul", ("n", 48), ("math", "bf16"), devices=("gpu",)),
        case("dense", ("batch", 4)),
        case("lstm_step", ("batch", 2), ("input", 3), ("hidden", 4), ("lib_threads", 1),
             devices=("cpu",)),
        case("lstm_step", ("batch", 2), ("input", 3), ("hidden", 4), ("lib_threads", "all"),
             devices=("cpu",)),
    ]
