"""versus.py on the real runs and planted copies of them: the H100 against the H200 (their
benchmarks' code changed between their commits), the same with the code planted the same, the
CPU baseline against each GPU, the fleet data's plain run against its capped, loaded and second
plain runs and against planted copies with fewer usable CPUs or a quota, and a run against
itself; then the rules one by one (how much a ceiling explains, when it is firm, what makes two
rows not comparable, the facts cited), the verdict's length, and render with a baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gapbench_report.core.facts import Facts, Usual, differences
from gapbench_report.core.tables import FAMILY_ORDER, METHOD_CHANGES, METHODS_AT_COMMIT
from gapbench_report.inputs.results import Benchmark, Entry, Results, load_results, parse_name
from gapbench_report.render import command as render
from gapbench_report.render import model
from gapbench_report.versus import comparison as versus
from gapbench_report.versus import methods
from tests.synthetic import in_memory, runs

REPO = Path(__file__).resolve().parents[2]
BASELINES = REPO / "results" / "baselines"
FLEET = Path(__file__).parent / "data" / "fleet" / "this-machine"

D2D = "transfer/device/gpu/dir:d2d/mode:async/bytes:268435456/manual_time"
D2D_4K = "transfer/device/gpu/dir:d2d/mode:async/bytes:4096/manual_time"
PAGEABLE_H2D = "transfer/pageable/gpu/dir:h2d/mode:async/bytes:268435456/manual_time"
PINNED_H2D = "transfer/pinned/gpu/dir:h2d/mode:sync/bytes:268435456/manual_time"
LAUNCH = "overhead/launch/gpu/what:launch/manual_time"
FIND = "overhead/startup/gpu/what:cudnn_find_conv/manual_time"
SMALL_LSTM = "lstm/cudnn/gpu/scope:seq/batch:64/input:50/hidden:64/steps:100/manual_time"
CONV_FP32 = "conv/cudnn/gpu/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1/math:fp32/manual_time"
GEMM_FP32 = "overhead/cublas/gpu/op:matmul/n:4096/manual_time"
ONEDNN_CONV = "conv/onednn/cpu/n:2/c:64/hw:56/k:64/r:3/stride:1/pad:1/real_time"
# Every family's method version, planted the same on both sides: "as if both ran one gapbench".
SAME_CODE = {f"{methods.METHOD_KEY}{f}": "1" for f in FAMILY_ORDER}


def files_of(name: str) -> list[Results]:
    if (FLEET / name).is_dir():
        return [load_results(p) for p in sorted((FLEET / name).glob("*.json"))
                if p.name != "doctor.json"]
    return [load_results(BASELINES / f"{name}.json")]


def files_of_planted(name: str, **context: str) -> list[Results]:
    """A committed run's files with SAME_CODE (and `context`) planted in their contexts."""
    return [Results(r.path, {**r.context, **SAME_CODE, **context}, r.entries, r.provenance)
            for r in files_of(name)]


def side(name: str) -> versus.Side:
    """A committed baseline (results/baselines/NAME.json) or a fleet run (a folder)."""
    return versus.Side.of(name, files_of(name))


def scaled(e: Entry, factor: float) -> Entry:
    """A repetition taking `factor` times as long (its rates divided by it)."""
    raw = dict(e.raw)
    if "real_time" in raw:
        raw["real_time"] *= factor
    for key in ("flops", "bytes_per_second", "traffic_bytes_per_second", "items_per_second"):
        if key in raw:
            raw[key] /= factor
    return Entry(e.name, raw)


def planted(name: str, label: str = "", slower: dict[str, float] | None = None,
            **context: str) -> versus.Side:
    """A planted copy of a committed run: its context with `context` set, and each row whose name
    starts with a key of `slower` taking that many times as long."""
    out = []
    for r in files_of(name):
        entries = [next((scaled(e, f) for prefix, f in (slower or {}).items()
                         if e.run_name.startswith(prefix)), e) for e in r.entries]
        out.append(Results(r.path, {**r.context, **context}, entries, r.provenance))
    return versus.Side.of(label or name, out)


@pytest.fixture(scope="module")
def sides() -> dict[str, versus.Side]:
    return {n: side(n) for n in ("h100-ubuntu24", "h200-ubuntu24", "ci-cpu-2core", "normal-1",
                                 "sse41")}


@pytest.fixture(scope="module")
def same_code() -> dict[str, versus.Side]:
    return {n: planted(n, **SAME_CODE) for n in ("h100-ubuntu24", "h200-ubuntu24",
                                                 "ci-cpu-2core")}


def work(c: versus.Comparison, name: str) -> versus.Work:
    (found,) = [w for w in c.works if w.pair.here.name == name]
    return found


def short(c: versus.Comparison) -> None:
    """The verdict a person reads in one breath."""
    lines = versus.verdict_lines(c)
    assert len(lines) <= versus.VERDICT_LINES, lines
    assert len(versus.verdict(c)) <= versus.VERDICT_CHARS, versus.verdict(c)


# ---- the H100 against the H200 -----------------------------------------------------------------

def test_the_h100_against_the_h200_as_committed_refuses_the_changed_methods(sides):
    """Their files predate method versions: the methods table's versions at their commits say
    which methods changed between them (cuDNN's search went from Find to FindEx with warm
    re-timings, the LSTM's algorithm from STANDARD to PyTorch's heuristic, half-precision
    matmuls to cuBLASLt): those rows are refused, quoting why, and every other row is compared,
    wherever the report is installed."""
    c = versus.compare(sides["h100-ubuntu24"], sides["h200-ubuntu24"])
    assert (c.here.commit, c.there.commit) == ("c742a4a", "42634e8")  # context; provenance
    find = work(c, FIND)
    assert find in c.not_comparable and find not in c.slower
    assert find.pair.reasons[-1] == (
        "its method changed: overhead/startup/gpu/what:cudnn_find_conv version 2 here, 1 there "
        "(c742a4a: the timed search is FindEx with its workspace and a warm re-timing, not "
        "cudnnFindConvolutionForwardAlgorithm (kernels/conv_cudnn_gpu.cpp))")
    compared = [w for w in c.works if not w.pair.reasons]
    assert len(c.works) == 165 and len(compared) == 94
    families = {w.pair.here.parsed.family for w in compared}
    assert families == {"conv", "lstm", "overhead", "transfer", "pipeline"}
    assert work(c, GEMM_FP32) in compared and work(c, D2D) in compared  # float32: cublasSgemm
    assert not any(w.pair.caveats for w in c.works)  # every method known
    for w in c.not_comparable:  # a method change always says why
        assert all("(c742a4a: " in r for r in w.pair.reasons if r.startswith("its method"))
    assert "cuDNN's algorithm search" not in versus.verdict(c)
    short(c)


