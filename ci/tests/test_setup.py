"""ci/setup's decisions, through --dry-run, with the NVIDIA driver and an old CMake faked.

The real installs (apt, PyPI's CUDA wheels, CMake from PyPI) are too large for a unit test; these
tests prove what ci/setup chooses for each machine, and that bad input gets one line and exit 2.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "ci" / "setup"

SMI_BANNER = ("| NVIDIA-SMI {drv}    Driver Version: {drv}    CUDA Version: {cuda}     |")


def fake_tool(folder: Path, name: str, script: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / name
    tool.write_text("#!/bin/sh\n" + script + "\n", encoding="utf-8")
    tool.chmod(0o755)


def fake_driver(folder: Path, cuda: str | None) -> None:
    """nvidia-smi as a driver for CUDA `cuda` prints it; None: installed, but no GPU answers."""
    if cuda is None:
        fake_tool(folder, "nvidia-smi", "echo 'NVIDIA-SMI has failed' >&2; exit 9")
    else:
        fake_tool(folder, "nvidia-smi", f"echo '{SMI_BANNER.format(drv='580.65.06', cuda=cuda)}'")


def setup(*args: str, fakes: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "GAPBENCH_IGNORE_SYSTEM_CUDA": "1", **env}
    if fakes is not None:
        environ["PATH"] = f"{fakes}:{environ['PATH']}"
    return subprocess.run(["bash", str(SETUP), *args], capture_output=True, text=True,
                          env=environ, timeout=60, check=False)


def test_unknown_flag_is_one_line_and_exit_2():
    done = setup("--bogus")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == ["ci/setup: unknown argument '--bogus' (see --help)"]


def test_cuda_13_driver_gets_13_wheels_no_newer_than_the_driver(tmp_path):
    fake_driver(tmp_path, "13.0")
    done = setup("--dry-run", fakes=tmp_path)
    assert done.returncode == 0, done.stderr
    # "would install CUDA 13.0 ..." or, where .venv already has it, "CUDA 13.0 ... is in ...".
    plan = [line for line in done.stdout.splitlines() if "CUDA 13.0 from PyPI" in line]
    assert len(plan) == 1, done.stdout
    assert "CUDA 13.0" in plan[0]
    for wheel in ("nvidia-cuda-nvcc>=13.0,<13.1", "nvidia-cuda-runtime>=13.0,<13.1",
                  "nvidia-cublas>=13.0,<13.1", "nvidia-cudnn-cu13"):
        assert wheel in plan[0]
    assert "cu12" not in plan[0]


def test_a_newer_minor_driver_allows_that_minor(tmp_path):
    fake_driver(tmp_path, "13.2")
    done = setup("--dry-run", fakes=tmp_path)
    assert "nvidia-cuda-nvcc>=13.0,<13.3" in done.stdout


@pytest.mark.parametrize("flag,status", [("", 0), ("--cuda", 2)])
def test_cuda_12_driver_never_gets_cuda_13_and_says_why(tmp_path, flag, status):
    fake_driver(tmp_path, "12.4")
    done = setup(*filter(None, ["--dry-run", flag]), fakes=tmp_path)
    assert done.returncode == status
    assert "would install CUDA" not in done.stdout
    said = done.stdout + done.stderr
    assert "the driver supports CUDA 12.4" in said
    assert "no nvcc, no fatbinary" in said
    if status:
        assert len(done.stderr.strip().splitlines()) == 1


def test_an_old_driver_is_named(tmp_path):
    fake_driver(tmp_path, "11.8")
    done = setup("--dry-run", fakes=tmp_path)
    assert done.returncode == 0
    assert "CUDA 11.8; gapbench needs a driver for CUDA 13 (r580 or newer)" in done.stdout


def test_cuda_without_a_driver_is_one_line_and_exit_2(tmp_path):
    fake_driver(tmp_path, None)
    done = setup("--dry-run", "--cuda", fakes=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "no NVIDIA driver answers" in done.stderr


def test_no_driver_and_no_toolkit_is_a_note_not_an_error(tmp_path):
    fake_driver(tmp_path, None)
    done = setup("--dry-run", fakes=tmp_path)
    assert done.returncode == 0
    assert "no CUDA toolkit and no NVIDIA driver" in done.stdout


def test_an_old_cmake_is_replaced_ahead_of_it_on_path(tmp_path):
    fake_tool(tmp_path / "usr-bin", "cmake", "echo 'cmake version 3.22.1'")
    bin_dir = tmp_path / "local-bin"
    bin_dir.mkdir()
    done = setup("--dry-run", "--no-cuda", fakes=tmp_path / "usr-bin",
                 GAPBENCH_BIN_DIR=str(bin_dir))
    assert done.returncode == 0, done.stderr
    assert f"would install CMake 3.x from PyPI into {bin_dir}/.gapbench-cmake, linked from " \
           f"{bin_dir} (found 3.22.1)" in done.stdout


def test_a_current_cmake_is_left_alone(tmp_path):
    fake_tool(tmp_path, "cmake", "echo 'cmake version 3.28.3'")
    done = setup("--dry-run", "--no-cuda", fakes=tmp_path)
    assert done.returncode == 0
    assert "CMake" not in done.stdout


def test_explain_extra_only_when_asked():
    """--explain adds the report's extra 'explain' to .venv's install (its stamp names the
    extras, so asking for it later installs it)."""
    setup_text = SETUP.read_text(encoding="utf-8")
    assert 'pip install --quiet -e "$root/report[$extras]"' in setup_text
    with_it = setup("--dry-run", "--no-cuda", "--explain")
    without = setup("--dry-run", "--no-cuda")
    assert with_it.returncode == 0 and without.returncode == 0, with_it.stderr
    assert ("([test,explain]) into" in with_it.stdout or ".venv is complete" in with_it.stdout)
    assert "[test,explain]" not in without.stdout
    assert "--explain      also put the report's extra `explain` into .venv" in setup(
        "--help").stdout


def test_tensorflow_only_when_asked_in_a_venv_of_its_own():
    done = setup("--dry-run", "--no-cuda", "--tensorflow")
    assert done.returncode == 0, done.stderr
    venv = ROOT / ".venv-tf"
    # "would install ..." or, where it is there already, "... is complete".
    assert (f"would install tensorflow-cpu==2.21.0 into {venv}" in done.stdout
            or ".venv-tf is complete (tensorflow-cpu==2.21.0)" in done.stdout), done.stdout
    assert "tensorflow" not in setup("--dry-run", "--no-cuda").stdout


# ---- the Python environment's stamp: both projects, redone whenever incomplete -------------------

def fake_checkout(tmp_path: Path) -> Path:
    """A checkout with ci/setup and the two projects' pyproject.toml files, nothing else."""
    root = tmp_path / "checkout"
    for project in ("report", "ci"):
        (root / project).mkdir(parents=True)
        (root / project / "pyproject.toml").write_bytes(
            (ROOT / project / "pyproject.toml").read_bytes())
    (root / "ci" / "setup").write_bytes(SETUP.read_bytes())
    return root


