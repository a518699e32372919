"""Real TensorFlow CPU profiler output for `gapbench-report explain`'s tests, each slow in one way.

    .venv-tf/bin/python report/tests/traces/make_tf_traces.py [--out report/tests/data/traces]
        [CASE_OR_JOB...]

Needs TensorFlow, and TensorBoard for the fit jobs (ci/setup --tensorflow puts both in
.venv-tf). The corpus's traces (loop_index, loop_iterate, clean_many_layers; CORPUS_STEPS steps
each) were made on the 2-core CI machine with tensorflow-cpu 2.21.0, Keras 3.15.1, numpy 2.4.6,
Python 3.11.7; the first three (FIRST) earlier, by a TensorFlow build that was not recorded; issue
59's JOBS with the same versions and tensorboard 2.21.0. Each case trains a small Keras MLP for a
few steps under tf.profiler, each step marked as TensorFlow's input-pipeline analyser reads steps
(tf.profiler.experimental.Trace("train", step_num=i, _r=1)), and keeps the .xplane.pb that the
profiler writes under plugins/profile/ (as tf_cpu_<case>.xplane.pb). Each of issue 59's JOBS marks
its steps as one kind of user does (Keras 3's fit with the TensorBoard callback's profile_batch,
Keras 2's marker, Trace with or without _r=1, none) and runs JOB_STEPS of them. CI does not run
this: the files it wrote are committed beside it.

- dataloader: tf.data from a Python generator that decodes each sample in NumPy, one at a time
  (no parallel map): the step waits for its input.
- loop: per-element Python loop of eager ops in the step (each row normalised alone).
- clean: one batch in memory, repeated and prefetched by tf.data; the step a tf.function.
- loop_index, loop_iterate: the per-element loop as s[i] per element and as `for v in s`.
- clean_many_layers: an eager step of 30 small layers, its optimizer's per-variable updates.
- loop_rows_elements, clean_manual_update: issue 42's hold-out (tests/traces/HOLDOUT.md).
- --pairs (issue 61, `explain --against`): pair_onednn_here and pair_onednn_there, one dense
  step (tf.function, in-memory batches) made in two processes, the first with
  TF_ENABLE_ONEDNN_OPTS=0, the second with TensorFlow's default (tests/traces/AGAINST.md).
- JOBS (issue 59): fit_map, lstm_map, unmarked_map: a sequential tf.data map (a stateful random
  op keeps tf.data from running it in parallel) without prefetch, under Keras 3's fit, an LSTM's
  custom loop (_r=1) and no marker; fit_clean, lstm_clean: held in memory, or a parallel map, and
  prefetched; fit_batch2: fit at batch 2; numpy_rows: a per-row NumPy loop in the step (Trace
  without _r=1); py_function: the same loop through tf.py_function in the compiled step;
  session_per_sample: TF1's Session.run once per sample; h59_*: issue 59's hold-out.

Every trace is made as tf.profiler records without options (its defaults: host_tracer_level=2,
python_tracer_level=0), so each is its own default-settings twin. The most detail the profiler
offers on a CPU (host_tracer_level=3, python_tracer_level=1) was tried on the corpus and added no
event explain reads with TensorFlow 2.21 on Python 3.11 (its Python tracer recorded none), and
TensorFlow's CPU traces carry no input shapes either way: no second twin is kept.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass
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


# ---- issue 59: steps marked as users mark them, recurrent models, tf.data's map ---------------
# Each job runs a few profiled steps its own way (Keras 3's fit with the real TensorBoard callback,
# Keras 2's marker, Trace with or without _r=1, no marker), so it records its own profile.
SEQ, CHANNELS, UNITS, RNN_BATCH, JOB_STEPS, IMAGE = 16, 8, 32, 32, 4, 128


def recurrent(layer):
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.layers.Input((SEQ, CHANNELS)), layer(UNITS),
                                 tf.keras.layers.Dense(10)])
    model.compile(optimizer="sgd",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def mlp():
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.layers.Input((SEQ, CHANNELS)),
                                 tf.keras.layers.Flatten(),
                                 tf.keras.layers.Dense(128, activation="relu"),
                                 tf.keras.layers.Dense(10)])
    model.compile(optimizer="sgd",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


MODELS = {"lstm": lambda: recurrent(tf.keras.layers.LSTM),
          "gru": lambda: recurrent(tf.keras.layers.GRU), "mlp": mlp}


def decode(seed, label, rounds):
    """A sample's decoding and augmentation as graph ops: `rounds` products of an image. Its
    random op is stateful, as augmentations' often are: tf.data then keeps the map sequential (its
    map_parallelization runs only stateless maps in parallel)."""
    image = tf.random.uniform((IMAGE, IMAGE)) + tf.cast(seed, tf.float32) * 1e-6
    for _ in range(rounds):
        image = tf.sqrt(tf.abs(tf.matmul(image, image)) / IMAGE + 1e-3)
    return tf.image.resize(image[..., None], (SEQ, CHANNELS))[..., 0], label


def pipeline(kind: str, rounds: int, batch: int = RNN_BATCH):
    """serial: map() with no num_parallel_calls and no prefetch (fused into MapAndBatch by
    default); parallel: map(num_parallel_calls=AUTOTUNE) and prefetch; cached: decoded once, held in
    memory and prefetched."""
    seeds = tf.data.Dataset.range(batch * 64)
    ds = seeds.map(lambda s: (tf.cast(s, tf.int32), tf.cast(s % 10, tf.int32)))
    work = lambda s, y: decode(s, y, rounds)  # noqa: E731
    if kind == "serial":
        return ds.map(work).batch(batch).repeat()
    if kind == "parallel":
        return ds.map(work, num_parallel_calls=tf.data.AUTOTUNE).batch(batch).repeat() \
            .prefetch(tf.data.AUTOTUNE)
    x, y = next(iter(ds.map(work).batch(batch * 8)))  # decoded once, before the profile
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch).repeat() \
        .prefetch(tf.data.AUTOTUNE)


def numpy_in_graph(x):
    """NumPy's per-row normalisation called from the compiled step, through tf.py_function."""
    return tf.py_function(lambda t: rows_in_numpy(t).numpy(), [x], tf.float32)