def test_the_h100_against_the_h200_with_the_same_code(same_code):
    c = versus.compare(same_code["h100-ubuntu24"], same_code["h200-ubuntu24"])
    # Device-to-device copies: 0.71x, put down to the memory's bandwidth, 3352 against 4917 GB/s
    # (from the table of bus widths: the files predate gpu.memory_bus_width_bits).
    d2d = work(c, D2D)
    assert round(d2d.pair.speed, 2) == 0.71 and d2d.pair.differs
    e = d2d.explanation
    assert (e.ceiling, e.how) == ("gpu_memory", "fully") and e.facts == ()
    assert round(e.here.value / 1e9) == 3352 and round(e.there.value / 1e9) == 4917
    assert "from gapbench's table" in e.here.source
    # Defect 1: the pageable h2d copy (1.16x) is no longer put down to the host's read probe,
    # whose start and end differ by 14-25% within each run; its bound, the host's memcpy, was
    # not measured on either GPU machine, which the reading says.
    pageable = work(c, PAGEABLE_H2D)
    assert round(pageable.pair.speed, 2) == 1.16 and not pageable.explanation.explained
    assert "the host memory copy bandwidth (one thread's memcpy) is unknown (here and there " \
           "the run did not measure it)" in versus.reading(pageable, "this run", "h200")
    assert not any(w.explanation.ceiling == "host_read" for w in c.differing)
    # The same kernel launch: 1.31x faster here, and nothing recorded explains it.
    launch = work(c, LAUNCH)
    assert round(launch.pair.speed, 2) == 1.31 and not launch.explanation.explained
    # Pinned PCIe copies and the float32 GEMM: the same within 1-2%, no finding.
    for w in [work(c, PINNED_H2D), work(c, GEMM_FP32)]:
        assert abs(w.pair.speed - 1) < 0.02 and not w.pair.differs and not w.pair.reasons
    # The small cuDNN LSTM, 62 µs against 1.68 ms, is no machine difference: not comparable.
    lstm = work(c, SMALL_LSTM)
    assert lstm in c.not_comparable and lstm.pair.reasons == (
        "algorithm: persist_static_small_h here, not named there",
        "math mode: fma here, not named there",
        "held here, unheld there (an unheld kernel time includes the host's launches)")
    assert work(c, CONV_FP32).pair.reasons[0] == \
        "algorithm: WINOGRAD_NONFUSED here, FFT_TILING there"
    line = versus.verdict(c)
    assert line.startswith("Slower here than on h200-ubuntu24 in ")
    assert "GPU memory bandwidth (theoretical)" in line
    short(c)


def test_the_h200_against_the_h100_is_the_same_read_the_other_way(same_code):
    there = versus.compare(same_code["h100-ubuntu24"], same_code["h200-ubuntu24"])
    back = versus.compare(same_code["h200-ubuntu24"], same_code["h100-ubuntu24"])
    assert work(back, D2D).explanation.how == "fully"
    assert round(work(back, D2D).pair.speed, 2) == 1.40
    assert len(back.not_comparable) == len(there.not_comparable)
    assert {w.pair.here.name for w in back.slower} == {w.pair.here.name for w in there.faster}
    short(back)


def test_a_small_copy_is_bound_by_latency_not_bandwidth(same_code):
    """Defect 4: a 4 KiB device copy (3.4 µs, within a few launches and synchronizes) made 1.45x
    slower is never put down to the GPU memory's bandwidth."""
    slow = planted("h100-ubuntu24", "slow-copies", {D2D_4K: 1.45}, **SAME_CODE)
    c = versus.compare(slow, same_code["h200-ubuntu24"])
    copy = work(c, D2D_4K)
    assert copy.pair.differs and copy.explanation.ceiling in versus.LATENCY
    assert "GPU memory bandwidth" not in versus.reading(copy, "slow-copies", "h200")


def test_a_link_trained_slower_is_named_by_its_trained_speed(same_code):
    """Defect 7: the ceiling is the link as trained (Gen3 x16 here), not its maximum, so the
    pinned copies it slows are put down to it, with the fact."""
    gen3 = planted("h100-ubuntu24", "gen3", {"transfer/pinned/gpu/dir:h2d/mode:sync/bytes:2684":
                                             63.02 / 15.75}, **SAME_CODE,
                   **{"pcie.gen_current": "3", "pcie.bandwidth_current_gbps": "15.75"})
    c = versus.compare(gen3, same_code["h200-ubuntu24"])
    pinned = work(c, PINNED_H2D)
    e = pinned.explanation
    assert (e.ceiling, e.how) == ("pcie", "fully") and round(e.here.value / 1e9, 2) == 15.75
    assert [d.key for _, d in e.facts] == ["pcie.gen_current"]


# ---- a GPU against the CPU-only machine, and back ---------------------------------------------

@pytest.mark.parametrize("gpu", ["h100-ubuntu24", "h200-ubuntu24"])
def test_a_gpu_against_the_cpu_baseline_pairs_like_with_like(same_code, gpu):
    """Between devices each machine's fastest row of a work in the same scope and FLOPs: never
    an end-to-end row against a compute-only one (defect 5), never LSTM steps of 134 against 268
    MFLOP; a FLOP peak explains only rows that reach half of it on both (defect 2)."""
    c = versus.compare(same_code[gpu], same_code["ci-cpu-2core"])
    assert c.works and all(w.pair.across_devices for w in c.works)
    for w in c.works:
        assert versus.end_to_end(w.pair.here) == versus.end_to_end(w.pair.there), w.pair.words
        a, b = versus.flops_per_iteration(w.pair.here), versus.flops_per_iteration(w.pair.there)
        assert not (a and b) or abs(a / b - 1) <= versus.SAME_FLOPS, w.pair.words
    for w in c.differing:
        e = w.explanation
        if e.explained:
            assert w.pair.here.counter("flops") >= versus.COMPUTE_BOUND * e.here.value
            assert w.pair.there.counter("flops") >= versus.COMPUTE_BOUND * e.there.value
        if e.how == "fully":
            assert max(w.pair.speed / e.ratio, e.ratio / w.pair.speed) <= versus.FULLY_LEFT
    dense = [w for w in c.differing if "op dense · batch 2048" in w.pair.words]
    assert dense and all(not w.explanation.explained for w in dense)
    assert all("compute-bound" in versus.reading(w, gpu, "cpu") for w in dense)
    conv = work(c, CONV_FP32)
    assert 200 < conv.pair.speed < 600 and conv.pair.there.parsed.variant == "onednn"
    # The CPU's side is its own FMA peak, not OpenBLAS's SGEMM (the baseline has peak/flops).
    assert (conv.explanation.ceiling, conv.explanation.there_ceiling) == ("gemm:gpu:fp32",
                                                                          "cpu_flops:fp32")
    assert conv.explanation.how == "fully"
    short(c)
    short(versus.compare(same_code["ci-cpu-2core"], same_code[gpu]))


