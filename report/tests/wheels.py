"""Installing a project as a user does (`pip install ./report`, not editable), for the install
tests of both projects (report/tests/test_install.py, ci/tests/test_install.py): each wheel is
built offline from a copy of its sources and installed into a fresh virtual environment, the
running Python's numpy, scipy and matplotlib lent to it, nothing of this checkout. Where no wheel
can be built here (no setuptools 70.1 or later; ci/setup's .venv has it) the test skips, saying
why; under CI=true it fails instead."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# This project's entries in the running Python's site-packages: never lent to the fresh venv.
OWN = ("gapbench_report", "gapbench_ci", "gapbench-report", "gapbench-ci", "gapbench_report-",
       "gapbench_ci-", "__editable__")


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {reason}")
    pytest.skip(reason)


def env() -> dict[str, str]:
    """No PYTHONPATH: the sources of this checkout must not be found."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"MPLBACKEND": "Agg"}


def run(*command, **kw) -> subprocess.CompletedProcess:
    """Without PYTHONPATH unless told (env()): pip would take the checkout's editable install
    (gapbench_report.egg-info beside the sources) for the wheel already installed."""
    kw.setdefault("env", env())
    return subprocess.run([str(c) for c in command], capture_output=True, text=True,
                          timeout=300, check=False, **kw)


def build_wheel(project: Path, packages: tuple[str, ...], tmp: Path) -> Path:
    """The wheel of `project` (a folder with pyproject.toml), built from a copy of its
    pyproject.toml and `packages`."""
    source = tmp / f"src-{project.name}"
    source.mkdir()
    shutil.copy(project / "pyproject.toml", source)
    for package in packages:
        shutil.copytree(project / package, source / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp / f"dist-{project.name}"
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index",
                "--no-build-isolation", "--no-cache-dir", "--quiet", "-w", dist, source)
    wheels = list(dist.glob("*.whl"))
    if built.returncode != 0 or not wheels:
        why = ("this Python's setuptools builds no wheel (bdist_wheel came with setuptools 70.1)"
               if "invalid command 'bdist_wheel'" in built.stderr else
               (built.stderr.strip().splitlines() or ["pip wheel failed"])[-1])
        unavailable(f"cannot build the wheel of {project.name}/ offline: {why}; "
                    f"{sys.executable} -m pip install 'setuptools>=70.1'")
    return wheels[0]


def install(wheels: list[Path], tmp: Path) -> Path:
    """A fresh venv holding `wheels` (and what this Python has installed, lent); its bin/."""
    venv = tmp / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv).check_returncode()
    lend_dependencies(venv, tmp / "deps")
    done = run(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install",
               "--no-index", "--no-build-isolation", "--no-cache-dir", "--quiet", *wheels)
    assert done.returncode == 0, done.stderr  # the dependencies each declares are found
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


def installed_from(bin_dir: Path, modules: list[str], cwd: Path) -> list[Path]:
    """Where the venv's Python imports `modules` from."""
    done = run(bin_dir / "python", "-c", "import importlib, sys; print(*(importlib.import_module"
               "(m).__file__ for m in sys.argv[1:]), sep='\\n')", *modules, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return [Path(p) for p in done.stdout.split()]
