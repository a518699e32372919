"""gapbench-ci as a user installs it: the wheels of ci/ and of report/ (the project it depends
on), not editable, built offline and installed into a fresh virtual environment
(report/tests/wheels.py), and every command run from there: gapbench-ci's own, and the report's
baseline and nightly that it adds through its entry points."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.wheels import REPO, build_wheel, env, install, installed_from, run

COMMANDS = ("gapbench_ci.baseline", "gapbench_ci.nightly", "gapbench_ci.gate_proof",
            "gapbench_ci.gpu_check", "gapbench_ci.gpu_kit", "gapbench_ci.gpu_quick_estimate")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("wheels")
    return {"report": build_wheel(REPO / "report", ("gapbench_report",), tmp),
            "ci": build_wheel(REPO / "ci", ("gapbench_ci",), tmp)}


@pytest.fixture(scope="module")
def installed(wheels, tmp_path_factory) -> Path:
    """A fresh venv holding both wheels; its bin/ folder."""
    return install([wheels["report"], wheels["ci"]], tmp_path_factory.mktemp("install"))


def test_the_installed_packages_are_the_wheels(installed, tmp_path):
    found = installed_from(installed, ["gapbench_ci.nightly", "gapbench_report.render.plots"],
                           tmp_path)
    assert all(p.is_relative_to(installed.parent) for p in found)


def test_the_ci_wheel_needs_the_report(wheels, tmp_path):
    """gapbench-ci declares its dependency: alone, with no gapbench-report to be found, pip
    refuses it, naming it."""
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv).check_returncode()
    done = run(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install",
               "--no-index", "--no-cache-dir", "--quiet", wheels["ci"])
    assert done.returncode != 0 and "gapbench-report" in done.stderr, done.stderr


def test_every_command_runs_from_the_plain_install(installed, tmp_path):
    done = run(installed / "gapbench-ci", "--help", cwd=tmp_path)
    assert done.returncode == 0 and "gapbench-ci gpu-check " in done.stdout, done.stderr
    for command in ("baseline", "nightly", "gate-proof", "gpu-check"):
        done = run(installed / "gapbench-ci", command, "--help", cwd=tmp_path)
        assert done.returncode == 0 and done.stdout.startswith(f"usage: ci/{command} "), \
            f"{command}: {done.stderr}"
    done = run(installed / "gapbench-ci", "fleet", "--help", cwd=tmp_path)
    assert done.returncode == 0 and "gapbench-ci fleet submit" in done.stdout, done.stderr
    for module in ("gapbench_ci", *COMMANDS):
        done = run(installed / "python", "-m", module, "--help", env=env(), cwd=tmp_path)
        assert done.returncode == 0, f"{module}: {done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr


def test_baseline_and_nightly_come_to_gapbench_report_through_the_entry_points(installed,
                                                                             tmp_path):
    done = run(installed / "gapbench-report", "--help", cwd=tmp_path)
    assert "Commands of other installed packages: baseline, nightly." in done.stdout
    for command in ("baseline", "nightly"):
        done = run(installed / "gapbench-report", command, "--help", cwd=tmp_path)
        assert done.returncode == 0 and done.stdout.startswith(f"usage: ci/{command} "), \
            done.stderr
