"""The report as a user installs it: `pip install ./report`, not editable. The wheel is built
offline from a copy of the sources, installed into a fresh virtual environment (the running
Python's numpy, scipy and matplotlib lent to it, nothing of this checkout), and every command is
run from there. Where no wheel can be built here (no setuptools 70.1 or later; ci/setup's .venv
has it) the test skips, saying why; under CI=true it fails instead."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPORT = Path(__file__).resolve().parents[1]
DATA = REPORT / "tests" / "data"
OWN = ("gapbench_report", "gapbench_ci", "gapbench-report", "gapbench_report-",
       "__editable__")  # this project's entries in the running Python's site-packages


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {reason}")
    pytest.skip(reason)


def run(*command, **kw) -> subprocess.CompletedProcess:
    """Without PYTHONPATH unless told (env()): pip would take the checkout's editable install
    (gapbench_report.egg-info beside the sources) for the wheel already installed."""
    kw.setdefault("env", env())
    return subprocess.run([str(c) for c in command], capture_output=True, text=True,
                          timeout=300, check=False, **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv holding the report's wheel; its bin/ folder."""
    tmp = tmp_path_factory.mktemp("install")
    source = tmp / "src"
    source.mkdir()
    shutil.copy(REPORT / "pyproject.toml", source)
    for package in ("gapbench_report", "gapbench_ci"):
        shutil.copytree(REPORT / package, source / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index",
                "--no-build-isolation", "--no-cache-dir", "--quiet", "-w", tmp / "dist", source)
    wheels = list((tmp / "dist").glob("*.whl"))
    if built.returncode != 0 or not wheels:
        why = ("this Python's setuptools builds no wheel (bdist_wheel came with setuptools 70.1)"
               if "invalid command 'bdist_wheel'" in built.stderr else
               (built.stderr.strip().splitlines() or ["pip wheel failed"])[-1])
        unavailable(f"cannot build the wheel offline: {why}; "
                    f"{sys.executable} -m pip install 'setuptools>=70.1'")
    venv = tmp / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv).check_returncode()
    lend_dependencies(venv, tmp / "deps")
    done = run(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install",
               "--no-index", "--no-build-isolation", "--no-cache-dir", "--quiet", wheels[0])
    assert done.returncode == 0, done.stderr  # the dependencies it declares are found
    return venv / "bin"


def lend_dependencies(venv: Path, deps: Path) -> None:
    """What the running Python has installed (its site-packages folders), less this project, on
    the venv's path after its own site-packages: numpy and the rest without a download."""
    deps.mkdir()
    for folder in sys.path:
        if Path(folder).name not in ("site-packages", "dist-packages") or \
                not Path(folder).is_dir():
            continue
        for entry in Path(folder).iterdir():
            if not entry.name.startswith(OWN) and not (deps / entry.name).exists():
                (deps / entry.name).symlink_to(entry)
    site = run(venv / "bin" / "python", "-c",
               "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    (Path(site) / "gapbench-test-deps.pth").write_text(f"{deps}\n")


def env() -> dict[str, str]:
    """No PYTHONPATH: the sources of this checkout must not be found."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"MPLBACKEND": "Agg"}


def test_the_installed_packages_are_the_wheels(installed, tmp_path):
    done = run(installed / "python", "-c", "import gapbench_report.plots, gapbench_ci.nightly; "
               "print(gapbench_report.plots.__file__); print(gapbench_ci.nightly.__file__)",
               env=env(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert all(Path(p).is_relative_to(installed.parent) for p in done.stdout.split())


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
        "baseline": (["--help"], 0),
        "nightly": (["--help"], 0),
        "explain": (["--help"], 0),  # the plain install has no extra 'explain': its help works
    }
    for command, (args, status) in commands.items():
        done = run(installed / "gapbench-report", command, *args, env=env(), cwd=tmp_path)
        assert done.returncode == status, f"{command}: {done.stderr}"
        assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
    assert (tmp_path / "report" / "index.html").exists()
    assert (tmp_path / "trend" / "index.html").exists()
    # baseline and nightly came through the wheel's entry points (gapbench_report.commands).
    done = run(installed / "gapbench-report", "--help", env=env(), cwd=tmp_path)
    assert "Commands of other installed packages: baseline, nightly." in done.stdout
    done = run(installed / "gapbench-report", "baseline", "--help", env=env(), cwd=tmp_path)
    assert done.stdout.startswith("usage: ci/baseline "), done.stderr
    for module in ("gapbench_report", "gapbench_ci.baseline", "gapbench_ci.nightly",
                   "gapbench_ci.gate_proof", "gapbench_ci.gpu_check"):
        done = run(installed / "python", "-m", module, "--help", env=env(), cwd=tmp_path)
        assert done.returncode == 0, f"{module}: {done.stderr}"
