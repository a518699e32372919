"""Loading a gapbench results file: the JSON contract in one place.

A results file is Google Benchmark's JSON plus gapbench's run context (`gapbench.schema` "2";
"1" is read too, its threaded rows' counters corrected: SUMMED_OVER_THREADS).
Every benchmark is named <family>/<variant>/<cpu|gpu>/<axis>:<value>/... and Google Benchmark may
append /min_time:<t>, /iterations:<n>, /real_time or /manual_time and /threads:<n>; those are
Google Benchmark's settings, not axes. NAME_PATTERN is the one expression that
parses them; nothing guesses.

load_results() checks everything the rest of the report relies on and raises ResultsError with
one line otherwise: unreadable, empty, truncated or non-JSON files, the wrong shape, an unknown
schema, names off the scheme, a name that disagrees with its run_name, times that are not positive
numbers (or lie outside SHORTEST_TIME to LONGEST_TIME), counters (and iteration counts) that are
not numbers, flags that are not true or false, repetition indexes that are not whole numbers,
unknown time units, and duplicate entries. Times in any unit come back in seconds.

row_math() is the one place that decides the arithmetic a row may have computed in (its name's
math axis, else what its file's context says its library or framework defaulted to): every
Benchmark carries it as `math`, and the rest of the report reads that, never the name alone.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gapbench_report.inputs.files import InputError, read_bounded

try:
    import orjson
except ImportError:  # a Python without it (a GPU machine's, say): the stdlib reads the same
    orjson = None

SCHEMA_VERSION = "2"
# Schema 1 counted a row of N threads' `flops` and `traffic_bytes_per_second` N times over
# (docs/reading-results.md#the-peak-family, "Threads"); read in a schema-1 file, they are divided
# by N. Nothing else changed in schema 2.
READ_SCHEMAS = ("1", SCHEMA_VERSION)
SUMMED_OVER_THREADS = ("flops", "traffic_bytes_per_second")
NAME_PATTERN = re.compile(
    r"^(?P<family>[a-z][a-z0-9_]*)/(?P<variant>[a-z][a-z0-9_]*)/(?P<device>cpu|gpu)"
    r"(?P<axes>(?:/(?!min_time:|iterations:|repeats:)[a-z][a-z0-9_]*:[^/]+)*)"
    r"(?:/min_time:[^/]+)?(?:/iterations:[0-9]+)?(?:/repeats:[0-9]+)?"
    r"(?:/(?P<timing>real_time|manual_time))?"
    r"(?:/threads:(?P<threads>[0-9]+))?$"
)
SKIP_PREFIX = "skipped: "
# An entry's key naming the process (the run of gapbench) it came from, where several runs were
# pooled into one document (runner.pool, load_side); absent in a file that one run wrote.
PROCESS_KEY = "gapbench_process"
REQUIRED_CONTEXT = ("gapbench.schema", "gapbench.version", "gapbench.profile", "gapbench.seed",
                    "machine.id", "gpu.status")
SECONDS_PER_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
# A time per iteration outside this range is no measurement (a timer resolves nanoseconds, and
# no benchmark's iteration takes days); allowed, its medians, ratios and log axes would overflow.
SHORTEST_TIME = 1e-12  # seconds
LONGEST_TIME = 1e6
# Counters the report reads, as given: rates, shares, and the pipeline's measured stage costs and
# the cores its ideal counted.
COUNTERS = ("bytes_per_second", "traffic_bytes_per_second", "items_per_second", "flops",
            "overhead_share", "idle_fraction", "ideal_items_per_second", "produce_ms_measured",
            "consume_ms_measured", "cores")


class ResultsError(Exception):
    """The input is not a usable gapbench results file; str() is the one line to show."""


MATH_AXIS = "math"
FP32, TF32 = "fp32", "tf32"


@dataclass(frozen=True)
class Name:
    """A parsed benchmark name. The axis `math` is the precision a variant computes in
    (math:bf16); what a row without it computed in is row_math()'s to say, with its context."""

    family: str
    variant: str
    device: str
    axes: dict[str, str] = field(default_factory=dict)
    timing: str | None = None
    threads: int | None = None

    def axis(self, key: str, default: str | None = None) -> str | None:
        return self.axes.get(key, default)

    def axes_but_math(self) -> dict[str, str]:
        """The axes that size the work, without the precision it is done in."""
        return {k: v for k, v in self.axes.items() if k != MATH_AXIS}


