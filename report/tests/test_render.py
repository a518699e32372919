"""Tests of the charts (plots/) and the report (model, its writers and render.py): every chart
function writes an image, the data behind the charts is right, the report is complete and
self-contained, and headless Chromium opens it with every image loaded and no console error."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gapbench_report.core import labels
from gapbench_report.inputs import machines
from gapbench_report.inputs.files import SET_RECORD
from gapbench_report.inputs.results import Benchmark, Results, load_results, parse_name
from gapbench_report.render import command as render
from gapbench_report.render import model, plots
from gapbench_report.render.plots.common import skip_note
from tests.synthetic import in_memory, runs, skipped, write

DATA = Path(__file__).parent / "data" / "render"
REPO = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CHROMIUM = Path("/usr/bin/chromium")
NO_DRIVER = "no NVIDIA driver (libcuda.so.1 not found)"


def _synthetic():
    spec = importlib.util.spec_from_file_location("synthetic_full", DATA / "synthetic_full.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


synthetic = _synthetic()


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """Every family, present and planned, with the GPU: 3 repetitions to keep it quick."""
    path = tmp_path_factory.mktemp("full") / "full.json"
    return load_results(synthetic.write(path, synthetic.results(reps=3)))


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """Another machine (a T4-like GPU) with the families the portable ratios need."""
    data = synthetic.results(reps=3, families=(synthetic.peak, synthetic.preprocess,
                                               synthetic.transfer), machine="synthetic-t4")
    data["context"]["gpu.name"] = "Synthetic T4"
    return load_results(synthetic.write(tmp_path_factory.mktemp("base") / "t4.json", data))


@pytest.fixture(scope="module")
def full_report(full, baseline, tmp_path_factory):
    """The report of every family against a baseline, rendered once for the tests that read it."""
    return render.render([full], [baseline], tmp_path_factory.mktemp("full_report") / "r")


@pytest.fixture(scope="module")
def real():
    """This machine's real run: CPU entries timed, GPU entries skipped (no driver)."""
    return [load_results(DATA / "preprocess.json"), load_results(DATA / "transfer.json")]


def assert_images(png: Path | None) -> None:
    assert png is not None and png.suffix == ".png"
    assert png.read_bytes().startswith(PNG_MAGIC) and png.stat().st_size > 1000
    svg = png.with_suffix(".svg").read_text(encoding="utf-8")
    assert "<svg" in svg and len(svg) > 1000
    assert not list(png.parent.glob(".*.tmp"))  # no temporary file left behind


def bench(name: str, seconds: list[float], **counters: list[float]) -> Benchmark:
    return Benchmark(name, parse_name(name), tuple(seconds), {k: tuple(v) for k, v in
                                                             counters.items()}, {})


# ---- every chart function writes a PNG and an SVG ----------------------------------------------

def test_family_chart_of_a_real_file(real, tmp_path):
    rows = list(real[0].benchmarks().values())
    assert_images(plots.family_chart(rows, "preprocess", tmp_path / "preprocess"))
    assert_images(plots.family_chart(rows, "peak", tmp_path / "peak"))


@pytest.mark.parametrize("spec", plots.SWEEPS, ids=lambda s: s.name)
def test_every_sweep_row_draws_on_synthetic_data(spec, full, tmp_path):
    rows = list(full.benchmarks().values())
    assert_images(plots.sweep_chart(spec, rows, full.context, tmp_path / spec.name))


@pytest.mark.parametrize("family", ["preprocess", "conv", "overhead", "peak"])
def test_family_chart_of_every_synthetic_family(family, full, tmp_path):
    assert_images(plots.family_chart(list(full.benchmarks().values()), family,
                                     tmp_path / family))


def test_metrics_chart(tmp_path):
    columns = [("this run", {"speed-up": 12.0, "pinned/pageable": 2.5}),
               ("baseline t4", {"speed-up": 30.0, "pinned/pageable": 1.1, "only there": 0.4})]
    assert_images(plots.metrics_chart(columns, tmp_path / "machines"))
    data = plots.metrics_chart_data(columns)
    # A ratio one machine alone has compares nothing: a panel of it would be one bar and "n/a"
    # (the H200 against the CPU baseline was a page of such panels). The table keeps it.
    assert data.names == ["speed-up", "pinned/pageable"]
    assert data.values == [[12.0, 30.0], [2.5, 1.1]]
    assert plots.metrics_chart_data(columns[:1]) is None  # nothing to compare with
    alone = [("this run", {"a": 1.0}), ("baseline t4", {"b": 2.0})]
    assert plots.metrics_chart_data(alone) is None


# ---- what the charts are made of ---------------------------------------------------------------

def test_crossover_gpu_wins_above_256():
    xs = [64, 128, 256, 512, 1024]
    assert plots.crossover(xs, [1, 2, 4, 8, 16], [5, 5, 5, 6, 7]) == 512


def test_crossover_never_and_always():
    assert plots.crossover([16, 32, 64], [1, 2, 3], [5, 6, 7]) is None
    assert plots.crossover([16, 32, 64], [5, 6, 7], [1, 2, 3]) == 16


def test_crossover_must_stay_ahead_and_ignores_missing_points():
    # Ahead at 128, behind at 256, ahead from 512 on; given out of order, with a gap.
    xs = [1024, 128, 256, 512, 64, 2048]
    cpu = [16, 2, 4, 8, 1, None]
    gpu = [3, 1, 5, 6, 7, 1]
    assert plots.crossover(xs, cpu, gpu) == 512
    assert plots.crossover([], [], []) is None


def test_matmul_sweep_marks_the_crossover(full):
    spec = next(s for s in plots.SWEEPS if s.name == "matmul")
    chart = plots.sweep_chart_data(spec, list(full.benchmarks().values()), full.context)
    (panel,) = chart.panels
    assert {line.device for line in panel.lines} == {"cpu", "gpu"}
    assert len(panel.vlines) == 2  # kernel-only and end-to-end each cross over
    assert all("faster from n" in v.label for v in panel.vlines)
    kernel, e2e = sorted(panel.vlines, key=lambda v: v.value)
    assert kernel.value < e2e.value  # the copies push the end-to-end crossover up


def test_transfer_draws_the_pcie_link_from_the_context(full):
    spec = next(s for s in plots.SWEEPS if s.name == "transfer")
    rows = list(full.benchmarks().values())
    chart = plots.sweep_chart_data(spec, rows, full.context)
    assert [r.value for r in chart.hlines] == [63.02, 31.51]  # max, and the slower current link
    assert "gen 5 x16" in chart.hlines[0].label
    same = dict(full.context, **{"pcie.bandwidth_current_gbps": "63.02"})
    assert [r.value for r in plots.sweep_chart_data(spec, rows, same).hlines] == [63.02]
    bare = {k: v for k, v in full.context.items() if not k.startswith("pcie.")}
    assert plots.sweep_chart_data(spec, rows, bare).hlines == []
    labels = {line.label for line in chart.panels[0].lines}
    assert "pinned · h2d · async" in labels and "memcpy" in labels
    pinned = next(line for line in chart.panels[0].lines if line.label == "pinned · h2d · sync")
    assert pinned.xs == sorted(pinned.xs) and max(pinned.ys) < 63.02  # GB/s, under the link


def test_sweeps_draw_nothing_for_absent_families(real):
    rows = [b for r in real for b in r.benchmarks().values()]
    drawn = {s.name for s in plots.SWEEPS if plots.sweep_chart_data(s, rows, real[0].context)}
    assert drawn == {"transfer"}  # memcpy ran; matmul, lstm, batch, pipeline are not in the run


def test_pipeline_ideal_comes_from_its_counter():
    spec = next(s for s in plots.SWEEPS if s.name == "pipeline")
    rows = [bench(f"pipeline/prefetch/cpu/produce_ms:{p}/consume_ms:2/depth:2/real_time",
                  [max(p, 2) / 950] * 3, items_per_second=[950 / max(p, 2)] * 3,
                  ideal_items_per_second=[1000 / max(p, 2)] * 3) for p in (1, 2, 4)]
    (panel,) = plots.sweep_chart_data(spec, rows, {}).panels
    assert len(panel.ideals) == 1
    assert panel.ideals[0].xs == [1, 2, 4] and panel.ideals[0].ys == pytest.approx([500, 500, 250])
    assert panel.title == "consume_ms 2"


