"""Benchmarks that failed (an error, not a skip) lead the diagnosis: the verdict's first words and
the first finding, in `diagnose`, summary.md and index.html, before any measured loss."""

from __future__ import annotations

import re

from gapbench_report.core.findings import Finding
from gapbench_report.core.run_model import Run
from gapbench_report.diagnose import command as diagnose_command
from gapbench_report.diagnose import rules as diagnose
from gapbench_report.inputs.results import load_results
from gapbench_report.render import command as render
from tests.synthetic import failed, in_memory, runs, skipped, write

PIPE = "pipeline/{v}/cpu/produce_ms:4/consume_ms:1/depth:{d}/workers:{w}/real_time"
BF16 = "conv/onednn/cpu/n:2/c:64/hw:56/k:64/r:3/stride:1/pad:1/math:bf16/real_time"
ONEDNN_ERROR = "could not create a primitive descriptor iterator"
FAILURE = f"1 benchmark failed (conv), {BF16}: {ONEDNN_ERROR}. "
LOSS = ("Biggest measured losses on this machine: an input pipeline that starves the training "
        "step (1.9x).")


def starved_pipeline() -> list[dict]:
    """Timed entries whose measured loss makes the verdict: prefetch 1.9x none's batches/s."""
    return (runs(PIPE.format(v="none", d=0, w=1), [0.01] * 3, idle_fraction=[0.75] * 3,
                 items_per_second=[100] * 3)
            + runs(PIPE.format(v="prefetch", d=2, w=1), [0.01] * 3, items_per_second=[190] * 3))


def user_run() -> list[dict]:
    """The issue's run in small: the conv family's CPU bf16 case failed, the rest was timed."""
    return (starved_pipeline() + runs(BF16.replace("bf16", "fp32"), [2e-3] * 3)
            + failed(BF16, ONEDNN_ERROR))


def skips_only() -> list[dict]:
    """The same run with the bf16 case skipped, in both of Google Benchmark's forms."""
    fp32 = BF16.replace("bf16", "fp32")
    skip_18 = [{**e, "error_occurred": False, "skipped": True, "skip_message": "no bf16 here"}
               for e in skipped(fp32.replace("onednn", "im2col_blas"), "")]
    return starved_pipeline() + runs(fp32, [2e-3] * 3) + skipped(BF16, "no bf16 here") + skip_18


def test_a_failed_benchmark_leads_the_findings_and_the_verdict():
    findings = diagnose.diagnose([in_memory(user_run())])
    first = findings[0]
    assert (first.rule, first.severity, first.title) == ("benchmarks_failed", "problem",
                                                         "1 benchmark failed (conv)")
    assert first.text.startswith(f"{BF16}: {ONEDNN_ERROR}. What failed is missing")
    assert "pipeline_idle" in {f.rule for f in findings[1:]}
    assert diagnose.verdict(findings) == FAILURE + LOSS


def test_failures_are_counted_per_benchmark_and_family_before_any_other_problem():
    lstm = "lstm/cudnn/cpu/scope:step/batch:64/input:50/hidden:64/steps:100/real_time"
    entries = (starved_pipeline() + failed(BF16, ONEDNN_ERROR, repetitions=5)
               + failed(BF16.replace("n:2", "n:8"), "out of memory\n  in oneDNN")
               + failed(lstm, "validation failed: 3 of 6400 elements off"))
    driver = {"finding.driver_older_than_runtime":
              "problem: The NVIDIA driver supports CUDA up to 12.4, older than 13.0."}
    findings = diagnose.diagnose([in_memory(entries, **driver)])
    assert [f.rule for f in findings[:2]] == ["benchmarks_failed", "driver_older_than_runtime"]
    assert findings[0].title == "3 benchmarks failed (2 in conv, 1 in lstm)"
    assert findings[0].text.startswith(f"The first to fail, {BF16}: {ONEDNN_ERROR}.")
    assert "the section of conv and lstm" in findings[0].text
    assert diagnose.verdict(findings) == (
        f"3 benchmarks failed (2 in conv, 1 in lstm), the first {BF16}: {ONEDNN_ERROR}. "
        "Fix first: NVIDIA driver older than the CUDA runtime.")


def test_a_failure_every_family_file_repeats_counts_once():
    peak = failed("peak/read/cpu/mib:256/real_time/threads:1", "mmap failed")
    findings = diagnose.diagnose([in_memory(peak + starved_pipeline()), in_memory(peak)])
    assert findings[0].title == "1 benchmark failed (peak)"


def test_skips_alone_are_no_failure():
    findings = diagnose.diagnose([in_memory(skips_only())])
    assert "benchmarks_failed" not in {f.rule for f in findings}
    assert diagnose.verdict(findings) == LOSS


def test_the_diagnose_command_prints_the_failure_first(tmp_path, capsys):
    path = write(tmp_path / "conv.json", user_run())
    assert diagnose_command.main([str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == FAILURE + LOSS
    assert lines[1] == "[problem] 1 benchmark failed (conv)"
    write(path, skips_only())
    assert diagnose_command.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(LOSS) and "failed" not in out


def rendered(tmp_path, entries) -> tuple[str, str]:
    out = tmp_path / "report"
    index = render.render([load_results(write(tmp_path / "run.json", entries))], [], out)
    return (out / "summary.md").read_text(encoding="utf-8"), index.read_text(encoding="utf-8")


def findings_md(summary: str) -> list[str]:
    """The lines of summary.md's Findings section that say something."""
    section = summary.split("## Findings\n", 1)[1].split("\n#", 1)[0]
    return [line for line in section.splitlines() if line]


def test_the_report_opens_with_the_failure(tmp_path):
    summary, page = rendered(tmp_path, user_run())
    lines = findings_md(summary)
    assert lines[0] == f"**{FAILURE + LOSS}**"
    assert lines[1].startswith("- **problem** — **1 benchmark failed (conv)**: " + BF16)
    verdict = re.search(r'<p class="verdict">([^<]*)</p>', page)[1]
    assert verdict == FAILURE + LOSS
    first_card = page[page.index('<div class="finding'):]
    assert first_card.startswith('<div class="finding problem">')
    assert "<strong>1 benchmark failed (conv)</strong>" in first_card.split("</div>", 1)[0]


def test_a_report_of_skips_alone_has_no_failure(tmp_path):
    summary, page = rendered(tmp_path, skips_only())
    assert findings_md(summary)[0] == f"**{LOSS}**"
    assert re.search(r'<p class="verdict">([^<]*)</p>', page)[1] == LOSS
    assert "benchmark failed" not in summary + page


def test_a_failure_ranks_before_a_problem_with_a_measured_loss():
    failure = diagnose.rule_failed(Run.of([in_memory(user_run())]))[0]
    costly = Finding("some_problem", "problem", "A costly problem", "", impact=5.0)
    assert sorted([costly, failure], key=diagnose.rank) == [failure, costly]