# Library rows whose names carry no math axis although they ran in their library's default math:
# cuDNN's convolutions in files from before every such row named its math (CUDNN_DEFAULT_MATH,
# which lets cuDNN compute float32 data in TF32 from compute capability TF32_SINCE on).
DEFAULT_MATH_ROWS = frozenset({("conv", "cudnn"), ("conv", "cudnn_e2e")})
TF32_SINCE = (8, 0)  # Ampere
# The context keys that said, before the probe named each row's math, whether the framework
# computed an op's float32 in TF32 on the GPU ("on"): cuBLAS's setting for matmul and the dense
# step, cuDNN's for conv and the LSTM. Today's probe sets TF32 per row and says so there.
FRAMEWORK_TF32_KEYS = {"matmul": "framework.tf32_matmul", "dense": "framework.tf32_matmul",
                       "conv": "framework.tf32_conv", "lstm": "framework.tf32_conv"}


def compute_capability(context: Mapping) -> tuple[int, int] | None:
    """"9.0" -> (9, 0); None where the context names none."""
    match = re.match(r"^(\d+)\.(\d+)$", str(context.get("gpu.compute_capability", "")).strip())
    return (int(match[1]), int(match[2])) if match else None


def row_math(name: Name, context: Mapping) -> str:
    """The arithmetic a row may have computed in, read with its file's context: the one place
    the report decides it. Its math axis, where its name has one. Without one:
    - a cuDNN convolution (DEFAULT_MATH_ROWS) on the GPU ran in cuDNN's default math: TF32
      (allowed, whether or not cuDNN chose it), unless the context names a GPU older than
      TF32_SINCE; a context naming no GPU proves no float32, so it is TF32 there too;
    - a framework row from a probe before the axis: TF32 on the GPU where its file's context
      says that the framework's default was ("on");
    - else float32."""
    if MATH_AXIS in name.axes:
        return name.axes[MATH_AXIS]
    if name.device != "gpu":
        return FP32
    if (name.family, name.variant) in DEFAULT_MATH_ROWS:
        capability = compute_capability(context)
        return FP32 if capability is not None and capability < TF32_SINCE else TF32
    if name.family == "framework":
        key = FRAMEWORK_TF32_KEYS.get(name.axes.get("op", ""), "")
        return TF32 if context.get(key) == "on" else FP32
    return FP32


@functools.cache
def parse_name(name: str) -> Name:
    """Parsed once per distinct name (a file repeats each name per repetition and aggregate);
    the Name is shared, so treat it as read-only."""
    match = NAME_PATTERN.match(name)
    if match is None:
        raise ResultsError(f"benchmark name {name!r} does not follow "
                           "<family>/<variant>/<cpu|gpu>/<axis>:<value>/...")
    axes: dict[str, str] = {}
    for part in match["axes"].split("/")[1:]:
        key, value = part.split(":", 1)
        if key in axes:
            raise ResultsError(f"benchmark name {name!r} repeats the axis {key!r}")
        axes[key] = value
    threads = match["threads"]
    return Name(match["family"], match["variant"], match["device"], axes, match["timing"],
                int(threads) if threads else None)


@dataclass(frozen=True)
class Entry:
    """One row of "benchmarks": an iteration (one repetition) or an aggregate."""

    name: Name
    raw: dict

    @property
    def run_name(self) -> str:
        return self.raw.get("run_name", self.raw["name"])

    # A skip has two forms: Google Benchmark 1.8 and later write "skipped": true with
    # "skip_message" (gapbench skips with SkipWithMessage there); 1.7 has only errors, so there a
    # skip is an error whose message starts "skipped: ".
    @property
    def errored(self) -> bool:
        return bool(self.raw.get("error_occurred")) or self.raw.get("skipped") is True

    @property
    def skipped(self) -> bool:
        return self.raw.get("skipped") is True or (
            bool(self.raw.get("error_occurred")) and self.message.startswith(SKIP_PREFIX))

    @property
    def failed(self) -> bool:
        return self.errored and not self.skipped

    @property
    def message(self) -> str:
        """The error or skip message, a skip's always as "skipped: <reason>"."""
        if self.raw.get("skipped") is True:
            return SKIP_PREFIX + str(self.raw.get("skip_message", ""))
        return str(self.raw.get("error_message", ""))

    @property
    def skip_reason(self) -> str | None:
        return self.message[len(SKIP_PREFIX):] if self.skipped else None

    @property
    def is_aggregate(self) -> bool:
        return self.raw.get("run_type") == "aggregate"

    @property
    def seconds(self) -> float:
        """Time per iteration in seconds (real time; manual time for GPU variants)."""
        return self.raw["real_time"] * SECONDS_PER_UNIT[self.raw.get("time_unit", "ns")]