def train_step(model, inside=None):
    @tf.function
    def step(x, y):
        if inside:
            x = tf.reshape(inside(x), (-1, SEQ, CHANNELS))
        with tf.GradientTape() as tape:
            loss = model.loss(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        model.optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return step


def rows_in_numpy(x):
    """Each sample normalised in Python, row by row, in NumPy: the host's own work in the step."""
    x = x.numpy().reshape(len(x), -1)
    for r in range(len(x)):
        for _ in range(8):
            x[r] = np.clip((x[r] - x[r].mean()) / (x[r].std() + 1e-6), -3, 3)
    return tf.constant(x.reshape(-1, SEQ, CHANNELS))


def rows_vectorized(x):
    x = x.numpy().reshape(len(x), -1)
    for _ in range(8):
        x = np.clip((x - x.mean(1, keepdims=True)) / (x.std(1, keepdims=True) + 1e-6), -3, 3)
    return tf.constant(x.reshape(-1, SEQ, CHANNELS))


def marker(style: str, i: int, batch: int):
    """The step's marker as each style writes it."""
    if style == "trace_r":  # the TensorFlow guide's
        return tf.profiler.experimental.Trace("train", step_num=i, _r=1)
    if style == "trace":
        return tf.profiler.experimental.Trace("train", step_num=i)
    if style == "keras2":  # Keras 2's fit marked each step so
        return tf.profiler.experimental.Trace("train", epoch_num=0, step_num=i,
                                              batch_size=batch, _r=1)
    return contextlib.nullcontext()


def session_per_sample(logdir: str, job) -> None:
    """TF1's style: a graph and a Session, run once per sample (64 Session.run a step) on tiny
    work: each run pays the session's overhead for one row's matmul."""
    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, (1, FEATURES))
        w = tf.Variable(tf.random.normal((FEATURES, 10)))
        y = tf.nn.relu(tf.matmul(x, w))
        init = tf1.global_variables_initializer()
    sess = tf1.Session(graph=graph)
    sess.run(init)
    data = np.random.default_rng(0).random((64, FEATURES), dtype=np.float32)
    tf.profiler.experimental.start(logdir)
    for i in range(JOB_STEPS):
        with marker(job.marking, i, job.batch):
            for r in range(len(data)):
                sess.run(y, {x: data[r:r + 1]})
    tf.profiler.experimental.stop()


@dataclass(frozen=True)
class Job:
    model: str  # MODELS
    input: str  # pipeline()'s kind
    marking: str  # "fit" (Keras 3's fit, TensorBoard callback), or marker()'s style
    rounds: int = 12  # the map's cost per sample: about 1 ms a batch each on the 2-core machine
    host: object = None  # the host's own work on the batch in the step (rows_in_numpy)
    inside: object = None  # the same, inside the compiled step (numpy_in_graph)
    batch: int = RNN_BATCH
    run: object = None  # a job that runs its steps its own way (session_per_sample)


JOBS = {
    "fit_map": Job("mlp", "serial", "fit"),
    "fit_clean": Job("mlp", "cached", "fit"),
    "lstm_map": Job("lstm", "serial", "trace_r"),
    "lstm_clean": Job("lstm", "parallel", "trace_r", rounds=0),
    "numpy_rows": Job("mlp", "cached", "trace", host=rows_in_numpy),
    "unmarked_map": Job("mlp", "serial", "none"),
    "fit_batch2": Job("mlp", "cached", "fit", batch=2),
    "py_function": Job("mlp", "cached", "trace_r", inside=numpy_in_graph),
    "session_per_sample": Job("mlp", "cached", "trace_r", run=session_per_sample),
    # issue 59's hold-out (HOLDOUT.md)
    "h59_fit_lstm_map": Job("lstm", "serial", "fit"),
    "h59_fit_lstm_clean": Job("lstm", "cached", "fit"),
    "h59_gru_trace_map": Job("gru", "serial", "trace"),
    "h59_gru_trace_clean": Job("gru", "parallel", "trace", rounds=0),
    "h59_keras2_numpy_rows": Job("mlp", "cached", "keras2", host=rows_in_numpy, batch=64),
    "h59_keras2_numpy_vectorized": Job("mlp", "cached", "keras2", host=rows_vectorized,
                                        batch=64),
}