# ---- the CPU against itself with one cause planted ----------------------------------------------

def test_the_plain_run_against_the_capped_one(sides):
    """sse41 (oneDNN capped to SSE4.1, OpenBLAS to Nehalem's kernels) against normal-1: the
    caps named first; oneDNN's rows by its cap (their implementation names are a fact of the
    instruction set, so compared); never the plain run's own kernels for its slowness."""
    c = versus.compare(sides["sse41"], sides["normal-1"])
    onednn = work(c, ONEDNN_CONV)
    assert onednn.pair.speed < 0.6 and not onednn.explanation.explained
    assert [d.key for _, d in onednn.explanation.facts] == ["onednn.isa_cap", "onednn.isa"]
    assert versus.reading(onednn, "sse41", "normal-1").startswith(
        "here, its oneDNN was capped to an older instruction set (onednn.isa_cap SSE41; not set "
        "on normal-1); here, oneDNN ran an older instruction set (onednn.isa sse41; "
        "avx512_core_bf16 on normal-1)")
    assert versus.verdict(c).startswith(
        "Slower here than on normal-1 in 6 of 17 works: its OpenBLAS was forced to another "
        "CPU's kernels: 73% (4 works, 0.23–0.55x)")
    back = versus.compare(sides["normal-1"], sides["sse41"])
    for w in back.slower:
        assert all(m == "sse41" or d.key != "openblas.core" for m, d in w.explanation.facts)
    short(c)
    short(back)


def test_a_newer_instruction_set_never_explains_slowness(sides):
    """Defect 9: the plain run, slower at one oneDNN conv than the capped run, is not told its
    better instruction set is why."""
    slow = planted("normal-1", "plain-slowed", {ONEDNN_CONV: 4.0})
    c = versus.compare(slow, sides["sse41"])
    assert all(d.key != "onednn.isa" for _, d in work(c, ONEDNN_CONV).explanation.facts)


USABLE_1 = {"cpu.usable_cpus": "1", "cpu.affinity_cpus": "1", "cpu.quota_cpus": "none",
            "openblas.threads": "1"}
QUOTA_1 = {"cpu.usable_cpus": "1", "cpu.affinity_cpus": "2", "cpu.quota_cpus": "1",
           "cpu.quota_source": "cgroup v1 cpu.cfs_quota_us", "openblas.threads": "1"}
THREADED_ROWS = {"conv/onednn/": 2.0, "conv/im2col_blas/": 2.0, "overhead/openblas/": 2.0}


@pytest.mark.parametrize("facts, why", [(USABLE_1, "its CPU affinity here"),
                                        (QUOTA_1, "a container quota here")])
def test_fewer_usable_cpus_are_named_first(facts, why):
    """The pinned and the quota cases (planted on normal-1 until the real runs are committed):
    the threaded rows twice as slow are put down to the CPUs this process may use, named
    first, with why; the rows that use one thread are not."""
    plain = planted("normal-1", "plain", cpu_usable_cpus="2", **{"cpu.usable_cpus": "2",
                                                                 "cpu.affinity_cpus": "2",
                                                                 "cpu.quota_cpus": "none"})
    fewer = planted("normal-1", "fewer", THREADED_ROWS, **facts)
    c = versus.compare(fewer, plain)
    onednn = work(c, ONEDNN_CONV)
    assert (onednn.explanation.ceiling, onednn.explanation.how) == ("cpus", "fully")
    assert versus.reading(onednn, "fewer", "plain").startswith(
        "CPUs this process may use, 1 against 2")
    assert versus.verdict(c).startswith(
        f"Slower here than on plain in {len(c.slower)} of ")
    first = versus.verdict_lines(c)[0][1][0]
    assert first.startswith(f"this process may use 1 CPU here and 2 there ({why})"), first
    assert all("naive" not in w.pair.here.name for w in c.slower
               if w.explanation.ceiling == "cpus")
    short(c)


THIS_MACHINE = Path(__file__).parent / "data" / "versus" / "this-machine"


def this_machine(case: str) -> versus.Side:
    """A real planted-cause run of this 2-CPU machine (data/versus/this-machine/make-runs.sh)."""
    return versus.Side.of(case, [load_results(THIS_MACHINE / case / "gapbench.json")])


@pytest.mark.parametrize("case, first", [
    ("pinned-1cpu", "this process may use 1 CPU here and 2 there (its CPU affinity here)"),
    ("quota-1cpu", "this process may use 1 CPU here and 2 there (a container quota here)"),
    ("isa-capped", "its OpenBLAS was forced to another CPU's kernels (openblas.coretype "
                   "Haswell): 65% (7 works, 0.43–0.79x); its oneDNN was capped to an older "
                   "instruction set: 35% (3 works, 0.46–0.75x)"),
    # Between two runs of one machine a ceiling that moved is no cause: the load is.
    ("loaded", "other work loaded its cores (load_avg 11.80): 100% (21 works, 0.011–0.65x)"),
])
def test_each_planted_cause_is_named_first(case, first):
    """Real runs of this machine with one cause planted, against a plain run of it: the cause
    is the first the verdict names for what is slower, in one breath. (The machine was shared
    and loaded while they ran: what the pinned run did faster is put down to the machine itself,
    unsteady, with its evidence.)"""
    c = versus.compare(this_machine(case), this_machine("plain-1"))
    assert c.slower
    lead, items = versus.verdict_lines(c)[0]
    assert lead.startswith("Slower here than on plain-1 in ") and "; ".join(items).startswith(
        first)
    short(c)


