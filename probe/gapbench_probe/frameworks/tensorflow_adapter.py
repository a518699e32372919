"""TensorFlow: the probe's ops through tf and Keras (eager, and tf.function)."""

from __future__ import annotations

import os
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
from gapbench_probe.plan import FP32, HALF, Case

# PyPI's tensorflow is built with CUDA but brings none of its libraries: without them it sees
# no GPU, and says why only in its start-up log.
GPU_LIBRARIES_HINT = ("its GPU build needs the CUDA libraries of `pip install "
                      "tensorflow[and-cuda]`")

INTRA_OP_FIXED = "TensorFlow's intra-op threads cannot change once it has run an op"


class TensorflowAdapter(Adapter):
    name = "tensorflow"
    module = "tensorflow"
    compiler = "tf.function"
    threads_in_process = False  # its thread pools are made at its first op, then fixed

    @classmethod
    def supports(cls, case: Case) -> bool:
        # TensorFlow's Python API has no pinned host tensors: it stages every copy through
        # its own pinned buffer, so its one host-to-device copy is the pageable one.
        return not (case.op == "copy" and case.axis("memory") == "pinned")

    @classmethod
    def open(cls) -> Adapter:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # its start-up chatter on stderr
        return super().open()

    # ---- facts -------------------------------------------------------------------------------
    def build_info(self) -> dict:
        try:
            return dict(self.fw.sysconfig.get_build_info())
        except Exception:  # noqa: BLE001 - older builds lack it
            return {}

    def cuda_built(self) -> str | None:
        info = self.build_info()
        return str(info["cuda_version"]) if info.get("is_cuda_build") and info.get(
            "cuda_version") else None

    def gpus(self) -> list:
        # The logical devices: a physical GPU that TensorFlow fails to open (its CUDA libraries
        # missing) is listed all the same, and "/GPU:0" then runs on the CPU.
        return self.fw.config.list_logical_devices("GPU")

    def keras(self):
        try:
            import keras  # Keras 3, which TensorFlow 2.16 and later bring
        except ImportError:
            keras = self.fw.keras
        return keras

    def fact_readers(self) -> dict[str, Any]:
        tf = self.fw
        threading = tf.config.threading

        def gpu() -> str:
            gpus = self.gpus()
            if not gpus:
                return f"none: {self.gpu_status()}"
            physical = tf.config.list_physical_devices("GPU")
            details = tf.config.experimental.get_device_details(physical[0]) if physical else {}
            return (f"{details.get('device_name', gpus[0].name)} ({len(gpus)} "
                    f"device{'s' if len(gpus) > 1 else ''})")

        def threads(count: int) -> str:
            return f"{count} (TensorFlow's choice)" if count == 0 else str(count)

        return {
            "framework.version": self.version,
            "framework.cuda_built": lambda: self.cuda_built() or "none (CPU-only build)",
            "framework.cudnn_built": lambda: self.build_info().get("cudnn_version") or "none",
            "framework.gpu": gpu,
            "framework.tf32_matmul": lambda: self.tf32_fact("matmul"),
            "framework.tf32_conv": lambda: self.tf32_fact("conv"),
            "framework.mixed_precision": lambda: self.keras().mixed_precision.global_policy().name,
            "framework.threads_intra_op": lambda: threads(
                threading.get_intra_op_parallelism_threads()),
            "framework.threads_inter_op": lambda: threads(
                threading.get_inter_op_parallelism_threads()),
            "framework.onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "unset (on by default)"),
            "framework.compiled_mode": self.compiler,
        }

    def gpu_status(self) -> str:
        if self.gpus():
            return "ok"
        return gpu_unusable(self.who(), self.cuda_built(), False, driver_cuda_version(),
                            GPU_LIBRARIES_HINT) or ""

    def tf32(self, op: str) -> bool:
        return bool(self.fw.config.experimental.tensor_float_32_execution_enabled())

    def set_tf32(self, on: bool):
        config = self.fw.config.experimental  # one switch for every op
        before = bool(config.tensor_float_32_execution_enabled())
        config.enable_tensor_float_32_execution(on)
        return lambda: config.enable_tensor_float_32_execution(before)

    def set_intra_op_threads(self, count: int):
        threading = self.fw.config.threading
        if threading.get_intra_op_parallelism_threads() != count:
            try:
                threading.set_intra_op_parallelism_threads(count)
            except RuntimeError as e:  # it has run an op: its pools are made
                raise Unavailable(f"{INTRA_OP_FIXED}: {one_line(e)}") from None
        # Never put back: it could not be once an op ran, and the child process that set it
        # ends with its cases.
        return lambda: None

    def intra_op_threads(self) -> int:
        return int(self.fw.config.threading.get_intra_op_parallelism_threads())

    def gpu_capability(self):
        tf = self.fw
        try:
            physical = tf.config.list_physical_devices("GPU")
            capability = tf.config.experimental.get_device_details(physical[0])[
                "compute_capability"]
            major, minor = capability
        except Exception:  # noqa: BLE001 - no GPU it can query: not known
            return None
        return int(major), int(minor)

    def misplaced(self, device: str, result) -> str | None:
        # Soft device placement runs an op that cannot go on the GPU on the CPU, silently.
        if device != "gpu":
            return None
        for tensor in result if isinstance(result, tuple) else (result,):
            where = getattr(tensor, "device", None)
            if isinstance(where, str) and "device:GPU:" not in where:
                return (f"{self.who()} computed it on {where or 'no device'}, not on the GPU "
                        "(soft device placement)")
        return None

    # ---- helpers -----------------------------------------------------------------------------
    def where(self, device: str):
        return self.fw.device("/GPU:0" if device == "gpu" else "/CPU:0")

    def to(self, array: np.ndarray, device: str, math: str = FP32):
        with self.where(device):
            tensor = self.fw.identity(self.fw.constant(array))
            return self.fw.cast(tensor, self.dtype(math)) if math in HALF else tensor

    def sync(self, device: str) -> None:
        """Waits for the GPU: TensorFlow's eager GPU ops return before they finish."""
        if device != "gpu":
            return
        sync = getattr(getattr(self.fw.test, "experimental", None), "sync_devices", None)
        if sync is None:
            raise Unavailable(f"{self.who()} has no tf.test.experimental.sync_devices (2.13 and "
                              "later): its GPU calls cannot be timed to completion")
        sync()

    def run(self, device: str, fn, fetch=None) -> Runner:
        def call():
            with self.where(device):
                out = fn()
            self.sync(device)
            return out
        return Runner(call, fetch or numpy_of)

    # ---- ops ---------------------------------------------------------------------------------
    def sumsq(self, device, x, style):
        tf = self.fw
        xt = self.to(x, device)
        if style == "vectorized":
            return self.run(device, lambda: tf.reduce_sum(xt * xt, axis=1))
        return self.run(device, lambda: tf.stack([tf.reduce_sum(xt[i] * xt[i])
                                                  for i in range(len(x))]))

    def image(self, device, images, delta, flip, style):
        tf = self.fw
        it, dt, ft = self.to(images, device), self.to(delta, device), self.to(flip, device)

        def vectorized():
            out = tf.clip_by_value(tf.cast(it, tf.float32) / 255.0 + dt[:, None, None, None],
                                   0.0, 1.0)
            return tf.where(ft[:, None, None, None], tf.reverse(out, axis=[2]), out)

        def one(i):
            out = tf.clip_by_value(tf.cast(it[i], tf.float32) / 255.0 + dt[i], 0.0, 1.0)
            return tf.image.flip_left_right(out) if flip[i] else out
        if style == "vectorized":
            return self.run(device, vectorized)
        return self.run(device, lambda: tf.stack([one(i) for i in range(len(images))]))

    def conv(self, device, x, w, stride, pad, math=FP32):
        # TensorFlow's CPU convolution takes NHWC only (its layout on the GPU too, in every
        # math): the layout changes before the timing, and back for the check.
        tf = self.fw
        xt = self.to(x.transpose(0, 2, 3, 1), device, math)
        wt = self.to(w.transpose(2, 3, 1, 0), device, math)
        padding = [[0, 0], [pad, pad], [pad, pad], [0, 0]]
        return self.run(device, lambda: tf.nn.conv2d(xt, wt, strides=stride, padding=padding),
                        lambda y: self.float_of(y).transpose(0, 3, 1, 2))

    def lstm(self, device, x, w, u, b, h0, c0, scope, compiled, math=FP32):
        keras = self.keras()
        hidden = u.shape[0]
        dtype = self.dtype(math).name  # the layer in half, as mixed precision would hold it
        with self.where(device):
            if scope == "seq":
                layer = keras.layers.LSTM(hidden, return_sequences=True, return_state=True,
                                          dtype=dtype)
                layer.build(x.shape)
            else:
                layer = keras.layers.LSTMCell(hidden, dtype=dtype)
                layer.build((x.shape[0], x.shape[2]))
            # kernel [in][4H], recurrent [H][4H]; gates i, f, c, o
            layer.set_weights([a.astype(dtype) for a in (w, u, b)])
        xt, ht, ct = (self.to(a, device, math) for a in (x, h0, c0))
        if scope == "seq":
            def fn(xs, h, c):
                seq, _, c_last = layer(xs, initial_state=[h, c])
                return seq, c_last
        else:
            x0 = xt[:, 0]

            def fn(xs, h, c):
                h1, (_, c1) = layer(x0, [h, c])
                return h1, c1
        fn = self.fw.function(fn) if compiled else fn
        return self.run(device, lambda: fn(xt, ht, ct),
                        lambda r: (self.float_of(r[0]), self.float_of(r[1])))

    def matmul(self, device, a, b, math=FP32):
        at, bt = self.to(a, device, math), self.to(b, device, math)
        return self.run(device, lambda: self.fw.matmul(at, bt), self.float_of)

    def float_of(self, tensor) -> np.ndarray:
        """As float32 numpy, whatever the tensor's type."""
        return self.fw.cast(tensor, self.fw.float32).numpy()

    def dense(self, device, params, x, labels, lr, compiled):
        tf, keras = self.fw, self.keras()
        w1, _, w2, _ = params
        with self.where(device):
            model = keras.Sequential([keras.Input((w1.shape[0],)),
                                      keras.layers.Dense(w1.shape[1], activation="relu"),
                                      keras.layers.Dense(w2.shape[1])])
            model.set_weights(list(params))
            loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            optimizer = keras.optimizers.SGD(learning_rate=lr)
        xt, yt = self.to(x, device), self.to(labels, device)

        def step(xs, ys):
            with tf.GradientTape() as tape:
                loss = loss_fn(ys, model(xs, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        step = tf.function(step) if compiled else step
        return self.run(device, lambda: step(xt, yt),
                        lambda loss: (float(loss.numpy()), *model.get_weights()))

    def copy(self, device, host, memory):
        tf = self.fw
        with tf.device("/CPU:0"):
            ht = tf.constant(host)
        return self.run(device, lambda: tf.identity(ht))

    def pipeline(self, device, producer, w, repeats, depth, workers):
        tf = self.fw
        shape = producer(0).shape

        def produce(index):
            return np.int64(index), producer(int(index))
        if workers > 1:  # producers in parallel: tf.data's parallel map, batches kept in order
            def mapped(i):
                index, x = tf.numpy_function(produce, [i], (tf.int64, tf.float32))
                return tf.ensure_shape(index, ()), tf.ensure_shape(x, shape)
            ds = tf.data.Dataset.range(2**62).map(mapped, num_parallel_calls=workers)
        else:
            def generate():
                index = 0
                while True:
                    yield produce(index)
                    index += 1
            ds = tf.data.Dataset.from_generator(generate, output_signature=(
                tf.TensorSpec((), tf.int64), tf.TensorSpec(shape, tf.float32)))
        if depth:
            ds = ds.prefetch(depth)
        else:  # no prefetch at all: nor the one tf.data would add by itself
            options = tf.data.Options()
            options.experimental_optimization.inject_prefetch = False
            options.autotune.enabled = False
            ds = ds.with_options(options)
        batches = iter(ds)
        wt = self.to(w, device)

        def consume(x):
            with self.where(device):
                flat = tf.reshape(x, (x.shape[0], -1))
                for _ in range(repeats):
                    y = tf.matmul(flat, wt)
            self.sync(device)
            return y
        return PipelineRunner(((int(i), x) for i, x in batches), consume).runner(numpy_of)


def numpy_of(tensor: Any) -> np.ndarray:
    return tensor.numpy()