def test_family_panels_by_operation_with_skips_noted(real):
    chart = plots.family_chart_data(list(real[0].benchmarks().values()), "preprocess")
    titles = [p.title for p in chart.panels]
    assert titles == ["op sumsq · rows 1M · cols 100", "op image · n 32 · hw 256 · c 3"]
    panel = chart.panels[0]
    assert [d.label for d in panel.dots] == ["CPU elementwise", "CPU vectorized"]
    median, low, high = panel.dots[0].values[0]
    assert low <= median <= high
    assert "4 GPU variants skipped" in panel.note and NO_DRIVER in panel.note


def test_family_panels_group_sizes_and_merge_single_benchmarks(full):
    rows = list(full.benchmarks().values())
    preprocess = plots.family_chart_data(rows, "preprocess")
    assert preprocess.panels[0].groups == ["rows 10k", "rows 100k", "rows 1M"]
    assert preprocess.panels[0].log_y  # 10k to 1M rows spans decades
    overhead = plots.family_chart_data(rows, "overhead")
    startup = next(p for p in overhead.panels if any("context" in g for g in p.groups))
    assert len(startup.groups) == 4  # one panel for the four what:... benchmarks
    peak = plots.family_chart_data(rows, "peak")
    assert {p.metric.key for p in peak.panels} == {"traffic_bytes_per_second"}


def test_peak_draws_bandwidth_and_sgemm_in_panels_of_their_own():
    """A ceiling is read as a rate: memory rows as traffic GB/s, SGEMM rows as GFLOP/s, never in
    one panel (the SGEMM sizes were empty slots in the bandwidth panel)."""
    entries = []
    for threads in (1, 2):
        entries += runs(f"peak/memcpy/cpu/mib:256/real_time/threads:{threads}", [0.01] * 3,
                        bytes_per_second=[1e10] * 3, traffic_bytes_per_second=[2e10] * 3)
    for n in (2048, 4096):
        entries += runs(f"peak/sgemm/cpu/n:{n}/real_time", [0.1] * 3, flops=[1.8e11] * 3)
    peak = plots.family_chart_data(list(in_memory(entries).benchmarks().values()), "peak")
    assert sorted(p.metric.key for p in peak.panels) == ["flops", "traffic_bytes_per_second"]
    for p in peak.panels:
        variants = {d.variant for d in p.dots}
        assert variants == ({"sgemm"} if p.metric.key == "flops" else {"memcpy"})
        assert all(v for d in p.dots for v in d.values), p.title  # no empty slot
    sgemm = next(p for p in peak.panels if p.metric.key == "flops")
    assert sgemm.dots[0].values[0][0] == 180.0  # GFLOP/s


def test_peak_memcpy_is_drawn_as_traffic_in_new_and_old_files():
    """A copy's bytes_per_second counts bytes copied; its ceiling is drawn from its traffic
    (reads plus writes). Older files counted traffic in bytes_per_second and have no traffic
    counter: they draw the same figure."""
    name = "peak/memcpy/cpu/mib:256/real_time/threads:1"
    new = runs(name, [0.01] * 3, bytes_per_second=[5e9] * 3, traffic_bytes_per_second=[10e9] * 3)
    old = runs(name, [0.01] * 3, bytes_per_second=[10e9] * 3)
    for entries in (new, old):
        b = next(iter(in_memory(entries).benchmarks().values()))
        assert plots.PEAK_TRAFFIC.spread(b)[0] == 10.0  # GB/s


def test_pageable_async_copies_are_labelled_staged():
    spec = next(s for s in plots.SWEEPS if s.name == "transfer")
    staged = plots.sweeps._line_label(spec, ("pageable", "h2d", "async"))
    assert staged == "pageable · h2d · async (staged)"
    assert plots.sweeps._line_label(spec, ("pinned", "h2d", "async")) == "pinned · h2d · async"


def _tick_labels(monkeypatch, benchmarks, family) -> list[str]:
    """The x tick labels of the first panel of a family's chart, drawn but not saved."""
    figures = []
    monkeypatch.setattr(plots.family, "save", lambda fig, stem: figures.append(fig) or stem)
    plots.family_chart(benchmarks, family, Path("unused"))
    return [t.get_text() for t in figures[0].axes[0].get_xticklabels()]


def test_a_panel_of_thousands_of_sizes_labels_some(monkeypatch):
    # Thousands of tick labels took most of a minute to lay out (and drew a black smear).
    rows = []
    for i in range(1000):
        name = f"preprocess/vectorized/cpu/op:sumsq/rows:{1000 + i}/real_time"
        rows.append(Benchmark(name, parse_name(name), (1e-6,) * 3, {}, {}))
    labels = _tick_labels(monkeypatch, rows, "preprocess")
    assert len(labels) == plots.family.MAX_GROUP_LABELS
    assert labels[:2] == ["rows 1000", "rows 1042"]  # every 42nd group


def test_a_panel_of_few_sizes_labels_each(monkeypatch, full):
    labels = _tick_labels(monkeypatch, list(full.benchmarks().values()), "preprocess")
    assert labels == ["rows 10k", "rows 100k", "rows 1M"]


def test_nothing_timed_draws_no_chart(tmp_path):
    rows = list(load_results(DATA / "gpu_skipped.json").benchmarks().values())
    assert plots.family_chart(rows, "transfer", tmp_path / "t") is None
    spec = plots.SWEEPS[0]
    assert plots.sweep_chart(spec, rows, {}, tmp_path / "s") is None
    assert not list(tmp_path.iterdir())


def test_readable_labels():
    assert labels.variant_label("vectorized_e2e") == "vectorized end-to-end"
    assert labels.fmt_seconds(3.2e-6) == "3.2 µs" and labels.fmt_seconds(1.5) == "1.5 s"
    assert labels.fmt_bytes(65536) == "64 KiB"
    assert labels.axes_label({"op": "sumsq", "rows": "1000000", "bytes": "4096"}) == \
        "op sumsq · rows 1M · 4 KiB"


# ---- the report -------------------------------------------------------------------------------

def images_of(index: Path) -> list[bytes]:
    """Every <img>'s source, decoded; fails unless each is an embedded PNG."""
    sources = re.findall(r'<img [^>]*src="([^"]*)"', index.read_text(encoding="utf-8"))
    out = []
    for src in sources:
        assert src.startswith("data:image/png;base64,"), src[:60]
        out.append(base64.b64decode(src.split(",", 1)[1], validate=True))
        assert out[-1].startswith(PNG_MAGIC)
    return out


def test_render_the_real_run(real, tmp_path):
    out = tmp_path / "report"
    index = render.render(real, [], out)
    assert index == out / "index.html"
    page = index.read_text(encoding="utf-8")
    assert len(images_of(index)) == 3  # preprocess, transfer sweep, peak
    for family in ("preprocess", "transfer", "peak"):
        assert f'id="family-{family}"' in page
    assert NO_DRIVER in page and "218 ms" in page  # skip reasons and medians in the tables
    assert "http://" not in page.replace("http://www.w3.org", "") and "<script" not in page
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert summary.index("## Findings") < summary.index("## preprocess")
    assert f"GPU elementwise, GPU elementwise end-to-end (pageable copies), GPU vectorized, " \
           f"GPU vectorized end-to-end (pageable copies): {NO_DRIVER}" in summary
    assert "| vectorized | CPU | op sumsq · rows 1M · cols 100 |" in summary
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["index.html", "summary.md", SET_RECORD] + [
            f"{s}.{x}" for s in ("preprocess", "transfer-transfer", "peak")
            for x in ("png", "svg")])