@dataclass(frozen=True)
class Benchmark:
    """One benchmark across its repetitions."""

    name: str
    parsed: Name
    samples: tuple[float, ...]  # seconds per iteration, one per timed repetition
    counters: dict[str, tuple[float, ...]]  # per timed repetition
    aggregates: dict[str, float]  # Google Benchmark's own, in seconds (cv as a ratio)
    skip_reason: str | None = None  # without the "skipped: " prefix
    error: str | None = None
    # The process each sample came from (PROCESS_KEY; all one process in a plain file).
    processes: tuple[int, ...] = ()
    label: str = ""  # the benchmark's label (cuDNN's algorithm; an unheld GPU kernel time)
    math: str = FP32  # the arithmetic it may have computed in (row_math): read this, not the name
    labels: tuple[str, ...] = ()  # every timed repetition's label, in order (versus compares all)

    @functools.cached_property
    def process_medians(self) -> tuple[float, ...]:
        """One sample per process: the median of its repetitions. Repetitions of one process
        share its state (memory layout, clocks, the library's choices) and vary less than
        processes do, so it is the process that is the independent sample."""
        by_process: dict[int, list[float]] = {}
        for p, s in zip(self.processes or (0,) * len(self.samples), self.samples):
            by_process.setdefault(p, []).append(s)
        return tuple(statistics.median(v) for v in by_process.values())

    @property
    def status(self) -> str:
        """"ok", "skipped" or "failed"."""
        return "failed" if self.error else "skipped" if self.skip_reason else "ok"

    @property
    def median(self) -> float | None:
        if self.samples:
            return statistics.median(self.samples)
        return self.aggregates.get("median")

    def counter(self, key: str) -> float | None:
        """Median of a counter over the repetitions."""
        values = self.counters.get(key, ())
        return statistics.median(values) if values else None


@dataclass(frozen=True)
class Results:
    path: Path
    context: dict
    entries: list[Entry]
    # A baseline's own record of where it came from (results/baselines/README.md): the gapbench
    # commit of a file made before runs recorded it in their context, among others.
    provenance: dict = field(default_factory=dict)
    # The context's values that were ignored as no plausible figure (plausible_context), each
    # in words; `context` is without them.
    ignored: tuple[str, ...] = ()

    @property
    def machine(self) -> str:
        return str(self.context.get("machine.id", ""))

    @functools.cached_property
    def _grouped(self) -> dict[str, Benchmark]:
        return group_benchmarks(self.entries, self.context)

    def benchmarks(self) -> dict[str, Benchmark]:
        """Benchmarks by name, in file order (grouped once; render, diagnose and metrics all
        ask)."""
        return self._grouped


def merged_benchmarks(runs: Iterable[Results]) -> list[Benchmark]:
    """Every benchmark of a run (one file per family) once: where files share a name (the peak/
    entries every family runs beside itself), the first file's entry stands."""
    out: dict[str, Benchmark] = {}
    for results in runs:
        for name, b in results.benchmarks().items():
            out.setdefault(name, b)
    return list(out.values())


def group_benchmarks(entries: Iterable[Entry], context: Mapping) -> dict[str, Benchmark]:
    """The entries as benchmarks, each with its math read in `context` (its file's)."""
    rows: dict[str, list[Entry]] = {}
    for e in entries:
        rows.setdefault(e.run_name, []).append(e)
    out = {}
    for name, group in rows.items():
        runs = [e for e in group if not e.is_aggregate]
        timed = [e for e in runs if not e.errored]
        failed = next((e.message for e in runs if e.failed), None)
        skipped = next((e.skip_reason for e in runs if e.skipped), None)
        aggregates = {}
        for e in group:
            if e.is_aggregate and not e.errored:
                kind = str(e.raw.get("aggregate_name", ""))
                aggregates[kind] = e.raw["real_time"] if kind == "cv" else e.seconds
        counters = {k: tuple(float(e.raw[k]) for e in timed if k in e.raw) for k in COUNTERS}
        threads = parse_name(name).threads or 1
        if threads > 1 and str(context.get("gapbench.schema")) == "1":
            for k in SUMMED_OVER_THREADS:
                counters[k] = tuple(v / threads for v in counters[k])
        out[name] = Benchmark(name, group[0].name, tuple(e.seconds for e in timed),
                              {k: v for k, v in counters.items() if v}, aggregates,
                              None if failed else skipped, failed,
                              tuple(int(e.raw.get(PROCESS_KEY, 0)) for e in timed),
                              next((str(e.raw["label"]) for e in timed if e.raw.get("label")), ""),
                              row_math(group[0].name, context),
                              tuple(str(e.raw.get("label") or "") for e in timed))
    return out