def test_the_quota_is_cited_with_its_setting():
    c = versus.compare(this_machine("quota-1cpu"), this_machine("plain-1"))
    by_cpus = [w for w in c.slower if w.explanation.ceiling == "cpus"
               and w.explanation.explained]
    assert len(by_cpus) == 9 and by_cpus == c.slower  # every work slower here
    assert all("CPUs this process may use, 1 against 2 (a container quota here: cgroup v1 "
               "cpu.cfs_quota_us 100000 / cpu.cfs_period_us 100000)"
               in versus.reading(w, "quota-1cpu", "plain-1") for w in by_cpus)
    assert all(d.key != "cpu.usable_cpus" for w in by_cpus for _, d in w.explanation.facts)


def test_two_plain_runs_back_to_back_name_what_moved():
    """plain-2 against plain-1, minutes apart on the shared VM: what differs is put down to the
    load other work put on the cores and to the machine itself, unsteady, with its evidence;
    never "unexplained"."""
    c = versus.compare(this_machine("plain-2"), this_machine("plain-1"))
    line = versus.verdict(c)
    assert "unexplained" not in line
    assert line == ("Slower here than on plain-1 in 8 of 26 works: the machine itself was "
                    "unsteady (SGEMM probes 19.3–25.1 GFLOP/s; load_avg 10.88 here, 10.23 "
                    "there): 100% (8 works, 0.39–0.75x).")
    short(c)


def test_a_loaded_machine_is_named_by_its_load(sides):
    c = versus.compare(side("loaded"), sides["normal-1"])
    assert versus.verdict(c).startswith("Slower here than on normal-1 in ")
    assert versus.verdict_lines(c)[0][1][0].startswith("other work loaded its cores")
    short(c)


def test_two_plain_runs_of_one_machine_say_it_was_unsteady(sides):
    """Back to back on the shared 2-core VM, 4 of 20 works differ: nothing recorded differs
    between the runs, so the machine itself was unsteady, with its evidence."""
    c = versus.compare(sides["normal-1"], side("normal-2"))
    assert c.one_machine and c.differing
    line = versus.verdict(c)
    assert "the machine itself was unsteady (SGEMM probes 16.1–28.3 GFLOP/s; load_avg 10.59 " \
           "here, 10.47 there)" in line
    assert "unexplained" not in line
    for w in c.differing:  # each work's own reading says the same
        assert versus.reading(w, "normal-1", "normal-2").startswith(
            "the machine itself was unsteady (SGEMM probes")
    short(c)


def test_a_ceiling_the_other_way_overrules_the_facts(sides):
    """The dense step at batch 128 ran 3.9x faster under the Nehalem cap: the plain run's
    recorded facts are no cause of it (its own kernels are no cause where the other's were
    forced)."""
    c = versus.compare(sides["normal-1"], sides["sse41"])
    dense = work(c, "overhead/openblas/cpu/op:dense/batch:128/real_time")
    assert dense.pair.speed < 0.3 and dense.explanation.facts == ()
    assert versus.reading(dense, "normal-1", "sse41").startswith(
        "unexplained by the recorded facts")


# ---- a run against itself ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["h100-ubuntu24", "ci-cpu-2core", "normal-1"])
def test_a_run_against_itself_differs_in_nothing(sides, name):
    c = versus.compare(sides[name], side(name))
    assert c.works and not c.slower and not c.faster and not c.not_comparable and not c.sizes
    assert all(w.pair.speed == 1 for w in c.works)
    assert versus.verdict(c) == (f"Nothing differs from {name} by more than 10% in the "
                                 f"{len(c.works)} works both ran.")


def test_two_runs_that_share_no_work_say_so():
    here = versus.Side.of("a", [in_memory(runs("conv/naive/cpu/n:2/real_time", [1.0]))])
    there = versus.Side.of("b", [in_memory(runs("lstm/blas/cpu/n:2/real_time", [1.0]))])
    assert versus.verdict(versus.compare(here, there)) == \
        "This run and b share no work: no benchmark both ran."
    refused = versus.Side.of("c", [in_memory(runs("conv/naive/cpu/n:2/real_time", [1.0]),
                                             **{"gapbench.method.conv": "2"})])
    mine = versus.Side.of("a", [in_memory(runs("conv/naive/cpu/n:2/real_time", [1.0]),
                                          **{"gapbench.method.conv": "1"})])
    assert versus.verdict(versus.compare(mine, refused)) == (
        "This run and c share no comparable work: every work both ran is listed as not "
        "comparable. 1 not comparable (another method: see the list).")


# ---- the rules, each on its own ----------------------------------------------------------------

def row(name: str, seconds: list[float], label: str = "", math_: str = "fp32",
        labels: tuple[str, ...] = ()) -> Benchmark:
    return Benchmark(name, parse_name(name), tuple(seconds), {}, {}, label=label, math=math_,
                     labels=labels)


@pytest.mark.parametrize("ceiling, speed, how", [
    (0.68, 0.713, "fully"),  # the H100's copies: 1.05x left
    (1.25, 1.16, "fully"),  # 1.08x left
    (2.0, 1.5, "beyond"),  # 1.33x left, the ceiling the further: partly bound by it
    (1.30, 2.0, "partly"),  # share 0.38
    (1.12, 4.0, "no"),  # share 0.08
    (1.05, 2.0, "no"),  # ceilings within 10% explain nothing
    (0.5, 2.0, "against"),
    (361, 88, "beyond"),  # an LSTM step 88x faster, the GEMM peaks 361x apart: 4.1x left
    (361, 380, "fully"),
    (361, 250, "beyond"),  # share 1.07 (once "fully"), but 1.44x left
])
def test_how_much_a_ceiling_explains(ceiling, speed, how):
    assert versus.how_much(ceiling, speed) == how


def test_fully_leaves_at_most_a_quarter_in_plain_terms():
    """Defect 2: at any ratio, "fully" leaves at most 1.25x unexplained either way."""
    for speed in (1.5, 10.0, 380.0):
        assert versus.how_much(speed * 1.24, speed) == "fully"
        assert versus.how_much(speed / 1.24, speed) == "fully"
        assert versus.how_much(speed * 1.26, speed) == "beyond"
        assert versus.how_much(speed / 1.26, speed) == "partly"


