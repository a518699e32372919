"""What the probe runs: gapbench's shapes, per profile, and the names they are written under.

Every benchmark is named framework/<torch|tensorflow>/<cpu|gpu>/op:<op>/<axis>:<value>/...
/real_time, with gapbench's axis names for the same shapes, so the report can set each one beside
the library's figure for that shape:

  op:sumsq/style:<elementwise|vectorized>/rows:<r>/cols:<c>   sum of squares per row; elementwise
        is a Python loop making one framework call per row (the classic slow way), vectorized one
        call on the whole matrix. The loop runs on 10,000 rows: over 1,000,000 it takes minutes.
  op:image/style:<elementwise|vectorized>/n:<images>/hw:<side>/c:<channels>   normalize, random
        brightness and flip (preprocess's image op); elementwise is one call chain per image.
  op:conv/n/c/hw/k/r/stride/pad      forward 2-D convolution, float32 (conv's axes)
  op:lstm/scope:<step|seq>/batch/input/hidden/steps   one LSTM layer (the framework's own: Keras'
        LSTM, torch.nn.LSTM); step is one cell call, seq the whole sequence (lstm's axes)
  op:copy/dir:h2d/memory:<pageable|pinned>/bytes:<n>   a host-to-device copy, to completion
  op:pipeline/produce_ms/consume_ms/depth/workers   an input pipeline (tf.data; a DataLoader):
        depth 0 is no prefetch, workers the producers (pipeline's axes)
  op:matmul/n:<n>                    square float32 matmul (overhead's sweep)
  op:dense/batch:<b>                 one training step of the 784-128-10 network (overhead's)

`mode:compiled` marks the framework's compiled mode (tf.function, torch.compile); absent, the
framework's default, eager. Every time is host wall time per call, the call synchronized.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

FAMILY = "framework"
FRAMEWORKS = ("torch", "tensorflow")  # frameworks.ADAPTERS' names, for --help without numpy
DEVICES = ("cpu", "gpu")
MIB = 2**20


@dataclass(frozen=True)
class Profile:
    name: str
    repetitions: int
    min_time: float  # seconds per repetition, at least


# gapbench's own: quick for a first look and the tests (minutes), full for baselines.
PROFILES = {"quick": Profile("quick", 5, 0.05), "full": Profile("full", 10, 0.5)}


@dataclass(frozen=True)
class Case:
    """One benchmark before a framework and a device are chosen."""

    op: str
    axes: tuple[tuple[str, str], ...]
    devices: tuple[str, ...] = DEVICES

    def axis(self, key: str) -> str:
        return dict(self.axes)[key]

    def number(self, key: str) -> int:
        return int(self.axis(key))

    @property
    def compiled(self) -> bool:
        return ("mode", "compiled") in self.axes

    def name(self, framework: str, device: str) -> str:
        axes = "/".join(f"{k}:{v}" for k, v in (("op", self.op), *self.axes))
        return f"{FAMILY}/{framework}/{device}/{axes}/real_time"


def case(op: str, *axes: tuple[str, object], devices: tuple[str, ...] = DEVICES) -> Case:
    return Case(op, tuple((k, str(v)) for k, v in axes), devices)


def _pick(profile: Profile, quick, full):
    return quick if profile.name == "quick" else full


def _modes(compiled: bool) -> tuple[tuple[tuple[str, str], ...], ...]:
    return ((), (("mode", "compiled"),)) if compiled else ((),)


# Pipeline stage costs (ms per batch: producer, consumer), as gapbench's pipeline family has them.
PIPELINE_STAGES = ((4, 1), (1, 4), (2, 2))
# (variant's depth, workers): none, prefetch, parallel producers.
PIPELINE_KINDS = ((0, 1), (2, 1), (2, 2))


def cases(profile: Profile) -> Iterator[Case]:
    """Every case of the profile, in the families' order. Compiled mode costs a compilation per
    shape (torch.compile takes tens of seconds on two cores), so quick compiles only the cases
    where per-call overhead is the point: the smallest dense step and LSTM step."""
    full = profile.name == "full"
    for rows in _pick(profile, (10000, 1000000), (10000, 100000, 1000000)):
        for style in ("elementwise", "vectorized"):
            if style == "elementwise" and rows > 100000:
                continue  # a Python loop over a million rows: minutes per call
            yield case("sumsq", ("style", style), ("rows", rows), ("cols", 100))
    for n in _pick(profile, (32,), (1, 32, 128)):
        for style in ("elementwise", "vectorized"):
            yield case("image", ("style", style), ("n", n), ("hw", 256), ("c", 3))
    # conv: the classic tiny input, and the ResNet 3x3 layer at 56x56 (batch 2 in quick, as
    # gapbench's quick profile has it; 32 in full).
    yield case("conv", ("n", 1), ("c", 1), ("hw", 28), ("k", 1), ("r", 3), ("stride", 1),
               ("pad", 0))
    yield case("conv", ("n", _pick(profile, 2, 32)), ("c", 64), ("hw", 56), ("k", 64), ("r", 3),
               ("stride", 1), ("pad", 1))
    # lstm: Keras' classic LSTM(64) on T=100, F=50, and DeepBench's hidden 512 at T=25.
    for batch, size, hidden, steps in ((64, 50, 64, 100), (64, 512, 512, 25)):
        for scope in ("step", "seq"):
            small_step = scope == "step" and hidden == 64
            for mode in _modes(full or small_step):
                yield case("lstm", ("scope", scope), ("batch", batch), ("input", size),
                           ("hidden", hidden), ("steps", steps), *mode)
    for memory in ("pageable", "pinned"):
        yield case("copy", ("dir", "h2d"), ("memory", memory), ("bytes", 64 * MIB),
                   devices=("gpu",))
    for produce, consume in _pick(profile, ((2, 2),), PIPELINE_STAGES):
        for depth, workers in PIPELINE_KINDS:
            yield case("pipeline", ("produce_ms", produce), ("consume_ms", consume),
                       ("depth", depth), ("workers", workers))
    for n in _pick(profile, (16, 128, 512, 1024), (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)):
        yield case("matmul", ("n", n))
    for batch in (32, 128, 512, 2048):
        for mode in _modes(full or batch == 32):
            yield case("dense", ("batch", batch), *mode)