def _is_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond every float (10**400)
        return False


def is_time(seconds: object) -> bool:
    """A number of seconds that can be a time per iteration (SHORTEST_TIME to LONGEST_TIME)."""
    return _is_number(seconds) and SHORTEST_TIME <= seconds <= LONGEST_TIME


def shown(value: object, limit: int = 40) -> str:
    """repr(value) for a message, cut short: the value may be a 400-digit number."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _check_names_agree(path: Path, i: int, raw: dict, run_type: str) -> None:
    """Google Benchmark's convention: an iteration's name is its run_name, an aggregate's is
    <run_name>_<aggregate_name>. The report groups by run_name and finds duplicates by name, so
    an entry where they disagree would be counted as one more repetition of another benchmark."""
    if "run_name" not in raw:  # files older than run_name: the name is all there is
        return
    run_name, name = raw["run_name"], raw["name"]
    if run_type == "iteration":
        expected, how = run_name, "an iteration by its run_name"
    elif isinstance(raw.get("aggregate_name"), str):
        expected = f"{run_name}_{raw['aggregate_name']}"
        how = f"this aggregate {expected!r}"
    else:
        raise ResultsError(f"{path}: benchmark #{i}: aggregate {name!r} has no aggregate_name")
    if name != expected:
        raise ResultsError(f"{path}: benchmark #{i}: name {name!r} does not match its run_name "
                           f"{run_name!r} (Google Benchmark names {how})")


def _check_entry(path: Path, i: int, raw: object) -> Entry:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ResultsError(f"{path}: benchmark #{i} has no name")
    label = raw.get("run_name", raw["name"])
    if not isinstance(label, str):
        raise ResultsError(f"{path}: benchmark #{i} has a run_name that is not a string")
    try:
        name = parse_name(label)
    except ResultsError as e:
        raise ResultsError(f"{path}: {e}") from None
    run_type = raw.get("run_type", "iteration")
    if run_type not in ("iteration", "aggregate"):
        raise ResultsError(f"{path}: {label}: unknown run_type {shown(run_type)}")
    # The flags decide whether the entry is a failure, a skip or a time: "false" is no false.
    for key in ("error_occurred", "skipped"):
        if key in raw and not isinstance(raw[key], bool):
            raise ResultsError(f"{path}: {label}: {key} is {shown(raw[key])}, not true or false")
    for key, what in (("repetition_index", "a whole number >= 0"),
                      (PROCESS_KEY, "a process number")):
        if key in raw and not _is_count(raw[key]):
            raise ResultsError(f"{path}: {label}: {key} is {shown(raw[key])}, not {what}")
    if "aggregate_name" in raw and not isinstance(raw["aggregate_name"], str):
        raise ResultsError(f"{path}: {label}: aggregate_name is {shown(raw['aggregate_name'])}, "
                           "not a string")
    _check_names_agree(path, i, raw, run_type)
    entry = Entry(name, raw)
    if entry.errored:
        return entry
    unit = raw.get("time_unit", "ns")
    if not isinstance(unit, str) or unit not in SECONDS_PER_UNIT:
        raise ResultsError(f"{path}: {label}: unknown time_unit {shown(unit)}")
    time = raw.get("real_time")
    # A spread is 0 when every repetition took the same time; a time never is.
    is_spread = run_type == "aggregate" and raw.get("aggregate_name") in ("stddev", "cv")
    if not (_is_number(time) and (time >= 0 if is_spread else time > 0)):
        raise ResultsError(f"{path}: {label}: real_time is {shown(time)}, not a positive number")
    if not is_spread and not is_time(time * SECONDS_PER_UNIT[unit]):
        raise ResultsError(f"{path}: {label}: real_time is {time:g} {unit}, outside "
                           f"{SHORTEST_TIME:g} to {LONGEST_TIME:g} s: no time per iteration")
    if run_type == "iteration":
        # The counters the report reads, from the repetitions only: an aggregate's counters are
        # never read, and Google Benchmark writes NaN there (the cv of a counter that is 0).
        # Their sign is check's to judge (a problem, exit 1), not the loader's.
        for key in ("iterations", *COUNTERS):
            if key in raw and not _is_number(raw[key]):
                raise ResultsError(f"{path}: {label}: {key} is {shown(raw[key])}, not a finite "
                                   "number")
    return Entry(name, raw)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_json(path: Path, text: str) -> object:
    """The file's JSON, its every failure as ResultsError naming the file. orjson, where it is
    installed, reads it first (parsing is most of reading a fleet's thousands of files); whatever
    orjson refuses (NaN, integers past 64 bits, bad JSON) goes to json.loads, which reads the
    rest and words the errors."""
    if orjson is not None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}: not valid JSON (truncated?): {e.msg}: line {e.lineno} "
                           f"column {e.colno}") from None
    except ValueError:  # Python reads no integer of more than 4,300 digits
        raise ResultsError(f"{path}: holds a number of thousands of digits") from None
    except RecursionError:
        raise ResultsError(f"{path}: JSON nested too deeply") from None


def check_document(path: Path, data: object) -> dict:
    """The document's shape and run context (a gapbench results file of SCHEMA_VERSION); returns
    the context. load_results checks every entry after this; the fleet report, which reads
    thousands of files, reads the entries itself (gapbench_report.inputs.fleet)."""
    if not isinstance(data, dict) or not isinstance(data.get("context"), dict):
        raise ResultsError(f"{path}: not a Google Benchmark JSON file (no 'context' object)")
    if not isinstance(data.get("benchmarks"), list):
        raise ResultsError(f"{path}: no 'benchmarks' list")
    context = data["context"]
    missing = [k for k in REQUIRED_CONTEXT if k not in context]
    if missing:
        raise ResultsError(f"{path}: not a gapbench results file (context lacks "
                           f"{', '.join(missing)})")
    if str(context["gapbench.schema"]) not in READ_SCHEMAS:
        raise ResultsError(f"{path}: unknown schema version {context['gapbench.schema']!r} "
                           f"(this report reads {' and '.join(READ_SCHEMAS)})")
    return context


# The largest results file read (a whole full-profile run of every family is about 1 MiB; the
# JSON of one takes about ten times its size in memory once parsed).
RESULTS_LIMIT_BYTES = 128 * 2**20


def read_document(path: Path, what: str = "results file",
                  limit_bytes: int = RESULTS_LIMIT_BYTES) -> object:
    """The file's JSON, read within `limit_bytes` (files.read_bounded: a device, a socket, a
    FIFO that nobody writes or a file past the limit is refused unread); every failure to read
    or parse it (missing, a folder, empty, truncated) as ResultsError naming the file."""
    return parse_json(path, read_text(path, what, limit_bytes))


def read_text(path: Path, what: str, limit_bytes: int) -> str:
    """An input file's text (UTF-8), read by files.read_bounded; ResultsError naming the file
    otherwise."""
    if os.path.isdir(path):
        raise ResultsError(f"{path}: is a directory, not a {what}")
    try:
        text = read_bounded(path, limit_bytes, what).decode("utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except InputError as e:
        raise ResultsError(f"{path}: cannot be read: {e}") from None
    except OSError as e:
        raise ResultsError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ResultsError(f"{path}: cannot read: not UTF-8 text") from None
    if not text.strip():
        raise ResultsError(f"{path}: empty file")
    return text


def load_results(path: str | Path) -> Results:
    """Reads and checks one results file; raises ResultsError with one clear line."""
    path = Path(path)
    return check_results(path, read_document(path))


def check_results(path: Path, data: object) -> Results:
    """A results document, checked whole as load_results checks a file (`path` names it in the
    errors): for a document made in memory, such as ci/baseline's merge of several files."""
    context = check_document(path, data)
    entries = [_check_entry(path, i, raw) for i, raw in enumerate(data["benchmarks"])]
    seen = set()
    for e in entries:
        key = (e.raw["name"], e.raw.get("run_type", "iteration"), e.raw.get("repetition_index"),
               e.raw.get("aggregate_name"))
        if key in seen:
            where = (f"aggregate {key[3]}" if key[3] else f"repetition {key[2]}")
            raise ResultsError(f"{path}: {e.raw['name']} appears twice ({where})")
        seen.add(key)
    check_probe_file(path, context, entries)
    provenance = data.get("provenance")
    context, ignored = plausible_context(context)
    return Results(path, context, entries, provenance if isinstance(provenance, dict) else {},
                   ignored)


