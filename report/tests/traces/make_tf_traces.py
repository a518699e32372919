"""Real TensorFlow CPU profiler output for `gapbench-report explain`'s tests, each slow in one way.

    .venv-tf/bin/python report/tests/traces/make_tf_traces.py [--out report/tests/data/traces]

Needs TensorFlow (ci/setup --tensorflow puts its CPU build in .venv-tf). The corpus's traces
(loop_index, loop_iterate, clean_many_layers; CORPUS_STEPS steps each) were made on the 2-core
CI machine with tensorflow-cpu 2.21.0, Keras 3.15.1, numpy 2.4.6, Python 3.11.7; the first
three (FIRST) earlier, by a TensorFlow build that was not recorded. Each case trains a small
Keras MLP for a few steps under tf.profiler, each step marked as TensorFlow's input-pipeline
analyser reads steps (tf.profiler.experimental.Trace("train", step_num=i, _r=1)), and keeps the
.xplane.pb that the profiler writes under plugins/profile/ (as tf_cpu_<case>.xplane.pb). CI does
not run this: the files it wrote are committed beside it.

- dataloader: tf.data from a Python generator that decodes each sample in NumPy, one at a time
  (no parallel map): the step waits for its input.
- loop: per-element Python loop of eager ops in the step (each row normalised alone).
- clean: one batch in memory, repeated and prefetched by tf.data; the step a tf.function.
- loop_index, loop_iterate: the per-element loop as s[i] per element and as `for v in s`.
- clean_many_layers: an eager step of 30 small layers, its optimizer's per-variable updates.
- loop_rows_elements, clean_manual_update: issue 42's hold-out (tests/traces/HOLDOUT.md).

Every trace is made as tf.profiler records without options (its defaults: host_tracer_level=2,
python_tracer_level=0), so each is its own default-settings twin. The most detail the profiler
offers on a CPU (host_tracer_level=3, python_tracer_level=1) was tried on the corpus and added no
event explain reads with TensorFlow 2.21 on Python 3.11 (its Python tracer recorded none), and
TensorFlow's CPU traces carry no input shapes either way: no second twin is kept.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

FEATURES = 32 * 32
STEPS = 6


def decoded_samples():
    """Per-sample decoding in Python, as a from_generator pipeline does it."""
    i = 0
    while True:
        rng = np.random.default_rng(i)
        image = rng.integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
        for _ in range(40):
            image = np.clip(image.astype(np.float32) * 1.01 - 1.0, 0, 255).astype(np.uint8)
        yield image.mean(axis=2).reshape(-1).astype(np.float32) / 255.0, np.int32(i % 10)
        i += 1


def build():
    tf.keras.utils.set_random_seed(0)
    net = tf.keras.Sequential([tf.keras.layers.Input((FEATURES,)),
                               tf.keras.layers.Dense(128, activation="relu"),
                               tf.keras.layers.Dense(10)])
    return net, tf.keras.optimizers.SGD(0.01)


def make_step(net, opt):
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, net(x))
        opt.apply_gradients(zip(tape.gradient(loss, net.trainable_variables),
                                net.trainable_variables))
        return loss
    return step


def in_memory(batch: int):
    rng = np.random.default_rng(1)
    x = rng.random((batch * 64, FEATURES), dtype=np.float32)
    y = rng.integers(0, 10, batch * 64).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices((x, y))


def case_dataloader(step):
    spec = (tf.TensorSpec((FEATURES,), tf.float32), tf.TensorSpec((), tf.int32))
    return tf.data.Dataset.from_generator(decoded_samples, output_signature=spec).batch(32), step


def case_loop(step):
    def body(x, y):
        rows = [(x[i] - tf.reduce_mean(x[i])) / (tf.math.reduce_std(x[i]) + 1e-6)
                for i in range(x.shape[0])]  # per-element eager ops: the classic slow loop
        return step(tf.stack(rows), y)
    return in_memory(64).batch(64).repeat(), body


def case_clean(step):
    rng = np.random.default_rng(1)
    batch = (rng.random((256, FEATURES), dtype=np.float32),
             rng.integers(0, 10, 256).astype(np.int32))
    # One batch held in memory, repeated and prefetched: input costs nothing.
    return tf.data.Dataset.from_tensors(batch).repeat().prefetch(tf.data.AUTOTUNE), step


# ---- the corpus: the per-element loop in other styles, and a clean eager step (issue 36) -----
# The same work as make_torch_traces.py's loops: each of SCORES per-sample scores scaled, shifted
# and clipped at 0, one element at a time; one vectorized op would do.
SCORES, SCALE, SHIFT = 256, 0.5, 0.25


def scored(step, weigh):
    def body(x, y):
        weigh(tf.reshape(x[:, :SCORES // 8], [-1])[:SCORES])
        return step(x, y)
    return in_memory(64).batch(64).repeat(), body


def weigh_index(s):
    return tf.stack([tf.maximum(s[i] * SCALE + SHIFT, 0.0)  # s[i]: a StridedSlice each
                     for i in range(s.shape[0])])


def weigh_iterate(s):
    out = []
    for v in s:  # for v in x over an eager tensor
        out.append(tf.maximum(v * SCALE + SHIFT, 0.0))
    return tf.stack(out)


def case_loop_index(step):
    return scored(step, weigh_index)


def case_loop_iterate(step):
    return scored(step, weigh_iterate)


def case_clean_many_layers(_):
    """An eager training step (no tf.function) of a model of 30 small layers: hundreds of tiny
    eager ops a step, the optimizer's per-variable updates among them, none on one element."""
    tf.keras.utils.set_random_seed(0)
    net = tf.keras.Sequential([tf.keras.layers.Input((FEATURES,)),
                               *[tf.keras.layers.Dense(32, activation="relu")
                                 for _ in range(30)], tf.keras.layers.Dense(10)])
    opt = tf.keras.optimizers.SGD(0.01, momentum=0.9)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def body(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, net(x))
        opt.apply_gradients(zip(tape.gradient(loss, net.trainable_variables),
                                net.trainable_variables))
        return loss
    return in_memory(128).batch(128).repeat().prefetch(tf.data.AUTOTUNE), body