def test_a_baseline_adds_its_fingerprint_the_comparison_and_the_ratios(full_report):
    """The comparison comes right after the diagnosis, the fingerprint of both machines after
    it; the synthetic T4 differs from the synthetic H100 in nothing they both ran."""
    page = full_report.read_text(encoding="utf-8")
    fingerprint = page[page.index('id="machine"'):page.index('id="family-')]
    assert "<th>this run</th><th>baseline t4</th>" in fingerprint
    assert "Synthetic H100 PCIe" in fingerprint and "Synthetic T4" in fingerprint
    assert "synthetic-h100" in fingerprint and "synthetic-t4" in fingerprint
    machines = page[page.index('id="machines"'):page.index('id="machine"')]
    assert page.index('id="diagnosis"') < page.index('id="machines"')
    assert "not a regression" in machines and "regression" not in machines.replace(
        "not a regression", "")
    assert "Nothing differs from t4 by more than 10% in the 206 works both ran." in machines
    assert machines.count("<img") == 1  # each machine's ceilings; no work differs to draw
    summary = (full_report.parent / "summary.md").read_text(encoding="utf-8")
    assert "| ratio | this run | baseline t4 |" in summary
    assert summary.index("## Findings") < summary.index("## Against other machines") < \
        summary.index("## preprocess")
    comparison = json.loads((full_report.parent / "comparison.json").read_text())
    (against,) = comparison["comparisons"]
    assert against["baseline"]["label"] == "t4" and len(against["works"]) == 206
    assert not any(w["differs"] for w in against["works"])
    assert "<details><summary>540 benchmarks</summary>" in summary  # lstm's table folded
    # 7 sweeps, 5 family charts, the machines, the framework beside the libraries
    assert len(images_of(full_report)) == 15  # the LSTM step's sweep by rate included


def test_only_skipped_gpu_entries(tmp_path):
    index = render.render([load_results(DATA / "gpu_skipped.json")], [], tmp_path / "r")
    page = index.read_text(encoding="utf-8")
    assert images_of(index) == [] and "No chart: nothing in this family was timed" in page
    # Each skip is listed once, by reason, not again as a table row.
    assert 'class="skipped"' not in page and page.count(NO_DRIVER) >= 1
    assert page.count("GPU pageable, GPU pinned, GPU device") == 1
    summary = (tmp_path / "r" / "summary.md").read_text(encoding="utf-8")
    assert "Nothing in this family ran." in summary
    assert f"GPU pageable, GPU pinned, GPU device: {NO_DRIVER}" in summary


def test_a_failed_render_keeps_the_previous_report(real, tmp_path, monkeypatch):
    out = tmp_path / "r"
    render.render(real, [], out)
    before = (out / "index.html").read_bytes()

    def broken(*_args):
        raise RuntimeError("boom")

    monkeypatch.setattr(render, "html_page", broken)
    with pytest.raises(RuntimeError):
        render.render(real, [], out)
    assert (out / "index.html").read_bytes() == before
    assert [p.name for p in out.glob(".*")] == [SET_RECORD]  # no temporary files


def test_a_broken_diagnosis_still_renders(real, tmp_path, monkeypatch):
    def broken(*_args):
        raise ValueError("rule exploded")

    monkeypatch.setattr(model.diagnose, "diagnose_run", broken)
    page = render.render(real, [], tmp_path / "r").read_text(encoding="utf-8")
    assert "The diagnosis could not be made: ValueError: rule exploded" in page


# ---- the command line -------------------------------------------------------------------------

def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_main_writes_the_report_and_leaves_inputs_alone(tmp_path, capsys):
    inputs = tmp_path / "in"
    shutil.copytree(DATA, inputs)
    before = digest(inputs)
    out = tmp_path / "out"
    code = render.main(["render", str(inputs / "preprocess.json"), str(inputs / "transfer.json"),
                        "--baseline", str(inputs / "transfer.json"), "--out", str(out)])
    assert code == 0 and capsys.readouterr().out.strip() == str(out / "index.html")
    assert digest(inputs) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]


@pytest.mark.parametrize("args, words", [
    (["missing.json", "--out", "OUT"], "missing.json: no such file"),
    (["EMPTY", "--out", "OUT"], "empty file"),
    (["GOOD"], "the following arguments are required: --out"),
    (["GOOD", "--out", "GOOD"], "exists and is not a directory"),
])
def test_main_bad_input_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "EMPTY").write_text("")
    shutil.copy(DATA / "preprocess.json", tmp_path / "GOOD")
    assert render.main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gapbench-report render: ")
    assert words in lines[0] and "Traceback" not in captured.err
    assert not (tmp_path / "OUT").exists()