# The frameworks gapbench-probe measures (probe/gapbench_probe/plan.py's FRAMEWORKS).
PROBE_FRAMEWORKS = ("torch", "tensorflow")


def check_probe_file(path: Path, context: Mapping, entries: Sequence[Entry]) -> None:
    """A probe file is one framework's, as gapbench-probe writes it: framework.name one it
    measures, and every framework/ row that framework's (a file that says torch and holds
    TensorFlow's rows would have its rows read as torch's)."""
    if "framework.name" not in context:
        return
    name = str(context["framework.name"])
    if name not in PROBE_FRAMEWORKS:
        raise ResultsError(f"{path}: framework.name {name!r} is no framework gapbench-probe "
                           f"measures ({', '.join(PROBE_FRAMEWORKS)})")
    other = sorted({e.raw["name"].split("/")[1] for e in entries
                    if e.raw["name"].startswith("framework/") and e.raw["name"].count("/") > 1
                    and e.raw["name"].split("/")[1] != name})
    if other:
        raise ResultsError(f"{path}: its framework.name is {name}, but it holds rows of "
                           f"{', '.join(other)} (framework/{other[0]}/...): not one probe's file")


# The context's figures the report reads as numbers (ceilings, and the facts it compares), each
# with the range a real machine's can take, in its key's unit: (lowest, highest, what it is). A
# figure outside it, or not finite, is no measurement (a hand-edited or corrupted file) and is
# ignored, with a note naming it: left in, it would be printed as a fact (-16 cores) or break the
# arithmetic of a comparison (1e308 GB/s, 1e-320 GB/s). Text in their place ("unavailable (...)",
# "none") is read as unknown, as before.
GB_S, MHZ, CPUS = "GB/s", "MHz", "CPUs"
PLAUSIBLE = {
    "cpu.cores": (1, 1e5, CPUS), "num_cpus": (1, 1e5, CPUS),
    "cpu.usable_cpus": (0.01, 1e5, CPUS), "cpu.affinity_cpus": (1, 1e5, CPUS),
    "cpu.quota_cpus": (0.01, 1e5, CPUS),
    "cpu.frequency_nominal_mhz": (1, 1e5, MHZ), "cpu.frequency_max_mhz": (1, 1e5, MHZ),
    "cpu.last_level_cache_bytes": (1024, 2**40, "bytes"),
    "cpu.memory_total_bytes": (2**20, 2**50, "bytes"),
    "gpu.count": (0, 1e4, "GPUs"), "gpu.sm_count": (1, 1e5, "SMs"),
    "gpu.clock_sm_mhz": (1, 1e5, MHZ), "gpu.clock_sm_max_mhz": (1, 1e5, MHZ),
    "gpu.clock_mem_mhz": (1, 1e5, MHZ), "gpu.clock_mem_max_mhz": (1, 1e5, MHZ),
    "gpu.memory_bus_width_bits": (8, 65536, "bits"),
    "gpu.memory_bandwidth_theoretical_gbps": (1, 1e6, GB_S),
    "gpu.memory_total_bytes": (2**20, 2**50, "bytes"),
    "gpu.memory_free_bytes": (0, 2**50, "bytes"),
    "gpu.compute_processes": (0, 1e6, "processes"),
    "pcie.bandwidth_max_gbps": (0.1, 1e4, GB_S), "pcie.bandwidth_current_gbps": (0.1, 1e4, GB_S),
    "pcie.gen_current": (1, 64, "PCIe generation"), "pcie.gen_max": (1, 64, "PCIe generation"),
    "pcie.width_current": (1, 64, "lanes"), "pcie.width_max": (1, 64, "lanes"),
    "stability.sgemm_gflops_start": (1e-3, 1e8, "GFLOP/s"),
    "stability.sgemm_gflops_end": (1e-3, 1e8, "GFLOP/s"),
    "stability.read_gbps_start": (1e-3, 1e6, GB_S), "stability.read_gbps_end": (1e-3, 1e6, GB_S),
    "stability.window_s": (0, 1e7, "s"), "stability.own_cpus": (0, 1e5, CPUS),
    "stability.other_cpus": (0, 1e5, CPUS), "stability.steal": (0, 1, "of all CPUs' time"),
    **{f"stability.fma_{who}_gflops_{when}": (1e-3, 1e8, "GFLOP/s")
       for who in ("one", "all") for when in ("start", "end")},
    "stability.fma_threads": (1, 1e5, "threads"),
    "openblas.threads": (1, 1e5, "threads"), "onednn.threads": (1, 1e5, "threads"),
    "load_avg": (0, 1e6, "load average"),
}