def test_a_ceiling_whose_spread_covers_the_difference_explains_nothing():
    """Defect 1: a ceiling measured with a 25% spread within one run cannot explain a work 16%
    apart; measured tightly, it can."""
    copy = "transfer/memcpy/cpu/bytes:67108864/real_time"

    def machine(label: str, copy_s: float, memcpy: list[float]) -> versus.Side:
        return versus.Side.of(label, [in_memory(
            runs(copy, [copy_s] * 3) + runs("peak/memcpy/cpu/mib:256/real_time", [1.0] * 3,
                                            bytes_per_second=memcpy), **SAME_CODE,
            **{"machine.id": label})])  # two machines: one machine's ceiling moving is no cause
    slow = machine("slow", 1.16, [8.0e9, 9.0e9, 10.0e9])
    fast = machine("fast", 1.0, [9.3e9, 10.4e9, 11.6e9])
    e = work(versus.compare(slow, fast), copy).explanation
    assert (e.ceiling, e.how) == ("host_memcpy", "unsteady")
    tight = machine("tight", 1.16, [8.95e9, 9.0e9, 9.05e9])
    steady = machine("steady", 1.0, [10.3e9, 10.4e9, 10.5e9])
    assert work(versus.compare(tight, steady), copy).explanation.how == "fully"


def test_a_partly_bound_row_names_its_ceiling():
    """Defect 8: an SGEMM halved, GEMM rows 1.5x slower: partly bound by the SGEMM, named."""
    gemm = "overhead/openblas/cpu/op:matmul/n:1024/real_time"

    def machine(label: str, gemm_s: float, sgemm: float) -> versus.Side:
        flops = 2 * 1024 ** 3
        return versus.Side.of(label, [in_memory(
            runs(gemm, [gemm_s] * 3, flops=[flops / gemm_s] * 3)
            + runs("peak/sgemm/cpu/n:1024/real_time", [1.0] * 3, flops=[sgemm] * 3),
            **SAME_CODE, **{"machine.id": label})])
    slow, fast = machine("slow", 0.03, 50e9), machine("fast", 0.02, 100e9)
    w = work(versus.compare(slow, fast), gemm)
    assert w.explanation.how == "beyond" and w.explanation.explained
    assert versus.reading(w, "slow", "fast").startswith(
        "partly bound by the CPU SGEMM, 50 GFLOP/s against 100 GFLOP/s (0.50x, more than the "
        "work's 0.67x")


def test_equal_physical_peaks_make_a_blas_gap_the_librarys():
    """Where both machines' physical FLOP peaks are equal, a slower OpenBLAS is its own kernels'
    or threads' doing, not the hardware's."""
    gemm = "overhead/openblas/cpu/op:matmul/n:1024/real_time"
    peak = "peak/flops/cpu/isa:avx2/math:fp32/real_time/threads:2"

    def machine(label: str, gemm_s: float, threads: str) -> versus.Side:
        flops = 2 * 1024 ** 3
        return versus.Side.of(label, [in_memory(
            runs(gemm, [gemm_s] * 3, flops=[flops / gemm_s] * 3)
            + runs(peak, [1.0] * 3, flops=[150e9] * 3),
            **SAME_CODE, **{"openblas.threads": threads})])
    w = work(versus.compare(machine("slow", 0.04, "1"), machine("fast", 0.02, "2")), gemm)
    assert w.explanation.library == "openblas" and not w.explanation.explained
    assert versus.reading(w, "slow", "fast").startswith(
        "OpenBLAS's own kernels or threads, not the hardware (the CPUs' physical peaks are "
        "equal: 150 GFLOP/s against 150 GFLOP/s); here, OpenBLAS ran fewer threads "
        "(openblas.threads 1; 2 on fast)")


COMMITS = ("1111111", "2222222")
CHANGED = methods.Identity(methods.CHANGED, "changed")
UNKNOWN = methods.Identity(methods.UNKNOWN, "unknown")


@pytest.mark.parametrize("here, there, code, reason", [
    (row("conv/cudnn/gpu/n:1/manual_time", [1.0], "algo:GEMM math:fma"),
     row("conv/cudnn/gpu/n:1/manual_time", [1.0], "algo:FFT math:fma"),
     methods.Identity(methods.SAME), "algorithm: GEMM here, FFT there"),
    (row("conv/cudnn/gpu/n:1/math:fp16/manual_time", [1.0], "data:fp16 layout:nhwc", "fp16"),
     row("conv/cudnn/gpu/n:1/math:fp16/manual_time", [1.0], "data:fp16 layout:nchw", "fp16"),
     methods.Identity(methods.SAME), "layout: nhwc here, nchw there"),
    (row("conv/cudnn/gpu/n:1/manual_time", [1.0], math_="tf32"),
     row("conv/cudnn/gpu/n:1/manual_time", [1.0], math_="fp32"),
     methods.Identity(methods.SAME), "math: TF32 here, float32 there"),
    (row("lstm/cublas/gpu/steps:100/manual_time", [1.0], "unheld: 301 launches"),
     row("lstm/cublas/gpu/steps:100/manual_time", [1.0]), methods.Identity(methods.SAME),
     "unheld here, held there (an unheld kernel time includes the host's launches)"),
    (row("overhead/cublas/gpu/n:16/math:fp16/manual_time", [1.0], "cublasLt heuristic", "fp16"),
     row("overhead/cublas/gpu/n:16/math:fp16/manual_time", [1.0], "", "fp16"), CHANGED,
     "changed"),
    # Defect 6: one side with no commit is not the same code.
    (row("overhead/cublas/gpu/n:16/manual_time", [1.0], "cublasLt heuristic"),
     row("overhead/cublas/gpu/n:16/manual_time", [1.0], ""), UNKNOWN,
     "a gapbench not known to be the same labelled it otherwise: \"cublasLt heuristic\" here, "
     "\"none\" there"),
    # Defect 6: every repetition's label, not the first's.
    (row("conv/cudnn/gpu/n:1/manual_time", [1.0, 1.0], "algo:GEMM",
         labels=("algo:GEMM", "algo:FFT")),
     row("conv/cudnn/gpu/n:1/manual_time", [1.0, 1.0], "algo:GEMM",
         labels=("algo:GEMM", "algo:GEMM")),
     methods.Identity(methods.SAME), "algorithm: FFT/GEMM here, GEMM there"),
])
def test_what_makes_two_rows_not_comparable(here, there, code, reason):
    assert versus.configuration_differs(here, there, code) == [reason]