def test_main_unexpected_error_is_one_line(tmp_path, capsys, monkeypatch):
    def broken(*_args):
        raise KeyError("surprise")

    monkeypatch.setattr(render, "render", broken)
    assert render.main([str(DATA / "preprocess.json"), "--out", str(tmp_path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["gapbench-report render: internal error: KeyError: 'surprise'"]


# ---- in a real browser ------------------------------------------------------------------------

def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """Headless Chromium as root (no sandbox), logging the page's console to stderr."""
    command = [str(CHROMIUM), "--headless=new", "--no-sandbox", "--disable-gpu",
               "--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp_path / 'profile'}",
               "--virtual-time-budget=5000", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


def console_errors(stderr: str) -> list[str]:
    """The page's console lines (the report has no script, so any is an error or a failed
    load) and failed loads; Chromium's own noise (D-Bus, GPU probing) is not the page's."""
    return [line for line in stderr.splitlines()
            if ":CONSOLE" in line or "Uncaught" in line or "ERR_" in line
            or "Failed to load" in line or "Not allowed to load" in line]


def test_the_report_in_headless_chromium(full_report, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip("skipped: chromium not installed")
    index = full_report
    expected = len(images_of(index))
    shot = tmp_path / "shot.png"
    run = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", index.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    assert console_errors(run.stderr) == []
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    assert (pixels != pixels[0, 0]).any()  # not blank: something was drawn
    # Every image decoded in the DOM: a copy of the page with a probe script that counts them.
    probe = index.with_name("probe.html")
    probe.write_text(index.read_text(encoding="utf-8").replace("</body>", """<script>
window.addEventListener("load", () => {
  const images = Array.from(document.images);
  document.body.dataset.images = images.length;
  document.body.dataset.broken = images.filter(i => !i.complete || !i.naturalWidth).length;
});</script></body>"""), encoding="utf-8")
    dom = chromium(tmp_path, "--dump-dom", probe.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert console_errors(dom.stderr) == []
    counts = re.search(r'data-images="(\d+)" data-broken="(\d+)"', dom.stdout)
    assert counts, dom.stdout[:500]
    assert (int(counts[1]), int(counts[2])) == (expected, 0)
    assert expected == 15


def test_summary_is_plain_markdown(real, tmp_path):
    render.render(real, [], tmp_path)
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "<img" not in summary and "data:image" not in summary
    # Every row of a table has as many columns as its header (tables are runs of "|" lines).
    tables, current = [], []
    for line in summary.splitlines() + [""]:
        if line.startswith("|"):
            current.append(line.count("|") - line.count("\\|"))
        elif current:
            tables.append(current)
            current = []
    assert tables and all(len(set(widths)) == 1 for widths in tables), tables
    assert {widths[0] for widths in tables} <= {7, 8}  # the ceilings' seven, the families' six
    json.dumps(summary)  # text, nothing binary


def test_a_sweep_of_one_size_is_left_to_the_family_chart():
    """The quick profile runs one batch size of lstm: no sweep of one point; the family chart
    shows those benchmarks."""
    name = "lstm/{v}/cpu/scope:seq/batch:{b}/input:50/hidden:64/steps:100/real_time"
    spec = next(s for s in plots.SWEEPS if s.family == "lstm")
    one = list(in_memory(runs(name.format(v="blas", b=64), [1e-3] * 3)
                         + runs(name.format(v="onednn", b=64), [2e-3] * 3)).benchmarks().values())
    assert plots.sweep_chart_data(spec, one, {}) is None and not plots.swept_names(one)
    assert plots.family_chart_data(one, "lstm").panels[0].dots
    two = one + list(in_memory(runs(name.format(v="blas", b=128), [2e-3] * 3))
                     .benchmarks().values())
    assert plots.sweep_chart_data(spec, two, {}) is not None and len(plots.swept_names(two)) == 3


def test_lstm_steps_are_compared_by_rate_and_sequences_by_time():
    """blas and cublas leave x_t's projection out of their step, the libraries' one-step
    sequence does it: the step panels and the step sweep draw each step's FLOP rate and say so;
    sequences, the same work everywhere, stay in time."""
    name = "lstm/{v}/cpu/scope:{s}/batch:{b}/input:50/hidden:64/steps:100/real_time"
    rows = list(in_memory(
        runs(name.format(v="blas", s="step", b=64), [1e-5] * 3, flops=[2e9] * 3)
        + runs(name.format(v="onednn", s="step", b=64), [2e-5] * 3, flops=[3e9] * 3)
        + runs(name.format(v="blas", s="seq", b=64), [1e-3] * 3, flops=[2e9] * 3)
        + runs(name.format(v="onednn", s="seq", b=64), [2e-3] * 3, flops=[3e9] * 3)
    ).benchmarks().values())
    chart = plots.family_chart_data(rows, "lstm")
    by_scope = {p.title.split(" · ")[0]: p for p in chart.panels}
    step, seq = by_scope["scope step"], by_scope["scope seq"]
    assert step.metric.key == "flops" and "each step's own work" in step.metric.label
    assert [d.values[0][0] for d in step.dots] == pytest.approx([2.0, 3.0])  # GFLOP/s
    assert seq.metric.key == "time"
    sweeps = {s.name: s for s in plots.SWEEPS if s.family == "lstm"}
    assert sweeps["lstm-step"].metric.key == "flops" and sweeps["lstm"].metric.key == "time"
    assert [sweeps["lstm-step"].select(b.parsed) for b in rows] == [True, True, False, False]
    assert [sweeps["lstm"].select(b.parsed) for b in rows] == [False, False, True, True]


def test_an_unheld_gpu_kernel_time_is_noted_on_its_chart():
    """gapbench times the element-wise sumsq's million launches unheld (more than a held
    stream queues) and labels it: the chart says that time includes the launches."""
    name = "preprocess/{v}/gpu/op:sumsq/rows:1000000/cols:100/manual_time"
    label = "unheld: 1000000 launches, more than the 256 a held stream is given"
    rows = list(in_memory(
        runs(name.format(v="elementwise"), [2.0] * 3, label=[label] * 3)
        + runs(name.format(v="vectorized"), [1e-3] * 3)).benchmarks().values())
    assert rows[0].label == label and rows[1].label == ""
    panel = plots.family_chart_data(rows, "preprocess").panels[0]
    # Beside its own dots, not in a panel note over the title where it went unread.
    assert [(d.label, d.unheld) for d in panel.dots] == [("GPU elementwise", True),
                                                         ("GPU vectorized", False)]
    assert panel.note == ""
    # And in the table, beside the time.
    cells = {r.variant: r for r in model.table_rows(rows)}
    assert label in cells["elementwise"].throughput and label not in cells["vectorized"].throughput


def test_an_unheld_series_says_so_once_in_a_sweeps_legend():
    """One legend serves every panel of a sweep: a series unheld in one panel only is "partly
    unheld" there, never a second entry of the same colour."""
    name = "lstm/{v}/gpu/scope:seq/batch:{b}/input:512/hidden:512/steps:{s}/manual_time"
    label = "unheld: 504 launches, more than the 256 a held stream is given"
    entries = []
    for b in (16, 64):
        entries += runs(name.format(v="cublas", b=b, s=25), [3e-4] * 3)
        entries += runs(name.format(v="cublas", b=b, s=100), [2e-3] * 3, label=[label] * 3)
        entries += runs(name.format(v="cudnn", b=b, s=100), [1e-3] * 3, label=[label] * 3)
    rows = list(in_memory(entries).benchmarks().values())
    spec = next(s for s in plots.SWEEPS if s.name == "lstm")
    chart = plots.sweeps.sweep_chart_data(spec, rows, {})
    labels = {line.label for p in chart.panels for line in p.lines}
    assert labels == {"cublas · GPU · partly unheld: includes launches",
                      "cudnn · GPU · unheld: includes launches"}


def test_a_narrow_sweep_is_drawn_on_a_linear_axis_from_zero(monkeypatch):
    """7 ms against 8 ms on a log axis looks like a gap of several times."""
    name = "lstm/blas/cpu/scope:seq/batch:{b}/input:50/hidden:64/steps:100/real_time"
    rows = list(in_memory(runs(name.format(b=32), [7e-3] * 3)
                          + runs(name.format(b=64), [8e-3] * 3)).benchmarks().values())
    spec = next(s for s in plots.SWEEPS if s.family == "lstm")
    figures = []
    monkeypatch.setattr(plots.sweeps, "save", lambda fig, stem: figures.append(fig) or stem)
    plots.sweep_chart(spec, rows, {}, Path("unused"))
    ax = figures[0].axes[0]
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0


def test_pipeline_ideal_is_drawn_per_number_of_producers():
    spec = next(s for s in plots.SWEEPS if s.name == "pipeline")
    rows = []
    for variant, workers in (("prefetch", 1), ("parallel", 2)):
        for p in (2, 4):
            ideal = min(workers / (p * 1e-3), 1 / 2e-3)
            rows.append(bench(f"pipeline/{variant}/cpu/produce_ms:{p}/consume_ms:2/depth:2/"
                              f"workers:{workers}/real_time", [1e-2] * 3,
                              items_per_second=[0.9 * ideal] * 3,
                              ideal_items_per_second=[ideal] * 3))
    (panel,) = plots.sweep_chart_data(spec, rows, {}).panels
    assert [i.label.split(":")[0] for i in panel.ideals] == ["ideal, 1 producer",
                                                           "ideal, 2 producers"]
    assert panel.ideals[0].ys == pytest.approx([500, 250])
    assert panel.ideals[1].ys == pytest.approx([500, 500])


def _parallel_on(cores: int, p: float, device: str = "cpu") -> Benchmark:
    """parallel with 2 producers of `p` ms and a step of 1 ms, its ideal counted on `cores`."""
    t_p, t_c = p * 1e-3, 1e-3
    ideal = min(2 / t_p, 1 / t_c, cores / (t_p + (t_c if device == "cpu" else 0.0)))
    return bench(f"pipeline/parallel/{device}/produce_ms:{p:g}/consume_ms:1/depth:2/workers:2/"
                 "real_time", [1e-2] * 3, items_per_second=[0.9 * ideal] * 3,
                 ideal_items_per_second=[ideal] * 3, cores=[cores] * 3,
                 produce_ms_measured=[p] * 3, consume_ms_measured=[0.9, 1.0, 1.2])


def test_pipeline_ideal_says_where_the_cores_cap_it():
    """On 2 cores, 2 producers and the step are 3 busy threads: from produce 2 ms on the cores,
    not the producers, bound the ideal, and the chart says so there."""
    spec = next(s for s in plots.SWEEPS if s.name == "pipeline")
    (panel,) = plots.sweep_chart_data(spec, [_parallel_on(2, p) for p in (0.5, 4, 8)], {}).panels
    (ideal,) = panel.ideals
    assert ideal.label == ("ideal, 2 producers: min(workers / produce, 1 / consume, "
                           "cores / (produce + consume))")
    (capped,) = panel.capped
    assert capped.label == "ideal capped by the 2 cores"
    assert capped.xs == [4, 8] and capped.ys == pytest.approx([2 / 5e-3, 2 / 9e-3])
    # With a core per thread nothing is capped and the label is the stages' alone.
    (panel,) = plots.sweep_chart_data(spec, [_parallel_on(4, p) for p in (0.5, 4, 8)], {}).panels
    assert panel.capped == []
    assert panel.ideals[0].label == "ideal, 2 producers: min(workers / produce, 1 / consume)"


def test_pipeline_ideal_lines_per_device():
    """The GPU's consumer sleeps: its ideal has its own line and its own cap, cores / produce."""
    spec = next(s for s in plots.SWEEPS if s.name == "pipeline")
    rows = [_parallel_on(1, p, device) for p in (4, 8) for device in ("cpu", "gpu")]
    (panel,) = plots.sweep_chart_data(spec, rows, {}).panels
    assert [i.label for i in panel.ideals] == [
        "CPU ideal, 2 producers: min(workers / produce, 1 / consume, cores / (produce + consume))",
        "GPU ideal, 2 producers: min(workers / produce, 1 / consume, cores / produce)"]
    assert panel.ideals[0].ys == pytest.approx([1 / 5e-3, 1 / 9e-3])
    assert panel.ideals[1].ys == pytest.approx([1 / 4e-3, 1 / 8e-3])


def test_pipeline_row_shows_its_share_of_the_ideal_and_the_stage_costs_range():
    (row,) = model.table_rows([_parallel_on(2, 4)])
    assert row.throughput.endswith(" · 90% of its cores-bound ideal · produce 4.0–4.0 ms, "
                                   "consume 0.9–1.2 ms")
    (row,) = model.table_rows([_parallel_on(4, 4)])
    assert "90% of its producers-bound ideal" in row.throughput
    assert "above its ideal" not in row.throughput


def test_a_pipeline_above_its_ideal_says_what_that_means():
    """The H200's two producers ran at 127% of the ideal their stage costs, measured alone,
    allow: said as what it is, not left as an impossible share."""
    b = _parallel_on(16, 4, "gpu")
    faster = replace(b, counters={**b.counters, "items_per_second": tuple(
        1.27 * v for v in b.counters["ideal_items_per_second"])})
    (row,) = model.table_rows([faster])
    assert "127% of its producers-bound ideal" in row.throughput
    assert "above its ideal: its stages cost less inside the pipeline than measured alone" \
        in row.throughput


def test_each_files_ceilings_are_shown_and_a_changed_run_is_marked(tmp_path):
    from tests.synthetic import write
    peak = runs("peak/read/cpu/mib:256/real_time/threads:1", [0.01] * 3,
                bytes_per_second=[2e10] * 3, traffic_bytes_per_second=[2e10] * 3)
    peak += runs("peak/sgemm/cpu/n:2048/real_time", [0.1] * 3, flops=[1.8e11] * 3)
    sumsq = "preprocess/vectorized/cpu/op:sumsq/rows:1000000/cols:100/real_time"
    steady = {"stability.sgemm_gflops_start": "190", "stability.sgemm_gflops_end": "185",
              "stability.read_gbps_start": "24", "stability.read_gbps_end": "23"}
    files = [write(tmp_path / "preprocess.json", peak + runs(sumsq, [0.02] * 3), **steady),
             write(tmp_path / "conv.json",
                   peak + runs("conv/onednn/cpu/n:1/real_time", [1e-3] * 3),
                   **{**steady, "stability.sgemm_gflops_end": "104"})]
    rows = model.ceilings_rows([load_results(f) for f in files])
    assert rows[0] == ["preprocess", "—", "180 (±0%)", "20 (±0%)", "—",
                       "SGEMM 190 → 185; read 24 → 23", "held"]
    assert rows[1][0] == "conv" and rows[1][-1] == "changed during the run"
    index = render.render([load_results(f) for f in files], [], tmp_path / "r")
    page = index.read_text(encoding="utf-8")
    assert "Each file&#x27;s ceilings" in page or "Each file's ceilings" in page
    assert "changed during the run" in page
    summary = (tmp_path / "r" / "summary.md").read_text(encoding="utf-8")
    assert "| conv | — | 180 (±0%) | 20 (±0%) | — | SGEMM 190 → 104; read 24 → 23 |" in summary
    # A GPU run's own ceiling has its column: a GPU-only file showed only dashes.
    gpu = runs("peak/sgemm/gpu/n:4096/manual_time", [1e-3] * 3, flops=[5.1e13] * 3)
    assert model.ceilings_rows([in_memory(gpu)])[0][1:5] == ["—", "—", "—", "51,000 (±0%)"]
    # The CPU's physical peak has its column, and OpenBLAS's SGEMM its share of it.
    physical = runs("peak/flops/cpu/isa:avx2/math:fp32/real_time/threads:2", [0.1] * 3,
                    flops=[2.4e11] * 3)
    assert model.ceilings_rows([in_memory(peak + physical)])[0][1:3] == [
        "240 (±0%)", "180 (±0%) · 75% of peak"]
    # A run of peak/ alone probes nothing beside its rows (they are the ceilings): it says so,
    # where a family's file without probes is "not measured".
    assert model.ceilings_rows([in_memory(physical)])[0][-2:] == [
        "—", "its own rows (their spread shown)"]
    family = runs("conv/naive/cpu/n:1/c_in:3/c_out:8/hw:32/k:3/real_time", [0.1] * 3)
    assert model.ceilings_rows([in_memory(physical + family)])[0][-1] == "not measured"


@pytest.mark.parametrize("start, end", [("nan", "185"), ("190", "NaN"), ("inf", "185"),
                                        ("unavailable (no BLAS)", "185")])
def test_a_ceiling_probe_that_is_no_number_is_not_measured_never_held(start, end):
    """A NaN compares false with the drift limit: taken as a number, it would be judged held."""
    sgemm = runs("peak/sgemm/cpu/n:2048/real_time", [0.1] * 3, flops=[1.8e11] * 3)
    probes = {"stability.sgemm_gflops_start": start, "stability.sgemm_gflops_end": end,
              "stability.read_gbps_start": "24", "stability.read_gbps_end": "23"}
    row = model.ceilings_rows([in_memory(sgemm, **probes)])[0]
    assert row[-2:] == ["read 24 → 23", "not measured"]


def test_a_skipped_row_never_hides_a_timed_dot():
    """parallel ran with 2 workers on the CPU and was skipped with 4 on the GPU: the axis that
    names the variant must not let the skip overwrite the CPU's dot."""
    from tests.synthetic import skipped
    name = "pipeline/parallel/{d}/produce_ms:4/consume_ms:1/depth:2/workers:{w}/{t}"
    entries = (runs(name.format(d="cpu", w=2, t="real_time"), [0.01] * 3,
                    items_per_second=[300] * 3)
               + runs("pipeline/none/cpu/produce_ms:4/consume_ms:1/depth:0/workers:1/real_time",
                      [0.01] * 3, items_per_second=[150] * 3)
               + skipped(name.format(d="gpu", w=4, t="manual_time"), "no GPU"))
    chart = plots.family_chart_data(list(in_memory(entries).benchmarks().values()), "pipeline")
    dots = {d.label: d.values for p in chart.panels for d in p.dots}
    assert dots["CPU parallel (depth 2 · workers 2)"][0][0] == 300


def test_math_modes_stand_side_by_side_in_one_panel():
    """A variant's math axis (math:bf16; absent is fp32) makes a series of its own beside the
    float32 one, in the same panel and x group, never a panel or a size of its own."""
    entries = []
    for hw in (28, 56):
        size = f"n:2/c:64/hw:{hw}/k:64/r:3/stride:1/pad:1"
        entries += runs(f"conv/onednn/cpu/{size}/real_time", [2e-3] * 3)
        entries += runs(f"conv/onednn/cpu/{size}/math:bf16/real_time", [1e-3] * 3)
    chart = plots.family_chart_data(list(in_memory(entries).benchmarks().values()), "conv")
    assert len(chart.panels) == 1
    panel = chart.panels[0]
    assert [d.label for d in panel.dots] == ["CPU onednn", "CPU onednn bf16"]
    assert len(panel.groups) == 2 and all("math" not in g for g in panel.groups)
    assert all(all(v is not None for v in d.values) for d in panel.dots)


def test_a_cudnn_row_without_a_math_axis_says_the_math_it_was_read_in():
    """The unmarked cuDNN row ran in cuDNN's default math: on an 8.0+ GPU its table row and its
    chart's legend say TF32 (the library's default), never leave it to read as float32."""
    size = "n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1"
    entries = (runs(f"conv/cudnn/gpu/{size}/manual_time", [9.0e-5] * 3)
               + runs(f"conv/cudnn/gpu/{size}/math:fp32/manual_time", [1.5e-4] * 3)
               + runs(f"conv/cudnn/gpu/{size}/math:tf32/manual_time", [9.0e-5] * 3))
    for capability, unmarked in (("9.0", "GPU cudnn tf32 (library default)"),
                                 ("7.5", "GPU cudnn")):
        benchmarks = list(in_memory(entries, **{"gpu.compute_capability": capability})
                          .benchmarks().values())
        (panel,) = plots.family_chart_data(benchmarks, "conv").panels
        assert [d.label for d in panel.dots] == [unmarked, "GPU cudnn fp32", "GPU cudnn tf32"]
        axes = [row.axes for row in model.table_rows(benchmarks)]
        words = "n 32 · c 64 · hw 56 · k 64 · r 3 · stride 1 · pad 1"
        assert axes[1:] == [f"{words} · math fp32", f"{words} · math tf32"]
        assert axes[0] == (f"{words} · math tf32 (library default)" if capability == "9.0"
                           else words)


CONV_FP32 = "conv/cudnn/gpu/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1/math:fp32/manual_time"


def test_the_h100_is_read_in_the_same_math_on_every_side_of_the_report():
    """The four false statements of the H100's first report, each now made in one math: its
    unmarked cuDNN conv (90 µs) is TF32, its float32 conv the math:fp32 row (152 µs)."""
    folder = REPO / "results" / "baselines"
    h100 = [load_results(folder / "h100-ubuntu24.json"),
            load_results(folder / "h100-ubuntu24.framework-torch.json")]
    report = model.build_report(h100, [load_results(folder / "h200-ubuntu24.json")])
    # 1. torch's float32 conv (284 µs) against cuDNN's float32 (152.4 µs): 1.86x, not 3.15x.
    (headline,) = report.framework_headlines
    assert "conv 1.86x (cuDNN)" in headline and "3.15x" not in headline
    # 2. The share of the SGEMM peak of the fastest float32 library conv: under 1, not 1.59.
    rows = {row[0]: row[1:] for row in report.ratio_rows}
    share = next(k for k in rows if "share of its device's SGEMM peak" in k)
    assert 0.9 < float(rows[share][0]) < 1.0 and rows[share][1] == "1.06"
    # 3. Against the H200, its unmarked TF32 row is never set against a float32 one: every pair
    # is of one math; the float32 rows' (152.4 µs here, 135.4 µs there) is not comparable, as
    # cuDNN picked another algorithm on each (versus.py).
    (against,) = report.comparisons
    assert all(w.pair.here.math == w.pair.there.math for w in against.works)
    fp32 = next(w for w in against.works if w.pair.here.name == CONV_FP32)
    assert fp32.pair.reasons[0] == "algorithm: WINOGRAD_NONFUSED here, FFT_TILING there"
    # 4. The naive float32 kernel against cuDNN's float32: 15.8x, not 26.7x.
    lesson = next(f for f in report.lessons if f.rule == "naive_vs_library")
    assert "takes 15.8x the time of cudnn, both in float32" in lesson.text
    assert not [f for f in report.defects if f.rule == "above_ceiling"]


def test_matmul_sweep_draws_each_math_mode_as_a_line_of_its_own():
    entries = []
    for n in (512, 1024, 2048):
        entries += runs(f"overhead/openblas/cpu/op:matmul/n:{n}/real_time", [n * 1e-6] * 3)
        entries += runs(f"overhead/cublas/gpu/op:matmul/n:{n}/manual_time", [n * 1e-7] * 3)
        entries += runs(f"overhead/cublas/gpu/op:matmul/n:{n}/math:fp16/manual_time",
                        [n * 2e-8] * 3)
    spec = next(s for s in plots.SWEEPS if s.name == "matmul")
    chart = plots.sweep_chart_data(spec, list(in_memory(entries).benchmarks().values()), {})
    (panel,) = chart.panels
    assert sorted(line.label for line in panel.lines) == [
        "cublas · GPU", "cublas · GPU · math fp16", "openblas · CPU"]
    assert all(len(line.xs) == 3 for line in panel.lines)



def test_skip_note_counts_each_math_mode_of_a_variant_as_a_series():
    reason = "no NVIDIA driver"
    entries = [e for name in ("lstm/cudnn/gpu/batch:64/manual_time",
                              "lstm/cudnn/gpu/batch:64/math:fp16/manual_time",
                              "lstm/cublas/gpu/batch:64/manual_time",
                              "lstm/cublas/gpu/batch:128/manual_time")
               for e in skipped(name, reason)]
    note = skip_note(in_memory(entries).benchmarks().values())
    assert note == f"3 GPU variants skipped: {reason}"


def test_summary_md_shows_html_from_names_and_messages_as_text(tmp_path):
    """summary.md is read as GitHub Markdown, which passes HTML through: a name or a message
    from the results file must stay text, as the page escapes it."""
    evil = "op:<img src=x onerror=alert(1)>`"
    timed = f"preprocess/vectorized/cpu/{evil}/rows:1000/real_time"
    failed = f"preprocess/elementwise/cpu/{evil}/rows:1000/real_time"
    gone = f"preprocess/vectorized/gpu/{evil}/rows:1000/manual_time"
    entries = runs(timed, [1e-3] * 3)
    entries += [{**e, "error_occurred": True, "error_message": "<b>boom</b>", "real_time": 0}
                for e in runs(failed, [1e-3])]
    entries += skipped(gone, "no <i>GPU</i>")
    render.render([in_memory(entries, **{"cpu.model": "<svg onload=alert(1)>"})], [],
                  tmp_path / "r")
    summary = (tmp_path / "r" / "summary.md").read_text(encoding="utf-8")
    outside_code = re.sub(r"(`+) ?.*? ?\1", "", summary)  # what Markdown reads as markup
    for raw in ("<img", "<b>", "<i>", "<svg"):
        assert raw not in outside_code, raw
    assert "&lt;b&gt;boom&lt;/b&gt;" in summary and "&lt;svg onload=alert(1)&gt;" in summary
    assert f"``{failed}``" in summary  # the name shown whole, as a code span


def test_the_h200_against_the_cpu_baseline_compares_what_carries_across_machines():
    """They share no benchmark name (GPU variants only against CPU variants only): what they
    compare is the same work's fastest time on each (the GPU's speed-up over the CPU, explained
    by their compute peaks) and each machine's share of its own peak; the ceilings chart holds
    those both machines have."""
    folder = REPO / "results" / "baselines"
    # Planted with one method version for every family, whatever the methods table says of the
    # two commits, so that what carries across machines is what this test sees.
    same = {f"gapbench.method.{f}": "1" for f in ("conv", "lstm", "overhead")}

    def planted(r: Results) -> Results:
        return Results(r.path, {**r.context, **same}, r.entries, r.provenance)
    h200 = [planted(load_results(folder / "h200-ubuntu24.json")),
            load_results(folder / "h200-ubuntu24.framework-torch.json")]
    cpu = planted(load_results(folder / "ci-cpu-2core.json"))
    report = model.build_report(h200, [cpu])
    (against,) = report.comparisons
    conv = next(w for w in against.works if w.pair.here.name == CONV_FP32)
    assert conv.pair.across_devices and 200 < conv.pair.speed < 600
    assert conv.explanation.how == "fully"
    rows = {row[0]: row[1:] for row in report.ratio_rows}
    # Each machine's share of its own peak: the GPU's of its SGEMM, the CPU's of its FMA peak.
    shares = [v for k, row in rows.items() if k.startswith("conv n 32") and "share of its" in k
              for v in row]
    assert sorted(v == "—" for v in shares) == [False, False, True, True]
    assert all(0.3 < float(v) < 1.5 for v in shares if v != "—")
    chart = plots.metrics_chart_data(report.ceiling_columns)
    assert chart.machines == ["this run", "baseline ci-cpu-2core"]
    assert "CPU SGEMM, GFLOP/s" in chart.names and all(
        sum(v is not None for v in row) == 2 for row in chart.values)
    assert not any("PCIe" in n for n in chart.names)  # the CPU machine has no link to a GPU
    back = model.build_report([cpu], [h200[0]])  # the other way round
    conv = next(w for w in back.comparisons[0].works if w.pair.there.name == CONV_FP32)
    assert conv.pair.speed < 0.01 and conv.explanation.how == "fully"


def test_the_machine_table_names_the_commit_each_run_was_built_from():
    name = "transfer/pinned/gpu/dir:h2d/mode:sync/bytes:4096/manual_time"
    mine = in_memory(runs(name, [1e-5] * 3), **{"gapbench.commit": "3d728a1", "gapbench.tree":
                                                "dirty"})
    old = in_memory(runs(name, [1e-5] * 3))  # from before runs recorded it
    rows = {row[0]: row[1:] for row in model.build_report([mine], [old]).fingerprint}
    assert rows["gapbench.commit"] == ["3d728a1", "—"]
    assert rows["gapbench.tree"] == ["dirty", "—"]


def test_a_page_that_cannot_be_written_leaves_the_earlier_summary_too(tmp_path, capsys):
    """The page and its summary come from one run or neither is replaced: index.html as a
    folder refuses the page, and the summary.md already there stays the earlier run's."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.md").write_text("the earlier run\n")
    (out / "index.html").mkdir()
    code = render.main(["render", str(DATA / "preprocess.json"), "--out", str(out)])
    assert code == 2 and "index.html" in capsys.readouterr().err
    assert (out / "summary.md").read_text() == "the earlier run\n"
    assert sorted(p.name for p in out.iterdir() if p.suffix not in (".png", ".svg")) == [
        "index.html", "summary.md"]


# ---- one machine per run and per baseline; unique charts; one set of outputs ------------------

FAST = "preprocess/vectorized/cpu/op:sumsq/rows:1000/cols:100/real_time"
ALSO = "preprocess/elementwise/cpu/op:sumsq/rows:1000/cols:100/real_time"


def machine_file(path: Path, machine: str, seconds: float = 1e-3, name: str = FAST,
                 **context: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return write(path, runs(name, [seconds] * 3), **{"machine.id": machine, **context})


def rendered(tmp_path, capsys, *args: str) -> tuple[int, str]:
    code = render.main(["render", *args])
    return code, capsys.readouterr().err


def test_a_folder_of_several_machines_gives_a_baseline_per_machine(tmp_path, capsys):
    """results/baselines: each machine its own baseline, NAME.json with its framework file;
    never merged into one "machine" whose differences are explained across machines."""
    here = machine_file(tmp_path / "run.json", "here")
    folder = tmp_path / "baselines"
    machine_file(folder / "gpu-a.json", "a", 2e-3)
    write(folder / "gpu-a.framework-torch.json", [], **{"machine.id": "a",
                                                        "framework.name": "torch"})
    machine_file(folder / "cpu-b.json", "b", 4e-3)
    code, err = rendered(tmp_path, capsys, str(here), "--baseline", str(folder), "--out",
                         str(tmp_path / "r"))
    assert code == 0, err
    doc = json.loads((tmp_path / "r" / "comparison.json").read_text())
    sides = {c["baseline"]["label"]: c["baseline"]["files"] for c in doc["comparisons"]}
    assert sides == {"cpu-b": [str(folder / "cpu-b.json")],
                     "gpu-a": [str(folder / "gpu-a.json"),
                               str(folder / "gpu-a.framework-torch.json")]}
    summary = (tmp_path / "r" / "summary.md").read_text()
    assert f"{folder} holds the runs of 2 machines; each is a baseline of its own" in summary


def test_a_run_of_several_machines_is_refused_naming_them(tmp_path, capsys):
    folder = tmp_path / "mixed"
    machine_file(folder / "a.json", "machine-a")
    machine_file(folder / "b.json", "machine-b")
    code, err = rendered(tmp_path, capsys, str(folder), "--out", str(tmp_path / "r"))
    assert code == 2 and err == (
        f"gapbench-report render: {folder}: holds the runs of 2 machines (a: machine.id "
        "machine-a, a.json; b: machine.id machine-b, b.json): the run is one machine; give one "
        "machine's files\n")
    code, err = rendered(tmp_path, capsys, str(folder / "a.json"), str(folder / "b.json"),
                         "--out", str(tmp_path / "r"))
    assert code == 2 and "the run's files come from 2 machines" in err
    assert not (tmp_path / "r").exists()


def test_a_fleet_nodes_folder_is_read_for_its_results_only(tmp_path, capsys):
    """task.json, doctor.json and a render's comparison.json are no results files; what was
    not read is said."""
    node = tmp_path / "node-1"
    machine_file(node / "preprocess.json", "node-1")
    (node / "task.json").write_text('{"exit_status": 0}')
    (node / "doctor.json").write_text('{"facts": {}, "findings": []}')
    (node / "notes.json").write_text('{"anything": 1}')
    (node / "gapbench.log").write_text("done\n")
    other = machine_file(tmp_path / "other.json", "other", 2e-3)
    code, err = rendered(tmp_path, capsys, str(node), "--baseline", str(other), "--out",
                         str(node))  # the report written into the node's own folder
    assert code == 0, err
    assert (node / "comparison.json").is_file()
    code, err = rendered(tmp_path, capsys, str(other), "--baseline", str(node), "--out",
                         str(tmp_path / "r"))  # read again: its comparison.json is no results
    assert code == 0, err
    summary = (tmp_path / "r" / "summary.md").read_text()
    assert (f"{node}: not read as results: comparison.json (a comparison written by render), "
            "doctor.json (gapbench doctor's facts), notes.json (no gapbench run context), "
            "task.json (a fleet task's status).") in summary


def test_two_baselines_whose_names_make_one_chart_name_each_have_their_own(tmp_path, capsys):
    here = machine_file(tmp_path / "run.json", "here")
    first = machine_file(tmp_path / "lab 1.json", "one", 2e-3)
    second = machine_file(tmp_path / "lab-1.json", "two", 4e-3)
    third = machine_file(tmp_path / "d1" / "x" / "m.json", "three", 3e-3)
    fourth = machine_file(tmp_path / "d2" / "x" / "m.json", "four", 5e-3)
    out = tmp_path / "r"
    code, err = rendered(tmp_path, capsys, str(here), "--baseline", str(first), str(second),
                         str(third), str(fourth), "--out", str(out))
    assert code == 0, err
    labels = [c["baseline"]["label"] for c in
              json.loads((out / "comparison.json").read_text())["comparisons"]]
    assert labels == ["lab 1", "lab-1", "d1/x/m", "d2/x/m"]
    charts = sorted(p.name for p in out.glob("versus-*.png"))
    assert charts == ["versus-d1-x-m.png", "versus-d2-x-m.png", "versus-lab-1-2.png",
                      "versus-lab-1.png"]
    page = (out / "index.html").read_text()
    shown = [base64.b64decode(src) for src in re.findall(r'src="data:image/png;base64,([^"]+)"',
                                                           page)]
    assert all((out / c).read_bytes() in shown for c in charts)  # each its own, not one shared


def test_a_render_without_a_baseline_leaves_no_comparison_or_versus_chart(tmp_path, capsys):
    here = machine_file(tmp_path / "run.json", "here")
    there = machine_file(tmp_path / "there.json", "there", 2e-3)
    out = tmp_path / "r"
    assert rendered(tmp_path, capsys, str(here), "--baseline", str(there), "--out",
                    str(out))[0] == 0
    assert list(out.glob("versus-*.svg")) and (out / "comparison.json").is_file()
    assert rendered(tmp_path, capsys, str(here), "--out", str(out))[0] == 0
    assert not list(out.glob("versus-*")) and not (out / "comparison.json").exists()


def test_an_interrupted_render_leaves_the_earlier_set_whole(tmp_path, capsys, monkeypatch):
    """Charts drawn, then the page fails: the charts the kept page shows are the earlier
    render's, byte for byte, and nothing of the failed one is left."""
    here = machine_file(tmp_path / "run.json", "here")
    out = tmp_path / "r"
    assert rendered(tmp_path, capsys, str(here), "--out", str(out))[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    slower = machine_file(tmp_path / "slower.json", "here", 5e-3, name=ALSO)

    def broken(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(render, "html_page", broken)
    code, err = rendered(tmp_path, capsys, str(here), str(slower), "--out", str(out))
    assert code == 130 and "interrupted" in err  # 128 + SIGINT, as for every command
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_render_into_a_folder_another_render_is_writing_is_refused(tmp_path, capsys):
    from gapbench_report.inputs import files  # noqa: PLC0415
    here = machine_file(tmp_path / "run.json", "here")
    out = tmp_path / "r"
    with files.OutputSet(out, "gapbench-report render"):
        code, err = rendered(tmp_path, capsys, str(here), "--out", str(out))
    assert code == 2 and err == (f"gapbench-report render: {out}: another gapbench-report render "
                                 "is writing into this folder now; run this one when it has "
                                 "finished, or give another --out\n")
    assert not (out / "index.html").exists()


def test_concurrent_renders_into_one_folder_never_mix(tmp_path):
    """Two renders at once: one writes its whole set, the other is refused (or waits its turn
    after it); the page, summary and comparison always come from one render."""
    a = machine_file(tmp_path / "a.json", "machine-a", 1e-3, **{"cpu.model": "CPU-A"})
    b = machine_file(tmp_path / "b.json", "machine-b", 2e-3, **{"cpu.model": "CPU-B"})
    out = tmp_path / "r"
    env = {**os.environ, "PYTHONPATH": str(Path(render.__file__).parents[1])}
    for _ in range(3):
        started = [subprocess.Popen(
            [sys.executable, "-m", "gapbench_report", "render", str(x), "--baseline", str(y),
             "--out", str(out)], env=env, stderr=subprocess.PIPE, text=True)
            for x, y in ((a, b), (b, a))]
        codes = [(p.wait(), p.stderr.read()) for p in started]
        for p in started:
            p.stderr.close()
        assert any(c == 0 for c, _ in codes)
        assert all(c == 0 or "another gapbench-report render is writing" in e for c, e in codes)
        cpu = "CPU-A" if "CPU-A · " in (out / "summary.md").read_text() else "CPU-B"
        other = "CPU-B" if cpu == "CPU-A" else "CPU-A"
        assert json.loads((out / "comparison.json").read_text())["this"]["cpu"] == cpu
        assert f"{cpu} · " in (out / "index.html").read_text()
        assert f"{other} · " not in (out / "summary.md").read_text()
        on_disk = {p.read_bytes() for p in out.glob("*.png")}
        assert all(png in on_disk for png in images_of(out / "index.html"))  # the page's charts


def test_control_characters_in_names_reach_no_output_raw(tmp_path, capsys):
    """ESC and BEL (any control character) in a name, a message or the context are escaped in
    summary.md, index.html and the error line, as the fleet escapes them."""
    name = "preprocess/vectorized/cpu/op:\x1b[31mred\x07/rows:1000/real_time"
    entries = runs(name, [1e-3] * 3) + [
        {**e, "error_occurred": True, "error_message": "boom\x1b]0;title\x07", "real_time": 0}
        for e in runs(ALSO, [1e-3])]
    path = write(tmp_path / "run.json", entries, **{"cpu.model": "CPU\x1b[2J"})
    code, err = rendered(tmp_path, capsys, str(path), "--out", str(tmp_path / "r"))
    assert code == 0, err
    for output in ("summary.md", "index.html"):
        text = (tmp_path / "r" / output).read_text()
        assert "\x1b" not in text and "\x07" not in text, output
        assert "op \\x1b[31mred\\x07" in text and "CPU\\x1b[2J" in text
    for svg in (tmp_path / "r").glob("*.svg"):
        assert "\x1b" not in svg.read_text() and "\x07" not in svg.read_text(), svg.name
    broken = tmp_path / "bad.json"
    write(broken, [], **{"gapbench.schema": "1\x1b[2J"})
    code, err = rendered(tmp_path, capsys, str(broken), "--out", str(tmp_path / "r2"))
    assert code == 2 and "\x1b" not in err and "\\x1b[2J" in err


def test_a_baseline_that_shares_no_work_says_so(tmp_path, capsys):
    here = machine_file(tmp_path / "run.json", "here")
    there = machine_file(tmp_path / "there.json", "there", name=ALSO)
    out = tmp_path / "r"
    code, err = rendered(tmp_path, capsys, str(here), "--baseline", str(there), "--out", str(out))
    assert code == 0, err
    summary = (out / "summary.md").read_text()
    assert "This run and there share no work: no benchmark both ran." in summary
    assert "in the 0 works both ran" not in summary


def test_a_baseline_folder_that_cannot_be_read_says_so(tmp_path, capsys, monkeypatch):
    """(Root reads a folder of mode 000: the refusal is the OS's, made here.)"""
    here = machine_file(tmp_path / "run.json", "here")
    locked = tmp_path / "locked"
    machine_file(locked / "x.json", "there")
    listdir = os.listdir

    def refusing(path):
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied")
        return listdir(path)

    monkeypatch.setattr(os, "listdir", refusing)
    code, err = rendered(tmp_path, capsys, str(here), "--baseline", str(locked), "--out",
                         str(tmp_path / "r"))
    assert code == 2 and err == (f"gapbench-report render: {locked}: the folder cannot be read: "
                                 "Permission denied\n")


def test_a_comparison_that_cannot_be_made_is_no_silent_drop(tmp_path, capsys, monkeypatch):
    here = machine_file(tmp_path / "run.json", "here")
    there = machine_file(tmp_path / "there.json", "there", 2e-3)

    def broken(*_args):
        raise ValueError("math domain error")

    monkeypatch.setattr(model.versus, "compare", broken)
    out = tmp_path / "r"
    code, err = rendered(tmp_path, capsys, str(here), "--baseline", str(there), "--out", str(out))
    assert code == 2 and err == (
        "gapbench-report render: The comparison with other machines could not be made: "
        f"ValueError: math domain error (the report without it: {out})\n")
    assert "could not be made: ValueError: math domain error" in (out / "summary.md").read_text()


def test_baseline_labels_are_unique_with_as_few_folders_as_tell_them_apart():
    named = [("m", Path("/r/d1/x")), ("m", Path("/r/d2/x")), ("lab 1", Path("/r")),
             ("lab-1", Path("/r")), ("t4", Path("/r/a")), ("t4", Path("/r/a")),
             ("esc\x1b", Path("/r"))]
    assert machines.unique_labels(named) == ["d1/x/m", "d2/x/m", "lab 1", "lab-1", "t4 (1)",
                                             "t4 (2)", "esc\\x1b"]


def test_a_run_beside_other_work_and_its_rerun_are_said_where_its_stability_is(tmp_path):
    """The ceilings table shows each family run's other work and its CPUs' parallel capacity
    beside the SGEMM probes, and the bench workflow's rerun line, on the page and in
    summary.md."""
    rerun = ("runs 2 and 3 of 3 pooled: run 1's SGEMM probe 115 → 220 GFLOP/s (+91%); the pooled "
             "runs' SGEMM probe 180 → 185 GFLOP/s (+3%), SGEMM probe 190 → 186 GFLOP/s (-2%)")
    context = {"stability.sgemm_gflops_start": "180", "stability.sgemm_gflops_end": "185",
               "stability.other_cpus": "0.91", "stability.steal": "0.000",
               "stability.fma_one_gflops_start": "94", "stability.fma_all_gflops_start": "95",
               "stability.fma_one_gflops_end": "94", "stability.fma_all_gflops_end": "178",
               "stability.fma_threads": "2", "gapbench.rerun": rerun}
    sgemm = runs("peak/sgemm/cpu/n:2048/real_time", [0.1] * 3, flops=[1.8e11] * 3)
    conv = write(tmp_path / "conv.json",
                 sgemm + runs("conv/onednn/cpu/n:1/real_time", [1e-3] * 3), **context)
    (row,) = model.ceilings_rows([load_results(conv)])
    assert row[-2] == ("SGEMM 180 → 185; other work 0.9 of a CPU, steal 0%; FMA 2 threads / 1: "
                       "1.0x → 1.9x")
    assert row[-1] == f"held; other work shared the CPUs; {rerun}"
    render.render([load_results(conv)], [], tmp_path / "r")
    summary = (tmp_path / "r" / "summary.md").read_text(encoding="utf-8")
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    assert rerun in summary and "runs 2 and 3 of 3 pooled" in page
    assert summary.index("Other work used these CPUs during the run") < summary.index(rerun)


def test_the_threads_family_draws_its_twins_with_the_text_axis_value(tmp_path):
    """lib_threads is 1 or all: the generic family chart puts the word beside the number."""
    rows = [bench(f"threads/{work}/lib_threads:{threads}/real_time", [seconds] * 3,
                  flops=[4e6 / seconds] * 3, lib_threads=[n] * 3)
            for work in ("onednn/cpu/op:lstm_step/batch:64/input:50/hidden:64",
                         "openblas/cpu/op:matmul/n:128", "openblas/cpu/op:matmul/n:1024")
            for threads, n, seconds in (("1", 1, 2.5e-4), ("all", 2, 5e-4))]
    assert_images(plots.family_chart(rows, "threads", tmp_path / "threads"))