def plausible_context(context: dict) -> tuple[dict, tuple[str, ...]]:
    """The context without its figures that are no plausible measurement (PLAUSIBLE), and each
    of those in words."""
    kept, ignored = dict(context), []
    for key, (lowest, highest, unit) in PLAUSIBLE.items():
        if key not in context:
            continue
        value = context[key]
        values = value if key == "load_avg" and isinstance(value, list) else [value]
        figures = [figure_of(v) for v in values]
        if all(f is None or (math.isfinite(f) and lowest <= f <= highest) for f in figures):
            continue
        del kept[key]
        ignored.append(f"{key} {shown(value)} ignored: no plausible figure ({lowest:g} to "
                       f"{highest:g} {unit})")
    return kept, tuple(ignored)


def figure_of(value: object) -> float | None:
    """A context value as a number (inf and nan included), None for text that is none."""
    if isinstance(value, bool):
        return None
    try:
        return float(str(value).strip())
    except (TypeError, ValueError, OverflowError):
        return None


# Process numbers of different files of one side stay apart (a pooled file numbers its own).
PROCESS_STRIDE = 1_000_000


def json_files(folder: Path) -> list[Path]:
    """The folder's *.json files, sorted; hidden ones are not the folder's results (a tool's
    file in the making, ci/baseline's run before it is checked). A folder that cannot be listed
    is a ResultsError saying so (glob would find nothing in it, and say nothing)."""
    try:
        names = os.listdir(folder)
    except OSError as e:
        raise ResultsError(f"{folder}: the folder cannot be read: {e.strerror or e}") from None
    return sorted(folder / n for n in names if n.endswith(".json") and not n.startswith("."))


