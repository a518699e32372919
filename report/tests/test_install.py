"""The report as a user installs it: `pip install ./report`, not editable, alone (the CI's
project, ci/, is tested with it in ci/tests/test_install.py). The wheel is built offline from a
copy of the sources and installed into a fresh virtual environment (tests/wheels.py), and every
command is run from there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.wheels import REPO, build_wheel, env, install, installed_from, run

REPORT = REPO / "report"
DATA = REPORT / "tests" / "data"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv holding the report's wheel; its bin/ folder."""
    tmp = tmp_path_factory.mktemp("install")
    return install([build_wheel(REPORT, ("gapbench_report",), tmp)], tmp)


def test_the_installed_package_is_the_wheel_and_holds_nothing_of_the_ci(installed, tmp_path):
    found = installed_from(installed, ["gapbench_report.render.plots", "gapbench_report"], tmp_path)
    assert all(p.is_relative_to(installed.parent) for p in found)
    done = run(installed / "python", "-c", "import gapbench_ci", cwd=tmp_path)
    assert done.returncode == 1 and "No module named 'gapbench_ci'" in done.stderr


def history(folder: Path) -> Path:
    folder.mkdir()
    for day in (1, 2):
        (folder / f"2026010{day}T000000Z-{day:012x}.json").write_text(json.dumps({
            "schema": "gapbench-nightly-history/1", "date": f"2026-01-0{day}T00:00:00+00:00",
            "commit": f"{day:040x}", "machine": "m", "medians": {
                "preprocess/vectorized/cpu/op:sumsq/rows:1000/cols:100/real_time": 1e-3}}))
    return folder


def test_every_command_runs_from_the_plain_install(installed, tmp_path):
    good = DATA / "good.json"
    commands = {
        "render": ([good, "--out", tmp_path / "report"], 0),
        "compare": ([good, good], 0),
        "diagnose": ([good], 0),
        "check": ([good], 0),
        "trend": ([history(tmp_path / "history"), "--out", tmp_path / "trend"], 0),
        "explain": (["--help"], 0),  # the plain install has no extra 'explain': its help works
    }
    for command, (args, status) in commands.items():
        done = run(installed / "gapbench-report", command, *args, env=env(), cwd=tmp_path)
        assert done.returncode == status, f"{command}: {done.stderr}"
        assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
    assert (tmp_path / "report" / "index.html").exists()
    assert (tmp_path / "trend" / "index.html").exists()
    done = run(installed / "python", "-m", "gapbench_report", "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_without_the_ci_project_baseline_says_where_it_is(installed, tmp_path):
    """baseline and nightly are gapbench-ci's (its entry points): the report alone names them as
    such, with one line and exit status 2."""
    done = run(installed / "gapbench-report", "--help", cwd=tmp_path)
    assert done.returncode == 0 and "Commands of other installed packages" not in done.stdout
    for command in ("baseline", "nightly"):
        done = run(installed / "gapbench-report", command, "--help", cwd=tmp_path)
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
        assert f"'{command}' is gapbench-ci's command" in done.stderr
        assert f"run ci/{command}" in done.stderr