def test_rows_alike_in_their_configuration_are_comparable():
    a = row("conv/cudnn/gpu/n:1/manual_time", [1.0], "algo:GEMM math:fma")
    assert versus.configuration_differs(a, a, UNKNOWN) == []  # a commit unknown, one label
    b = row("conv/cudnn/gpu/n:1/manual_time", [2.0], "algo:GEMM workspace_bytes:9 math:fma")
    assert versus.configuration_differs(a, b) == []  # the same code
    first = row("conv/cudnn/gpu/n:1/manual_time", [1.0, 1.0], "algo:FFT",
                labels=("algo:FFT", "algo:GEMM"))
    again = row("conv/cudnn/gpu/n:1/manual_time", [1.0, 1.0], "algo:GEMM",
                labels=("algo:GEMM", "algo:FFT"))
    assert versus.configuration_differs(first, again, UNKNOWN) == []  # repetitions reordered


def test_the_method_identity_of_a_row():
    one = ({"gapbench.method.conv": "1", "gapbench.method.conv/cudnn/gpu": "2"}, "1111111")
    row = ("conv/cudnn/gpu/n:1/math:fp32/manual_time",)
    assert methods.identity(row, one, one).state == methods.SAME
    older = ({"gapbench.method.conv": "1"}, "2222222")  # conv/cudnn/gpu at its first version
    changed = methods.identity(row, one, older)
    assert changed.state == methods.CHANGED
    assert changed.words.startswith("its method changed: conv/cudnn/gpu version 2 here, 1 there")
    assert methods.identity(("conv/naive/gpu/n:1/manual_time",), one, older).state == \
        methods.SAME
    undecided = ({"gapbench.method.conv": "1+0123456789ab"}, "3333333")
    words = methods.identity(row, undecided, older).words
    assert words.startswith("its method may have changed: conv's timed code") and \
        "here, a build of code nobody had decided on (version 1+0123456789ab)" in words
    assert methods.identity(row, undecided, undecided).state == methods.SAME
    # Neither side recorded versions: one commit is one method, else unknown.
    assert methods.identity(row, ({}, "1111111"), ({}, "1111111abcd")).state == methods.SAME
    unknown = methods.identity(row, one, ({}, ""))
    assert unknown.state == methods.UNKNOWN and unknown.words == (
        "its method may differ: the run there records no method versions, and its gapbench "
        "commit is not one the methods table lists")
    assert methods.identity(row, one, ({}, "2222222")).state == methods.UNKNOWN


def test_a_method_change_of_one_axis_refuses_those_rows_only():
    """The half-precision matmuls changed library (cuBLASLt, C in half): their rows are another
    method, the float32 rows of the same variant are not."""
    now = ({"gapbench.method.overhead": "1", "gapbench.method.overhead/cublas/gpu/math:fp16": "2"},
           "1111111")
    before = ({"gapbench.method.overhead": "1"}, "2222222")
    fp16 = methods.identity(("overhead/cublas/gpu/op:matmul/n:16/math:fp16/manual_time",), now,
                            before)
    assert fp16.state == methods.CHANGED and "overhead/cublas/gpu/math:fp16 version 2" in \
        fp16.words
    assert methods.identity(("overhead/cublas/gpu/op:matmul/n:16/manual_time",), now,
                            before).state == methods.SAME
    assert methods.keys_of("overhead/cublas/gpu/n:16/math:fp16/manual_time",
                           {"overhead/cublas/gpu/math:fp16", "overhead/cublas/gpu/math:bf16",
                            "overhead/cublas_e2e/gpu/math:fp16"}) == [
        "overhead", "overhead/cublas/gpu", "overhead/cublas/gpu/math:fp16"]


def test_a_file_that_predates_method_versions_is_read_through_the_table():
    """The committed baselines' commits are in the table; a row refused between two of them
    quotes the table's reason for the version it moved to."""
    assert {"42634e8", "c742a4a", "25e59d1"} <= set(METHODS_AT_COMMIT)
    for commit, table in METHODS_AT_COMMIT.items():
        for key, version in table.items():
            assert key in METHOD_CHANGES and 1 <= version <= len(METHOD_CHANGES[key]) + 1, \
                (commit, key)
    older = methods.versions({}, "42634e8")
    key, why = next((k, w) for k, w in METHOD_CHANGES.items()
                    if "/" in k and int(methods.version(older, k)) < len(w) + 1)
    now = ({f"{methods.METHOD_KEY}{key}": str(len(why) + 1)}, "deadbee")
    found = methods.identity((f"{key}/n:1/manual_time",), now, ({}, "42634e8"))
    assert found.state == methods.CHANGED and why[-1] in found.words


def test_a_row_whose_method_is_unknown_says_so_beside_it():
    here = versus.Side.of("a", [in_memory(runs("conv/naive/cpu/n:2/real_time", [2.0, 2.1]))])
    there = versus.Side.of("b", [in_memory(runs("conv/naive/cpu/n:2/real_time", [1.0, 1.1]))])
    (w,) = versus.compare(here, there).works
    assert w.pair.caveats == ("its method may differ: the run on either machine records no "
                              "method versions, and its gapbench commit is not one the methods "
                              "table lists",)
    assert versus.reading(w, "a", "b").endswith(w.pair.caveats[0])


def test_a_difference_within_the_repetitions_spread_is_none():
    name = "transfer/device/gpu/dir:d2d/manual_time"
    assert versus.Pair(row(name, [1.0, 1.2, 1.5]), row(name, [1.3, 1.4])).differs is False
    assert versus.Pair(row(name, [1.0, 1.1]), row(name, [1.3, 1.4])).differs is True
    assert versus.Pair(row(name, [1.0]), row(name, [1.09])).differs is False  # within 10%


def test_the_gpu_memorys_bandwidth_from_what_a_run_recorded():
    recorded = {"gpu.memory_bandwidth_theoretical_gbps": "3352.3", "gpu.name": "NVIDIA H200"}
    assert versus.gpu_memory_bandwidth(recorded).value == 3352.3e9
    measured_width = {"gpu.clock_mem_max_mhz": "5001", "gpu.memory_bus_width_bits": "256",
                      "gpu.memory_bandwidth_theoretical_gbps": "unavailable (why)"}
    assert versus.gpu_memory_bandwidth(measured_width).value == pytest.approx(320.064e9)
    from_table = {"gpu.clock_mem_max_mhz": "3201", "gpu.name": "NVIDIA H200"}
    figure = versus.gpu_memory_bandwidth(from_table)
    assert round(figure.value / 1e9) == 4917 and "gapbench's table" in figure.source
    assert versus.gpu_memory_bandwidth({"gpu.clock_mem_max_mhz": "1000",
                                        "gpu.name": "Some Other GPU"}) is None