# What else lives beside results files, by name: doctor's facts (a fleet node's folder), a fleet
# task's exit status, the comparison render writes, the fleet's record.
NOT_RESULTS = {"doctor.json": "gapbench doctor's facts", "task.json": "a fleet task's status",
               "comparison.json": "a comparison written by render",
               "fleet.json": "a fleet's record"}


def is_results_document(data: object) -> bool:
    """Whether parsed JSON is meant as a gapbench results file (it has gapbench's run context);
    check_document says whether it is a usable one."""
    return isinstance(data, dict) and isinstance(data.get("context"), dict) \
        and "gapbench.schema" in data["context"]


def is_framework_file(results: Results) -> bool:
    """Whether gapbench-probe wrote it: by its context, since a probe file can hold no
    benchmarks (nothing selected) and its families then say nothing."""
    return "framework.name" in results.context


@dataclass(frozen=True)
class Machine:
    """One machine's results files of a folder (its NAME.json and NAME.framework-*.json): its
    name is its first gapbench file's stem (a framework file's where it has no other)."""

    name: str
    files: tuple[Results, ...]


@dataclass(frozen=True)
class Folder:
    """A folder of results files, read: each machine's files (by machine.id), and the *.json
    files that are no gapbench results (doctor.json, task.json, comparison.json ...), each with
    why it was not read as one."""

    path: Path
    machines: tuple[Machine, ...]
    not_results: tuple[tuple[str, str], ...] = ()

    def not_read(self) -> str:
        """The files not read as results, in words ("" where none)."""
        return ", ".join(f"{name} ({why})" for name, why in self.not_results)

    def one_machine(self, what: str) -> Machine:
        """Its one machine; ResultsError naming each where it holds several (`what`: "the run",
        "a baseline")."""
        if len(self.machines) > 1:
            raise ResultsError(f"{self.path}: holds the runs of {len(self.machines)} machines "
                               f"({machines_in_words(self.machines)}): {what} is one machine; "
                               "give one machine's files")
        return self.machines[0]