def run_job(job: Job, logdir: str) -> None:
    tf.config.threading.set_intra_op_parallelism_threads(1)
    if job.run:
        job.run(logdir, job)
        return
    model = MODELS[job.model]()
    dataset = pipeline(job.input, job.rounds, job.batch)
    if job.marking == "fit":  # as a Keras 3 user profiles: batches 3 to 3 + JOB_STEPS - 1
        board = tf.keras.callbacks.TensorBoard(logdir, profile_batch=(3, 2 + JOB_STEPS))
        model.fit(dataset, epochs=1, steps_per_epoch=3 + JOB_STEPS, callbacks=[board],
                  verbose=0)
        return
    step, batches = train_step(model, job.inside), iter(dataset)
    for _ in range(2):  # warm-up: tracing of the tf.function, the iterator's start
        step(*next(batches))
    tf.profiler.experimental.start(logdir)
    for i in range(JOB_STEPS):
        with marker(job.marking, i, job.batch):
            x, y = next(batches)
            step(job.host(x) if job.host else x, y)
    tf.profiler.experimental.stop()


# The first traces, with STEPS steps; the corpus's, CORPUS_STEPS (small files); those whose
# steps are too many events to keep (a loop of 1,024 elements: 3.6 MB for 3 steps), cut to their
# first step once written (first_step).
FIRST = ("dataloader", "loop", "clean")
CORPUS_STEPS = 3
FIRST_STEP_ONLY = ("loop_rows_elements",)
CASES = {name[len("case_"):]: f for name, f in list(globals().items()) if name.startswith("case_")}


def profile(case: str, out: Path) -> Path:
    if case in JOBS:
        return profile_job(case, out)
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


def profile_job(case: str, out: Path) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        run_job(JOBS[case], tmp)
        written = sorted(Path(tmp).glob("**/plugins/profile/*/*.xplane.pb"))
        target = out / f"tf_cpu_{case}.xplane.pb"
        shutil.copyfile(written[-1], target)
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


# explain --against's pair: each side's environment (read when TensorFlow is imported, so each
# side is a process of its own).
PAIR_SIDES = {"pair_onednn_here": {"TF_ENABLE_ONEDNN_OPTS": "0"},
              "pair_onednn_there": {}}
PAIR_STEPS = 4


def profile_pair_side(name: str, out: Path) -> Path:
    """A wide dense model's compiled step on in-memory batches, PAIR_STEPS steps marked with
    _r=1: matmuls, where oneDNN would show."""
    tf.keras.utils.set_random_seed(0)
    net = tf.keras.Sequential([tf.keras.Input((FEATURES,)),
                               tf.keras.layers.Dense(512, activation="relu"),
                               tf.keras.layers.Dense(512, activation="relu"),
                               tf.keras.layers.Dense(10)])
    opt = tf.keras.optimizers.SGD(0.01)
    x = tf.random.uniform((256, FEATURES), seed=1)
    y = tf.random.uniform((256,), maxval=10, dtype=tf.int32, seed=2)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
                y, net(x), from_logits=True))
        opt.apply_gradients(zip(tape.gradient(loss, net.trainable_variables),
                                net.trainable_variables))
        return loss

    for _ in range(2):  # warm-up: the tf.function's tracing
        step()
    with tempfile.TemporaryDirectory() as tmp:
        tf.profiler.experimental.start(tmp)
        for i in range(PAIR_STEPS):
            with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
                step()
        tf.profiler.experimental.stop()
        written = sorted(Path(tmp).glob("plugins/profile/*/*.xplane.pb"))
        target = out / f"tf_cpu_{name}.xplane.pb"
        shutil.copyfile(written[0], target)
    return target


def make_pairs(out: Path) -> None:
    import subprocess
    import sys

    for name, env in PAIR_SIDES.items():
        subprocess.run([sys.executable, __file__, "--out", str(out), "--pair-side", name],
                       env={**os.environ, **env}, check=True)


def main() -> None:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=here.parent / "data" / "traces")
    parser.add_argument("--pairs", action="store_true", help="explain --against's pair, each "
                        "side in a process of its own")
    parser.add_argument("--pair-side", choices=PAIR_SIDES, help=argparse.SUPPRESS)
    parser.add_argument("cases", nargs="*", default=[*CASES, *JOBS])
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.pairs:
        return make_pairs(args.out)
    if args.pair_side:
        return print(profile_pair_side(args.pair_side, args.out))
    for case in args.cases:
        print(profile(case, args.out))


if __name__ == "__main__":
    main()