# ---- issue 42: the hold-out's TensorFlow styles -------------------------------------------------

def case_loop_rows_elements(step):
    """Hold-out: eager min-max scaling as a loop over each sample and each of its values."""
    def body(x, y):
        rows = []
        for row in x[:, :16]:
            lo, hi = tf.reduce_min(row), tf.reduce_max(row)
            rows.append(tf.stack([(v - lo) / (hi - lo) for v in row]))
        return step(tf.concat([tf.stack(rows), x[:, 16:]], axis=1), y)
    return in_memory(64).batch(64).repeat(), body


def case_clean_manual_update(_):
    """Hold-out, clean: an eager step of 30 small layers updated by hand, one assign_sub per
    variable."""
    tf.keras.utils.set_random_seed(0)
    net = tf.keras.Sequential([tf.keras.layers.Input((FEATURES,)),
                               *[tf.keras.layers.Dense(32, activation="relu")
                                 for _ in range(30)], tf.keras.layers.Dense(10)])
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def body(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, net(x))
        for v, g in zip(net.trainable_variables, tape.gradient(loss, net.trainable_variables)):
            v.assign_sub(0.01 * g)
        return loss
    return in_memory(128).batch(128).repeat().prefetch(tf.data.AUTOTUNE), body


# The first traces, with STEPS steps; the corpus's, CORPUS_STEPS (small files); those whose
# steps are too many events to keep (a loop of 1,024 elements: 3.6 MB for 3 steps), cut to their
# first step once written (first_step).
FIRST = ("dataloader", "loop", "clean")
CORPUS_STEPS = 3
FIRST_STEP_ONLY = ("loop_rows_elements",)
CASES = {name[len("case_"):]: f for name, f in list(globals().items()) if name.startswith("case_")}


def profile(case: str, out: Path) -> Path:
    tf.config.threading.set_intra_op_parallelism_threads(1)
    net, opt = build()
    dataset, body = CASES[case](make_step(net, opt))
    batches = iter(dataset)
    for _ in range(2):  # warm-up: tracing of the tf.function, the iterator's start
        body(*next(batches))
    with tempfile.TemporaryDirectory() as tmp:
        tf.profiler.experimental.start(tmp)  # the profiler's defaults: no options
        for i in range(STEPS if case in FIRST else CORPUS_STEPS):
            with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
                body(*next(batches))
        tf.profiler.experimental.stop()
        written = sorted(Path(tmp).glob("plugins/profile/*/*.xplane.pb"))
        target = out / f"tf_cpu_{case}.xplane.pb"
        shutil.copyfile(written[0], target)
    if case in FIRST_STEP_ONLY:
        first_step(target)
    return target


def first_step(path: Path) -> None:
    """The trace cut to its first step, as if the profiler had stopped there: every event of every
    line that starts after the first step's marker ends is dropped."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    for plane in space.planes:
        marker = {k for k, m in plane.event_metadata.items() if m.name == "train"}
        steps = [e for line in plane.lines for e in line.events if e.metadata_id in marker]
        if not steps:
            continue
        first = min(steps, key=lambda e: e.offset_ps)
        end = first.offset_ps + first.duration_ps
        for line in plane.lines:
            kept = [e for e in line.events if e.offset_ps <= end]
            del line.events[:]
            line.events.extend(kept)
    path.write_bytes(space.SerializeToString())


def main() -> None:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=here.parent / "data" / "traces")
    parser.add_argument("cases", nargs="*", default=list(CASES))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for case in args.cases:
        print(profile(case, args.out))


if __name__ == "__main__":
    main()
