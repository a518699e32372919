"""The fixes in each framework's own words: a finding on a TensorFlow trace says tf.data's
num_parallel_calls and tf.reduce_mean, one on a PyTorch trace DataLoader's workers and x.mean."""

from __future__ import annotations

from dataclasses import dataclass

from gapbench_report.inputs.traces import Profile


@dataclass(frozen=True)
class Words:
    overlap_input: str  # a pipeline with no parallel producers or prefetch
    overlap_generator: str  # the same, from a Python generator
    more_producers: str  # one that has them and still cannot keep up
    row_scaling: str  # a per-row normalisation as whole-tensor operations
    row_min_max: str  # a per-row min-max scaling as whole-tensor operations
    off_the_step: str  # where host work overlaps the step instead of holding it
    compile_step: str
    fused_rnn: str
    no_shapes: str  # how to see what a loop works on, where the trace cannot tell
    threads: str  # how many threads the framework's ops take


PYTORCH = Words(
    overlap_input="Overlap loading with the step: DataLoader(num_workers=N, pin_memory=True, "
                  "prefetch_factor=2).",
    overlap_generator="Overlap loading with the step: DataLoader(num_workers=N, "
                      "pin_memory=True, prefetch_factor=2).",
    more_producers="Add workers if cores are free, or make the producer cheaper (cache decoded "
                   "data, vectorize the preprocessing).",
    row_scaling="x = (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True)",
    row_min_max="x = (x - x.amin(1, keepdim=True)) / (x.amax(1, keepdim=True) - "
                "x.amin(1, keepdim=True))",
    off_the_step="move it into a Dataset read by DataLoader workers, where it overlaps the step",
    compile_step="torch.compile",
    fused_rnn="the library's fused RNN (nn.LSTM, nn.GRU, nn.RNN over the whole sequence: oneDNN "
              "on a CPU, cuDNN on a GPU)",
    no_shapes="record_shapes=True would",
    threads="torch.set_num_threads()")

TENSORFLOW = Words(
    overlap_input="Overlap loading with the step: Dataset.map(f, num_parallel_calls="
                  "tf.data.AUTOTUNE), then .prefetch(tf.data.AUTOTUNE) as the pipeline's last "
                  "stage.",
    overlap_generator="Overlap loading with the step: a Python generator yields one element "
                      "at a time, whatever follows it, so do its work in Dataset.map(f, "
                      "num_parallel_calls=tf.data.AUTOTUNE) over the raw records (or interleave "
                      "several generators), then .prefetch(tf.data.AUTOTUNE).",
    more_producers="Its maps already run in parallel: cache the decoded data (.cache() before the "
                   "random augmentations), vectorise the map (batch first, then map over the "
                   "batch), or give tf.data more cores.",
    row_scaling="x = (x - tf.reduce_mean(x, 1, keepdims=True)) / tf.math.reduce_std(x, 1, "
                "keepdims=True)",
    row_min_max="x = (x - tf.reduce_min(x, 1, keepdims=True)) / (tf.reduce_max(x, 1, "
                "keepdims=True) - tf.reduce_min(x, 1, keepdims=True))",
    off_the_step="move it into the tf.data pipeline (Dataset.map with num_parallel_calls="
                 "tf.data.AUTOTUNE, then .prefetch), where it overlaps the step",
    compile_step="tf.function (jit_compile=True)",
    fused_rnn="Keras' LSTM or GRU layer over the whole sequence (cuDNN on a GPU), not a cell "
              "stepped in Python",
    no_shapes="TensorFlow's CPU traces carry no shapes to tell",
    threads="tf.config.threading.set_intra_op_parallelism_threads()")


def words(profile: Profile) -> Words:
    return TENSORFLOW if profile.framework == "TensorFlow" else PYTORCH