def test_facts_every_new_run_records_never_differ_from_a_file_without_them():
    old = Facts.of_context({"cpu.model": "Xeon"})
    new = Facts.of_context({"cpu.model": "Xeon", "host.clocksource": "tsc",
                            "cpu.signature": "unavailable (not x86)"})
    assert differences(new, Usual.of([old])) == []
    hpet = Facts.of_context({"cpu.model": "Xeon", "host.clocksource": "hpet"})
    (found,) = differences(hpet, Usual.of([new]))
    assert (found.key, found.value, found.others) == ("host.clocksource", "hpet", "tsc")


def test_a_library_fact_concerns_that_librarys_rows_alone():
    capped = {"onednn.isa_cap": "SSE41", "onednn.isa": "sse41"}
    slow = versus.Side.of("capped", [in_memory(
        runs("conv/onednn/cpu/n:1/real_time", [2.0, 2.1]) + runs(
            "conv/naive/cpu/n:1/real_time", [2.0, 2.1]), **capped)])
    fast = versus.Side.of("plain", [in_memory(
        runs("conv/onednn/cpu/n:1/real_time", [1.0, 1.1]) + runs(
            "conv/naive/cpu/n:1/real_time", [1.0, 1.1]), **{"onednn.isa": "avx2"})])
    c = versus.compare(slow, fast)
    assert [d.key for _, d in work(c, "conv/onednn/cpu/n:1/real_time").explanation.facts] == \
        ["onednn.isa_cap", "onednn.isa"]
    assert work(c, "conv/naive/cpu/n:1/real_time").explanation.facts == ()


def test_variants_run_at_other_sizes_only_are_listed():
    here = versus.Side.of("quick", [in_memory(runs("conv/naive/cpu/n:2/c:64/real_time",
                                                   [1.0]))])
    there = versus.Side.of("full", [in_memory(runs("conv/naive/cpu/n:32/c:64/real_time",
                                                   [9.0]))])
    c = versus.compare(here, there)
    assert c.works == () and c.sizes == (("CPU naive conv", ["n 2 · c 64"], ["n 32 · c 64"]),)
    assert versus.verdict(c).endswith("1 not comparable (configured otherwise: see the list).")


# ---- in the report and on disk -----------------------------------------------------------------

def test_a_finding_says_what_the_comparison_says_of_its_benchmark():
    """Defect 9: the pageable-copy finding quotes its own row's comparison (the pageable copy
    against the same on the other machine), not the pinned row's: no second engine."""
    copy = "transfer/pinned/gpu/dir:h2d/mode:sync/bytes:67108864/manual_time"
    pageable = copy.replace("pinned", "pageable")
    mine = in_memory(runs(copy, [2.7e-3] * 3, bytes_per_second=[25e9] * 3)
                     + runs(pageable, [13e-3] * 3, bytes_per_second=[5e9] * 3),
                     **SAME_CODE, **{"pcie.bandwidth_current_gbps": "31.5"})
    theirs = in_memory(runs(copy, [2.8e-3] * 3, bytes_per_second=[24e9] * 3)
                       + runs(pageable, [26e-3] * 3, bytes_per_second=[2.5e9] * 3),
                       **SAME_CODE, **{"pcie.bandwidth_current_gbps": "15.75"})
    theirs = type(theirs)(Path("t4-colab.json"), theirs.context, theirs.entries)
    report = model.build_report([mine], [theirs])
    finding = next(f for f in report.findings if f.rule == "pageable_vs_pinned")
    assert finding.subject == pageable
    assert finding.text.endswith(
        "Against t4-colab: 2.00x its speed there, the PCIe link as trained (theoretical, per "
        "direction), 31.5 GB/s against 15.8 GB/s.")


def test_render_with_a_folder_as_the_baseline(tmp_path, capsys):
    """A fleet node's folder (its results files and doctor.json) is one machine; the
    comparison is written beside the page, and a later render without a baseline takes it
    away."""
    out = tmp_path / "r"
    assert render.main(["render", str(FLEET / "sse41"), "--baseline", str(FLEET / "normal-1"),
                        "--out", str(out)]) == 0
    capsys.readouterr()
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    (against,) = doc["comparisons"]
    assert doc["this"]["label"] == "this run" and against["baseline"]["label"] == "normal-1"
    assert against["verdict"].startswith("Slower here than on normal-1 in 6 of 17 works: its "
                                         "OpenBLAS was forced to another CPU's kernels: 73%")
    assert doc["schema"] == 2 and against["same_machine"] is False  # another machine.id
    assert against["causes"][0]["cause"] == ["facts", "openblas.coretype"]
    matmul = next(w for w in against["works"]
                  if w["this"]["name"] == "overhead/openblas/cpu/op:matmul/n:1024/real_time")
    assert matmul["comparable"] and matmul["differs"] and matmul["explained"] == "fully"
    assert matmul["ceiling"]["key"] == "gemm:cpu:fp32"
    assert matmul["ceiling"]["this"]["unit"] == "FLOP/s" and 0.8 <= matmul["share_explained"]
    assert [f["key"] for f in matmul["facts"]] == ["openblas.coretype", "openblas.core"]
    assert matmul["speed_ratio"] == matmul["baseline"]["seconds"] / matmul["this"]["seconds"]
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<h3>Against normal-1</h3>" in page and "versus-normal-1.png" not in page
    assert (out / "versus-normal-1.png").is_file() and (out / "machines.png").is_file()
    assert render.main(["render", str(FLEET / "sse41"), "--out", str(out)]) == 0
    assert not (out / "comparison.json").exists()


def same_code_file(tmp_path: Path, name: str) -> Path:
    """A committed baseline with SAME_CODE planted in its context, as a file."""
    doc = json.loads((BASELINES / f"{name}.json").read_text(encoding="utf-8"))
    doc["context"].update(SAME_CODE)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_comparison_json_holds_each_work_of_the_h100_against_the_h200(tmp_path, capsys):
    out = tmp_path / "r"
    assert render.main(["render", str(same_code_file(tmp_path, "h100-ubuntu24")), "--baseline",
                        str(same_code_file(tmp_path, "h200-ubuntu24")), "--out",
                        str(out)]) == 0
    capsys.readouterr()
    (against,) = json.loads((out / "comparison.json").read_text())["comparisons"]
    works = {w["this"]["name"]: w for w in against["works"]}
    d2d = works[D2D]
    assert d2d["cause"] == ["ceiling", "gpu_memory", "gpu_memory"]
    assert d2d["ceiling"]["this"]["low"] is None  # a theoretical figure: no spread
    launch = works[LAUNCH]["ceiling"]
    assert launch is None or launch["key"] != "launch"  # never its own ceiling
    assert (d2d["ceiling"]["key"], d2d["explained"]) == ("gpu_memory", "fully")
    assert round(d2d["ceiling"]["this"]["value"] / 1e9) == 3352
    assert round(d2d["ceiling"]["baseline"]["value"] / 1e9) == 4917
    assert d2d["not_comparable_because"] == [] and round(d2d["speed_ratio"], 2) == 0.71
    lstm = works[SMALL_LSTM]
    assert not lstm["comparable"] and lstm["explained"] is None and len(
        lstm["not_comparable_because"]) == 3
    assert works[GEMM_FP32]["differs"] is False
    assert against["baseline"]["gapbench_commit"] == "42634e8"