def require_one_machine(files: Iterable[Results], what: str, advice: str,
                        name_files: bool = False) -> None:
    """ResultsError where `files` come from more than one machine (machine.id): the one check of
    every place that means one machine (render's run, a side of compare, explain's --results).
    `what` names the files, `advice` says what to give instead; with `name_files`, each
    machine's files are named."""
    machines: dict[str, list[str]] = {}
    for r in files:
        machines.setdefault(r.machine, []).append(str(r.path))
    if len(machines) < 2:
        return
    ids = ("; ".join(f"{m}: {', '.join(paths)}" for m, paths in machines.items()) if name_files
           else ", ".join(sorted(machines)))
    raise ResultsError(f"{what} come from {len(machines)} machines (machine.id {ids}): {advice}")


def machines_in_words(machines: Iterable[Machine]) -> str:
    return "; ".join(f"{m.name}: machine.id {m.files[0].machine}, "
                     f"{', '.join(r.path.name for r in m.files)}" for m in machines)


def read_folder(folder: Path) -> Folder:
    """A folder's results files, read and checked, grouped by machine (machine.id), and its other
    *.json files named. A file that is no JSON, or is meant as a results file and is not a usable
    one, is a ResultsError as load_results raises it; so is a folder with no results file."""
    machines: dict[str, list[Results]] = {}
    not_results = []
    for path in json_files(folder):
        if path.name in NOT_RESULTS:
            not_results.append((path.name, NOT_RESULTS[path.name]))
            continue
        data = read_document(path)
        if not is_results_document(data):
            not_results.append((path.name, "no gapbench run context"))
            continue
        results = check_results(path, data)
        machines.setdefault(results.machine, []).append(results)
    if not machines:
        others = "; not results: " + ", ".join(n for n, _ in not_results) if not_results else ""
        raise ResultsError(f"{folder}: a folder with no results files (*.json) in it{others}")
    found = []
    for files in machines.values():
        framework_last = sorted(files, key=is_framework_file)
        found.append(Machine(framework_last[0].path.stem, tuple(framework_last)))
    return Folder(folder, tuple(found), tuple(not_results))


def loaded_runs(paths: Iterable[str | Path], what: str = "a run") -> list[list[Results]]:
    """The runs named, read: a folder is one run (its results files, *.json, one per family, of
    one machine: read_folder), a file is a run of its own; a path named twice counts once."""
    runs: list[list[Results]] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        if p.resolve() in seen:
            continue
        seen.add(p.resolve())
        if p.is_dir():
            runs.append(list(read_folder(p).one_machine(what).files))
        else:
            runs.append([load_results(p)])
    return runs


def results_runs(paths: Iterable[str | Path]) -> list[list[Path]]:
    """loaded_runs' files, by path."""
    return [[r.path for r in run] for run in loaded_runs(paths)]


def load_side(paths: Iterable[str | Path]) -> Results:
    """One side of a comparison: runs of gapbench on one machine, each a results file or a
    folder of them. Each run's entries are numbered as one process, so that compare judges by
    run rather than by repetition. Within a folder, a benchmark every family's file repeats
    (peak/) counts once, from its first file, as in one report of the run: six family files of
    one session are not six independent runs."""
    loaded = loaded_runs(paths, "a side")
    if not loaded:
        raise ResultsError("no results files given")
    flat = [r for run in loaded for r in run]
    if len(flat) == 1:
        return flat[0]
    require_one_machine(flat, "the files of one side", "a side is one machine")
    entries = []
    for i, run in enumerate(loaded):
        owner: dict[str, int] = {}  # benchmark -> the file of this run that stands for it
        for j, results in enumerate(run):
            for e in results.entries:
                if owner.setdefault(e.raw.get("run_name", e.raw["name"]), j) != j:
                    continue
                entries.append(Entry(e.name, {**e.raw, PROCESS_KEY: i * PROCESS_STRIDE
                                              + int(e.raw.get(PROCESS_KEY, 0))}))
    first = flat[0].path
    label = first.parent if len(loaded) == 1 else Path(f"{first} (+{len(flat) - 1} more files)")
    return Results(label, flat[0].context, entries,
                   ignored=tuple(dict.fromkeys(n for r in flat for n in r.ignored)))
