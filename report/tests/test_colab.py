"""Tests of the Colab path's parts that run without Colab: the notebook is valid nbformat 4 whose
cells compile (Python) or parse (shell magics), and ci/colab-baseline handles its arguments and
a missing GPU with a clear message."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "ci" / "colab_baseline.ipynb"
SCRIPT = ROOT / "ci" / "colab-baseline"


@pytest.fixture(scope="module")
def notebook():
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))


def test_notebook_is_nbformat_4(notebook):
    assert notebook["nbformat"] == 4 and notebook["nbformat_minor"] >= 5
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"
    assert notebook["metadata"]["accelerator"] == "GPU"  # Colab opens it on a GPU runtime
    ids = [c["id"] for c in notebook["cells"]]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", i)
                                             for i in ids)
    for cell in notebook["cells"]:
        assert cell["cell_type"] in ("markdown", "code")
        assert isinstance(cell["metadata"], dict)
        assert isinstance(cell["source"], list) and all(isinstance(s, str)
                                                        for s in cell["source"])
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None  # saved clean


def test_notebook_validates_with_nbformat_where_installed():
    nbformat = pytest.importorskip("nbformat")
    nbformat.validate(nbformat.read(str(NOTEBOOK), as_version=4))


def _code_cells(notebook):
    return ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]


def test_every_code_cell_compiles_and_every_magic_parses(notebook):
    magics = 0
    for source in _code_cells(notebook):
        python_lines = []
        for line in source.splitlines():
            if line.lstrip().startswith("!"):
                # IPython substitutes {NAME} with Python values; any word stands in here.
                command = re.sub(r"\{[A-Za-z_][A-Za-z0-9_]*\}", "x", line.lstrip()[1:])
                done = subprocess.run(["bash", "-n", "-c", command], capture_output=True,
                                      text=True)
                assert done.returncode == 0, f"{line!r}: {done.stderr}"
                magics += 1
                python_lines.append(line[:len(line) - len(line.lstrip())] + "pass")
            else:
                assert not line.lstrip().startswith("%"), "no line magics but ! commands"
                python_lines.append(line)
        compile("\n".join(python_lines), "<cell>", "exec")
    assert magics >= 1


def test_notebook_checks_the_gpu_first_and_calls_the_script(notebook):
    cells = _code_cells(notebook)
    gpu = next(i for i, c in enumerate(cells) if "nvidia-smi" in c)
    build = next(i for i, c in enumerate(cells) if "ci/colab-baseline" in c)
    assert gpu < build  # nothing installed or built without a GPU
    assert "REPO_URL" in cells[0] and "TARBALL" in cells[0]
    assert "files.download" in cells[-1]


# ---- ci/colab-baseline ---------------------------------------------------------------------------

@pytest.fixture
def path_without_gpu(tmp_path):
    """A PATH with the tools the script uses and no nvidia-smi (even on a GPU machine)."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("bash", "sed", "tr", "head", "dirname", "env"):
        os.symlink(shutil.which(tool), tools / tool)
    return tools


def fake_smi(folder: Path, name: str | None) -> None:
    body = (f'if [ "$1" = "--query-gpu=name" ]; then echo "{name}"; fi\n' if name else
            'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA '
            'driver." >&2\nexit 9\n')
    (folder / "nvidia-smi").write_text("#!/bin/sh\n" + body)
    (folder / "nvidia-smi").chmod(0o755)


def script(*args, path):
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          env={"PATH": str(path), "HOME": "/nonexistent"})


def test_script_without_nvidia_smi_says_how_to_get_a_gpu(path_without_gpu):
    done = script(path=path_without_gpu)
    assert done.returncode == 2 and done.stdout == ""
    assert "nvidia-smi is not installed" in done.stderr
    assert "Runtime > Change runtime type" in done.stderr and "T4" in done.stderr


def test_script_with_a_driver_but_no_gpu(path_without_gpu):
    fake_smi(path_without_gpu, None)
    done = script("--dry-run", path=path_without_gpu)
    assert done.returncode == 2
    assert "sees no GPU" in done.stderr and "couldn't communicate" in done.stderr


@pytest.mark.parametrize("gpu, name", [("Tesla T4", "colab-t4"), ("NVIDIA L4", "colab-l4"),
                                       ("NVIDIA A100-SXM4-40GB", "colab-a100-sxm4-40gb")])
def test_script_dry_run_names_the_baseline_after_the_gpu(path_without_gpu, gpu, name):
    fake_smi(path_without_gpu, gpu)
    done = script("--dry-run", path=path_without_gpu)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"ci/colab-baseline: GPU: {gpu}"
    assert lines[1] == f"+ bash {ROOT}/ci/setup --no-chromium"
    assert lines[2] == (f"+ {ROOT}/ci/baseline {name} --require-gpu "
                        "--cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=native")


def test_script_passes_its_options_on(path_without_gpu):
    fake_smi(path_without_gpu, "Tesla T4")
    done = script("--dry-run", "--skip-setup", "--name", "my-t4", "--filter=^peak/",
                  "--repetitions", "12", path=path_without_gpu)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        f"+ {ROOT}/ci/baseline my-t4 --require-gpu --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=native "
        "--filter ^peak/ --repetitions 12"]


@pytest.mark.parametrize("args, words", [
    (["--bogus"], "unknown argument '--bogus'"),
    (["--name"], "--name needs a value"),
    (["--filter", "--dry-run"], "--filter needs a value"),
    (["--repetitions", "many"], "whole number"),
])
def test_script_bad_arguments(path_without_gpu, args, words):
    fake_smi(path_without_gpu, "Tesla T4")
    done = script(*args, path=path_without_gpu)
    assert done.returncode == 2 and words in done.stderr
    assert done.stdout == ""  # refused before the GPU check or any step


def test_script_help(path_without_gpu):
    done = script("--help", path=path_without_gpu)
    assert done.returncode == 0 and "colab-<gpu>" in done.stdout
