"""The nightly workflow's promises, read from its text (actionlint checks its syntax and its
shell in ctest's ci.actionlint): a schedule and a manual trigger, a hosted CPU job and a
self-hosted GPU job, each running ci/nightly, keeping its state, uploading its files and writing
the summary."""

from __future__ import annotations

import re
from pathlib import Path

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "nightly.yml"


def jobs() -> dict[str, str]:
    text = WORKFLOW.read_text(encoding="utf-8")
    body = text.split("\njobs:\n", 1)[1]
    parts = re.split(r"^  ([a-z0-9_-]+):\n", body, flags=re.M)[1:]
    return dict(zip(parts[::2], parts[1::2]))


def test_triggers():
    text = WORKFLOW.read_text(encoding="utf-8")
    assert re.search(r"^on:\n  schedule:\n    - cron: \"[0-9 *]+\"\n  workflow_dispatch:", text,
                     re.M)


def test_a_cpu_job_and_a_gpu_job():
    found = jobs()
    assert set(found) == {"cpu", "gpu"}
    assert "runs-on: ubuntu-latest" in found["cpu"]
    assert "runs-on: [self-hosted, gpu]" in found["gpu"]
    assert "-DGAPBENCH_CUDA=OFF" in found["cpu"]  # GPU variants skipped on the hosted runner


def test_each_job_gates_keeps_state_uploads_and_summarizes():
    for name, job in jobs().items():
        assert "fetch-depth: 0" in job, name  # the known-good commit must be in the clone
        assert "bash ci/setup --no-chromium" in job, name
        assert 'ci/nightly "${args[@]}"' in job, name
        assert 'cat results/nightly/last/summary.md >> "$GITHUB_STEP_SUMMARY"' in job, name
        assert "actions/cache/restore@" in job and "actions/cache/save@" in job, name
        upload = job.split("actions/upload-artifact@", 1)[1]
        assert "results/nightly/last" in upload and "results/nightly/history" in upload, name
        assert job.count("if: always()") == 2, name  # state and artifacts even on a regression