def test_a_folder_with_no_results_file_is_refused(tmp_path, capsys):
    node = tmp_path / "node"
    node.mkdir()
    (node / "doctor.json").write_text("{}", encoding="utf-8")
    code = render.main(["render", str(BASELINES / "ci-cpu-2core.json"), "--baseline",
                        str(node), "--out", str(tmp_path / "r")])
    assert code == 2
    assert f"{node}: a folder with no results files (*.json) in it" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_the_charts_of_the_h100_against_the_h200(sides, tmp_path):
    """Each machine's ceilings side by side (those both have), and each differing work's ratio
    beside its ceiling's: the copies' 0.71x beside the memory's 0.68x."""
    from gapbench_report.render import plots  # noqa: PLC0415
    report = model.build_report(files_of_planted("h100-ubuntu24"),
                                files_of_planted("h200-ubuntu24"))
    ceilings = plots.metrics_chart_data(report.ceiling_columns)
    memory = ceilings.names.index("GPU memory bandwidth (theoretical), GB/s")
    assert [round(v) for v in ceilings.values[memory]] == [3352, 4917]
    assert "float32 GPU GEMM peak, TFLOP/s" in ceilings.names
    (section,) = report.versus
    chart = plots.versus_chart_data(section.bars, section.label)
    d2d = chart.labels.index("device memory copies (256 MiB)\n  ceiling: GPU memory bandwidth "
                             "(theoretical)")
    assert round(chart.speeds[d2d], 2) == 0.71 and round(chart.ceilings[d2d], 2) == 0.68
    assert len(chart.labels) == min(len(section.bars), plots.machines.VERSUS_BARS)
    for png in (plots.metrics_chart(report.ceiling_columns, tmp_path / "machines"),
                plots.versus_chart(section.bars, section.label, tmp_path / "versus")):
        assert png.read_bytes().startswith(b"\x89PNG") and png.with_suffix(".svg").is_file()
    assert plots.versus_chart_data([], "nobody") is None


def test_the_report_never_runs_a_program_to_compare():
    """Whether two rows are the same method is read from the files alone, so the answer is the
    same in a checkout and away from one: no module of the package starts a process."""
    package = Path(versus.__file__).resolve().parents[1]
    users = [p.relative_to(package) for p in package.rglob("*.py")
             if "subprocess" in p.read_text(encoding="utf-8")]
    assert users == []


# ---- two runs of one machine whose CPUs were shared --------------------------------------------

SHARED_CONV = "conv/onednn/cpu/n:1/c:1/hw:28/k:1/r:3/stride:1/pad:0/real_time"


def shared_side(label: str, seconds: float, **context: str) -> versus.Side:
    """One run of a 2-vCPU machine: its physical peak (the same in every run) and a oneDNN
    conv, with the stability figures in `context`."""
    peak = [e for threads, gflops in ((1, 94), (2, 183)) for e in runs(
        f"peak/flops/cpu/isa:avx2/math:fp32/real_time/threads:{threads}", [0.01] * 3,
        flops=[gflops * 1e9] * 3)]
    conv = runs(SHARED_CONV, [seconds * f for f in (1.0, 1.01, 1.02)],
                flops=[1.2e6 / seconds] * 3)
    return versus.Side.of(label, [in_memory(peak + conv, **SAME_CODE, **context)])


def shared_reading(here: versus.Side, there: versus.Side) -> tuple[str, str]:
    c = versus.compare(here, there)
    (w,) = c.differing
    return versus.reading(w, here.label, there.label), versus.verdict(c)


def test_a_row_of_a_run_beside_other_work_is_put_down_to_it_not_to_the_library():
    quiet = {"stability.other_cpus": "0.02", "stability.steal": "0.000"}
    plain = shared_side("plain", 4.5e-6, **quiet)
    # Without other work recorded, the equal peaks make it oneDNN's own (the old reading).
    reading, _ = shared_reading(shared_side("again", 9e-6, **quiet), plain)
    assert reading.startswith("oneDNN's own kernels or threads")
    busy = shared_side("busy", 9e-6, **{"stability.other_cpus": "0.91",
                                        "stability.steal": "0.000"})
    reading, line = shared_reading(busy, plain)
    assert reading == ("other work used these CPUs during the run (0.9 of a CPU here, 0.0 of a "
                       "CPU there)")
    assert "own kernels" not in line and "ceiling" not in reading
    assert line.startswith("Slower here than on plain in 1 of 1 works: other work used these "
                           "CPUs during the run (0.9 of a CPU here, 0.0 of a CPU there): 100%")
    # The other way round, the same cause (the faster side's other work is cited there).
    reading, _ = shared_reading(plain, busy)
    assert reading.startswith("other work used these CPUs during the run (0.0 of a CPU here, "
                              "0.9 of a CPU there)")


def test_a_row_whose_runs_read_other_parallel_capacities_is_put_down_to_them():
    def capacity(all_gflops: float) -> dict:
        return {"stability.other_cpus": "0.02", "stability.fma_threads": "2",
                **{f"stability.fma_one_gflops_{w}": "94" for w in ("start", "end")},
                **{f"stability.fma_all_gflops_{w}": str(all_gflops) for w in ("start", "end")}}
    one_core = shared_side("one-core", 9e-6, **capacity(95))
    two_cores = shared_side("two-cores", 4.5e-6, **capacity(180))
    reading, _ = shared_reading(one_core, two_cores)
    assert reading == "these CPUs' parallel capacity differed (1.0x one CPU here, 1.9x there)"
    # Capacities within the drift limit of each other are no cause.
    reading, _ = shared_reading(shared_side("a", 9e-6, **capacity(160)), two_cores)
    assert reading.startswith("oneDNN's own kernels or threads")