def stamp_for(root: Path, extras: str = "test") -> str:
    """What ci/setup writes into .venv/.gapbench-report once both projects are installed."""
    digest = hashlib.sha256((root / "report" / "pyproject.toml").read_bytes()
                            + (root / "ci" / "pyproject.toml").read_bytes()).hexdigest()[:16]
    python = subprocess.run(["python3", "-V"], capture_output=True, text=True,
                            check=True).stdout.strip()
    return f"{digest} {python} [{extras}]\n"


def plan(root: Path) -> str:
    done = subprocess.run(["bash", str(root / "ci" / "setup"), "--dry-run", "--no-cuda",
                           "--no-chromium"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_complete_environment_is_left_and_an_incomplete_one_redone(tmp_path):
    root = fake_checkout(tmp_path)
    venv = root / ".venv"
    redo = f"would install the report and CI packages and their test tools ([test]) into {venv}"
    assert redo in plan(root)  # none yet
    venv.mkdir()
    assert redo in plan(root)  # cut off before the stamp: redone
    (venv / ".gapbench-report").write_text(stamp_for(root))
    assert ".venv is complete" in plan(root)
    # The stamp of an install of another layout (the report's project alone) or of other extras.
    for other in (hashlib.sha256((root / "report" / "pyproject.toml").read_bytes()).hexdigest(),
                  stamp_for(root, "test,explain")):
        (venv / ".gapbench-report").write_text(other[:16] + stamp_for(root)[16:]
                                               if len(other) == 64 else other)
        assert redo in plan(root)
    # A change to either project's pyproject.toml is a new install.
    (venv / ".gapbench-report").write_text(stamp_for(root))
    with (root / "ci" / "pyproject.toml").open("a") as f:
        f.write("\n# changed\n")
    assert redo in plan(root)
