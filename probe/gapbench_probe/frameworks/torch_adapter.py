"""PyTorch: the probe's ops through torch (eager, and torch.compile where it compiles here)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gapbench_probe.frameworks.base import (
    Adapter,
    PipelineRunner,
    Runner,
    Unavailable,
    gpu_unusable,
    one_line,
)
from gapbench_probe.machine import driver_cuda_version
from gapbench_probe.plan import FP32, HALF


def cudnn_text(version: int | None) -> str:
    """torch's cuDNN number as a version: 92600 -> "9.26.0", 8902 -> "8.9.2"."""
    if not version:
        return "none"
    if version >= 90000:
        return f"{version // 10000}.{version // 100 % 100}.{version % 100}"
    return f"{version // 1000}.{version // 100 % 10}.{version % 100}"


class TorchAdapter(Adapter):
    name = "torch"
    module = "torch"
    compiler = "torch.compile"

    # ---- facts -------------------------------------------------------------------------------
    def sees_gpu(self) -> bool:
        return bool(self.fw.cuda.is_available() and self.fw.cuda.device_count() > 0)

    def fact_readers(self) -> dict[str, Any]:
        t = self.fw

        def cudnn() -> str:
            built = t.version.cuda and t.backends.cudnn.is_available()
            return cudnn_text(t.backends.cudnn.version() if built else None)

        def gpu() -> str:
            if not self.sees_gpu():
                return f"none: {self.gpu_status()}"
            count = t.cuda.device_count()
            return f"{t.cuda.get_device_name(0)} ({count} device{'s' if count > 1 else ''})"
        return {
            "framework.version": self.version,
            "framework.cuda_built": lambda: t.version.cuda or "none (CPU-only build)",
            "framework.cudnn_built": cudnn,
            "framework.gpu": gpu,
            "framework.tf32_matmul": lambda: self.tf32_fact("matmul"),
            "framework.tf32_conv": lambda: self.tf32_fact("conv"),
            "framework.mixed_precision": "off (torch has no global policy: torch.autocast turns "
                                         "it on per region; the probe runs float32, and "
                                         "float16 or bfloat16 where a case's math: says so)",
            "framework.threads_intra_op": t.get_num_threads,
            "framework.threads_inter_op": t.get_num_interop_threads,
            "framework.compiled_mode": self.compiler,
        }

    def gpu_status(self) -> str:
        if not self.sees_gpu():
            return gpu_unusable(self.who(), self.fw.version.cuda, False,
                                driver_cuda_version()) or ""
        try:  # is_available() only counts devices: a CUDA context that cannot start fails here
            self.fw.ones(1, device="cuda").add_(1)
            self.fw.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - whatever CUDA raises, every GPU case skips
            return f"{self.who()} sees a GPU but cannot use it: {one_line(e)}"
        return "ok"

    def tf32(self, op: str) -> bool:
        if op in ("conv", "lstm"):
            return bool(self.fw.backends.cudnn.allow_tf32)
        return bool(self.fw.backends.cuda.matmul.allow_tf32)

    def set_tf32(self, on: bool):
        # cuDNN's switch (conv, nn.LSTM) and cuBLAS's (matmul, nn.LSTMCell's gates, the dense
        # step): both, so that math:tf32 is TF32 and float32 is float32 in every op.
        backends = self.fw.backends
        before = (backends.cuda.matmul.allow_tf32, backends.cudnn.allow_tf32)
        backends.cuda.matmul.allow_tf32 = backends.cudnn.allow_tf32 = on

        def restore():
            backends.cuda.matmul.allow_tf32, backends.cudnn.allow_tf32 = before
        return restore

    def set_intra_op_threads(self, count: int):
        before = self.fw.get_num_threads()
        self.fw.set_num_threads(count)
        return lambda: self.fw.set_num_threads(before)

    def intra_op_threads(self) -> int:
        return int(self.fw.get_num_threads())

    def gpu_capability(self):
        try:
            major, minor = self.fw.cuda.get_device_capability(0)
        except Exception:  # noqa: BLE001 - no GPU it can query: not known
            return None
        return int(major), int(minor)

    # ---- helpers -----------------------------------------------------------------------------
    def dev(self, device: str) -> str:
        return "cuda" if device == "gpu" else "cpu"

    def to(self, array: np.ndarray, device: str, math: str = FP32):
        tensor = self.fw.from_numpy(np.ascontiguousarray(array)).to(self.dev(device))
        return tensor.to(self.dtype(math)) if math in HALF else tensor

    def sync(self, device: str) -> None:
        if device == "gpu":
            self.fw.cuda.synchronize()

    def run(self, device: str, fn, fetch=None) -> Runner:
        """A Runner that calls fn() without autograd and waits for the device."""
        def call():
            with self.fw.no_grad():
                out = fn()
            self.sync(device)
            return out
        return Runner(call, fetch or numpy_of)

    def compiling(self, call):
        """`call`, whose first call compiles: a compiler that fails there, in the forward or the
        backward (no C++ compiler, no Triton), makes the case a skip, not a failure of the
        framework."""
        first = [True]

        def guarded(*args):
            if not first[0]:
                return call(*args)
            try:
                out = call(*args)
            except Exception as e:  # noqa: BLE001 - the compiler's own failures vary
                raise Unavailable(f"{self.compiler} does not work here: {type(e).__name__}: "
                                  f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}"
                                  ) from None
            first[0] = False
            return out
        return guarded

    # ---- ops ---------------------------------------------------------------------------------
    def sumsq(self, device, x, style):
        xt = self.to(x, device)
        if style == "vectorized":
            return self.run(device, lambda: (xt * xt).sum(1))
        return self.run(device, lambda: self.fw.stack([(xt[i] * xt[i]).sum()
                                                       for i in range(len(xt))]))

    def image(self, device, images, delta, flip, style):
        t = self.fw
        it, dt, ft = self.to(images, device), self.to(delta, device), self.to(flip, device)

        def vectorized():
            out = (it.float() / 255 + dt.view(-1, 1, 1, 1)).clamp(0, 1)
            return t.where(ft.view(-1, 1, 1, 1), out.flip(2), out)

        def one(i):
            out = (it[i].float() / 255 + dt[i]).clamp(0, 1)
            return out.flip(1) if flip[i] else out
        if style == "vectorized":
            return self.run(device, vectorized)
        return self.run(device, lambda: t.stack([one(i) for i in range(len(images))]))

    def conv(self, device, x, w, stride, pad, math=FP32):
        xt, wt = self.to(x, device, math), self.to(w, device, math)
        if math == "fp16":
            # Tensor cores read NHWC: float16 runs channels_last, as gapbench's cuDNN float16
            # variant does (float32 and TF32 stay NCHW on both sides).
            memory = self.fw.channels_last
            xt, wt = xt.contiguous(memory_format=memory), wt.contiguous(memory_format=memory)
        f = self.fw.nn.functional
        return self.run(device, lambda: f.conv2d(xt, wt, stride=stride, padding=pad), float_of)

    def lstm(self, device, x, w, u, b, h0, c0, scope, compiled, math=FP32):
        nn = self.fw.nn
        size, hidden = w.shape[0], u.shape[0]
        layer = (nn.LSTM(size, hidden, batch_first=True) if scope == "seq"
                 else nn.LSTMCell(size, hidden)).to(self.dev(device))
        suffix = "_l0" if scope == "seq" else ""
        with self.fw.no_grad():  # torch keeps W as [4H][in]; gates i, f, g, o as Keras
            getattr(layer, f"weight_ih{suffix}").copy_(self.fw.from_numpy(w.T.copy()))
            getattr(layer, f"weight_hh{suffix}").copy_(self.fw.from_numpy(u.T.copy()))
            getattr(layer, f"bias_ih{suffix}").copy_(self.fw.from_numpy(b))
            getattr(layer, f"bias_hh{suffix}").zero_()
        layer = layer.to(self.dtype(math))  # the module in half, as mixed precision would hold it
        xt, ht, ct = (self.to(a, device, math) for a in (x, h0, c0))
        fn = self.fw.compile(layer) if compiled else layer
        if scope == "seq":
            def call():
                out, (_, c_last) = fn(xt, (ht[None], ct[None]))
                return out, c_last[0]
        else:
            x0 = xt[:, 0].contiguous()

            def call():
                return fn(x0, (ht, ct))
        return self.run(device, self.compiling(call) if compiled else call,
                        lambda r: (float_of(r[0]), float_of(r[1])))

    def matmul(self, device, a, b, math=FP32):
        at, bt = self.to(a, device, math), self.to(b, device, math)
        return self.run(device, lambda: at @ bt, float_of)

    def dense(self, device, params, x, labels, lr, compiled):
        t, nn = self.fw, self.fw.nn
        w1, b1, w2, b2 = params
        model = nn.Sequential(nn.Linear(w1.shape[0], w1.shape[1]), nn.ReLU(),
                              nn.Linear(w2.shape[0], w2.shape[1])).to(self.dev(device))
        with t.no_grad():  # nn.Linear keeps W as [out][in]
            for layer, weight, bias in ((model[0], w1, b1), (model[2], w2, b2)):
                layer.weight.copy_(t.from_numpy(weight.T.copy()))
                layer.bias.copy_(t.from_numpy(bias))
        optimizer = t.optim.SGD(model.parameters(), lr=lr)
        xt, yt = self.to(x, device), self.to(labels, device)

        def loss_of(xs, ys):
            return nn.functional.cross_entropy(model(xs), ys)
        forward = self.fw.compile(loss_of) if compiled else loss_of

        def step():
            optimizer.zero_grad(set_to_none=True)
            loss = forward(xt, yt)
            loss.backward()
            optimizer.step()
            self.sync(device)
            return loss

        def fetch(loss):
            return (float(loss.item()), numpy_of(model[0].weight.T), numpy_of(model[0].bias),
                    numpy_of(model[2].weight.T), numpy_of(model[2].bias))
        # The whole step: torch.compile compiles the backward at its first use, outside forward.
        return Runner(self.compiling(step) if compiled else step, fetch)

    def copy(self, device, host, memory):
        ht = self.fw.from_numpy(host)
        pinned = memory == "pinned"
        if pinned:
            ht = ht.pin_memory()

        def call():
            out = ht.to("cuda", non_blocking=pinned)
            self.sync(device)
            return out
        return Runner(call, numpy_of)

    def pipeline(self, device, producer, w, repeats, depth, workers):
        t = self.fw
        data = t.utils.data
        loaders = 0 if depth == 0 else workers
        loader = data.DataLoader(
            dataset_class()(producer), batch_size=None, num_workers=loaders,
            prefetch_factor=max(1, depth // workers) if loaders else None,
            pin_memory=device == "gpu")
        batches = iter(loader)
        wt = self.to(w, device)

        def consume(x):
            x = x.to(self.dev(device), non_blocking=True).reshape(x.shape[0], -1)
            with t.no_grad():
                for _ in range(repeats):
                    y = x @ wt
            self.sync(device)
            return y

        def close():
            shutdown = getattr(batches, "_shutdown_workers", None)
            if shutdown:
                shutdown()
        return PipelineRunner(_indexed(batches), consume, close).runner(numpy_of)


def numpy_of(tensor: Any) -> np.ndarray:
    return tensor.detach().cpu().numpy()


def float_of(tensor: Any) -> np.ndarray:
    """As float32 numpy, whatever the tensor's type (numpy has no bfloat16)."""
    return numpy_of(tensor.float())


def _indexed(batches):
    for index, x in batches:
        yield int(index), x


def _batches_class():
    """torch's IterableDataset of endless batches: batch i from the producer; with several worker
    processes, worker k makes batches k, k + workers, ... (the DataLoader takes them in turn, so
    in order). Made at first use, so that importing this module needs no torch, and reachable
    as this module's TorchBatches, so that worker processes started by pickling find it."""
    import torch.utils.data as data

    class TorchBatches(data.IterableDataset):
        def __init__(self, produce):
            self.produce = produce

        def __iter__(self):
            info = data.get_worker_info()
            index, stride = (info.id, info.num_workers) if info else (0, 1)
            while True:
                yield index, data.default_convert(self.produce(index))
                index += stride
    TorchBatches.__module__, TorchBatches.__qualname__ = __name__, "TorchBatches"
    return TorchBatches


def dataset_class():
    if "TorchBatches" not in globals():
        globals()["TorchBatches"] = _batches_class()
    return globals()["TorchBatches"]


def __getattr__(name: str):
    if name == "TorchBatches":
        return dataset_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
