"""ci/colab_baseline.ipynb run end to end with nbclient, Colab's parts replaced: nvidia-smi by a
script that sees a T4 (or no GPU), google.colab.files by a module that records each download,
the repository by a local git repository (or a `git archive` tarball of it) holding the real
ci/colab-baseline with stand-ins for ci/setup and ci/baseline (test_colab.fake_tree)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.test_colab import NOTEBOOK, fake_smi, fake_tree

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (the test extra)")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (the test extra)")
pytest.importorskip("ipykernel", reason="ipykernel is not installed (the test extra)")

FAKE_FILES = '''"""Stands in for google.colab.files: logs each download in $FAKE_COLAB_DOWNLOADS."""
import os


def download(filename):
    if not os.path.exists(filename):
        raise FileNotFoundError(f"Cannot find file: {filename}")
    with open(os.environ["FAKE_COLAB_DOWNLOADS"], "a", encoding="utf-8") as f:
        f.write(os.path.abspath(filename) + "\\n")
'''
GIT = ["git", "-c", "user.name=gapbench test", "-c", "user.email=test@example.invalid",
       "-c", "commit.gpgsign=false"]


@dataclass
class Colab:
    tmp: Path
    bin: Path  # on PATH first: nvidia-smi
    content: Path  # the kernel's working directory, as /content is on Colab
    upstream: Path  # the repository to clone
    downloads_log: Path

    @property
    def downloads(self) -> list[Path]:
        text = self.downloads_log.read_text() if self.downloads_log.exists() else ""
        return [Path(line).resolve() for line in text.splitlines()]

    @property
    def smi_calls(self) -> list[str]:
        log = self.bin / "nvidia-smi.log"
        return log.read_text().splitlines() if log.exists() else []

    def execute(self, **settings: str):
        """Runs the notebook with these form fields changed; (notebook, CellExecutionError or
        None)."""
        nb = nbformat.read(str(NOTEBOOK), as_version=4)
        source = nb.cells[1].source
        for name, value in settings.items():
            source, count = re.subn(rf'^{name} = "[^"]*"', f"{name} = {json.dumps(value)}",
                                    source, flags=re.M)
            assert count == 1, name
        nb.cells[1].source = source
        client = nbclient.NotebookClient(nb, timeout=60, kernel_name="python3",
                                         resources={"metadata": {"path": str(self.content)}})
        try:
            client.execute()
        except nbclient.exceptions.CellExecutionError as e:
            return nb, e
        return nb, None


@pytest.fixture
def colab(tmp_path, monkeypatch):
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.skip("no python3 Jupyter kernel (ipykernel)")
    bin_dir, fake_colab, content = tmp_path / "bin", tmp_path / "fake-colab", tmp_path / "content"
    for folder in (bin_dir, fake_colab / "google" / "colab", content):
        folder.mkdir(parents=True)
    fake_smi(bin_dir, "Tesla T4")
    (fake_colab / "google" / "colab" / "__init__.py").write_text("")
    (fake_colab / "google" / "colab" / "files.py").write_text(FAKE_FILES)

    upstream = fake_tree(tmp_path / "upstream")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    subprocess.run(["git", "init", "-q", "-b", "main", str(upstream)], check=True)
    subprocess.run([*GIT, "-C", str(upstream), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(upstream), "commit", "-q", "-m", "a gapbench stand-in"],
                   check=True)

    downloads = tmp_path / "downloads.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(fake_colab)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    monkeypatch.setenv("FAKE_COLAB_DOWNLOADS", str(downloads))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter-runtime"))
    for variable in ("FAKE_BASELINE", "FAKE_SETUP_STATUS", "GAPBENCH_SOURCE_COMMIT",
                     "FAKE_PROBE"):
        monkeypatch.delenv(variable, raising=False)
    return Colab(tmp_path, bin_dir, content, upstream, downloads)


def failed_cell(nb) -> str | None:
    return next((c.id for c in nb.cells if c.cell_type == "code"
                 and any(o.output_type == "error" for o in c.outputs)), None)


def executed(nb) -> list[str]:
    return [c.id for c in nb.cells if c.cell_type == "code" and c.execution_count is not None]


def baselines(colab: Colab) -> Path:
    return colab.content / "gapbench" / "results" / "baselines"


@pytest.mark.parametrize("settings", [{}, {"REPO_URL": "https://github.com/OWNER/gapbench.git"},
                                      {"REPO_URL": "   "}],
                         ids=["as-saved", "placeholder", "blank"])
def test_no_repo_url_is_refused_before_anything_runs(colab, settings):
    nb, error = colab.execute(**settings)
    assert error is not None and error.ename == "SystemExit"
    assert "paste the URL of your gapbench repository" in error.evalue
    assert "\n" not in error.evalue  # one line
    assert failed_cell(nb) == "settings" and executed(nb) == ["settings"]
    assert colab.smi_calls == [] and not (colab.content / "gapbench").exists()
    assert colab.downloads == []


def test_no_gpu_stops_the_notebook_before_the_clone(colab):
    fake_smi(colab.bin, None)
    nb, error = colab.execute(REPO_URL=str(colab.upstream))
    assert error is not None and error.ename == "SystemExit"
    assert "nvidia-smi sees no GPU (NVIDIA-SMI has failed" in error.evalue
    assert "Runtime > Change runtime type > T4 GPU" in error.evalue
    assert failed_cell(nb) == "gpu-check" and executed(nb) == ["settings", "gpu-check"]
    assert not (colab.content / "gapbench").exists() and colab.downloads == []


def test_a_capture_downloads_exactly_the_file_it_wrote(colab):
    nb, error = colab.execute(REPO_URL=str(colab.upstream), PART="1")
    assert error is None, error
    written = baselines(colab) / "colab-t4-part1.json"
    probe = baselines(colab) / "colab-t4-part1.framework-torch.json"  # the probe's, beside it
    assert colab.downloads == [written.resolve(), probe.resolve(),
                               (baselines(colab) / "README.md").resolve()]
    # The committed CPU baseline is the newest JSON there: "the newest" would have been wrong.
    newest = max(baselines(colab).glob("*.json"), key=lambda p: p.stat().st_mtime)
    assert newest.name == "ci-cpu-2core.json"
    assert "| [`colab-t4-part1`](colab-t4-part1.json) |" in \
        (baselines(colab) / "README.md").read_text()
    log = (baselines(colab).parent / "ci-baseline.log").read_text().splitlines()
    assert log == ["colab-t4-part1 --require-gpu --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=native "
                   "--filter ^(peak|preprocess|transfer)/"]
    assert executed(nb) == ["settings", "gpu-check", "source", "capture", "download"]


@pytest.mark.parametrize("fake, status", [
    ({"FAKE_BASELINE": "refuse"}, 1),  # noisy benchmarks: ci/baseline wrote nothing
    ({"FAKE_BASELINE": "silent"}, 2),  # succeeded without naming a file
    ({"FAKE_SETUP_STATUS": "100"}, 2),  # apt failed
], ids=["refused", "names-no-file", "setup-failed"])
def test_a_failed_capture_downloads_nothing_and_stops_the_notebook(colab, monkeypatch, fake,
                                                                   status):
    for variable, value in fake.items():
        monkeypatch.setenv(variable, value)
    nb, error = colab.execute(REPO_URL=str(colab.upstream), NAME="my-t4", PART="4")
    assert error is not None and error.ename == "SystemExit"
    assert error.evalue == f"The capture failed (exit status {status}); its output is above."
    assert failed_cell(nb) == "capture" and "download" not in executed(nb)
    assert colab.downloads == []
    assert not (baselines(colab) / "my-t4-part4.json").exists()


def test_a_failed_probe_still_downloads_the_baseline(colab, monkeypatch):
    monkeypatch.setenv("FAKE_PROBE", "error")
    nb, error = colab.execute(REPO_URL=str(colab.upstream), PART="2")
    assert error is None, error
    written = baselines(colab) / "colab-t4-part2.json"
    assert colab.downloads == [written.resolve(), (baselines(colab) / "README.md").resolve()]
    assert executed(nb) == ["settings", "gpu-check", "source", "capture", "download"]


def test_a_failed_clone_stops_the_notebook(colab):
    nb, error = colab.execute(REPO_URL=str(colab.tmp / "no-such-repository"))
    assert error is not None and error.ename == "SystemExit"
    assert re.fullmatch(r"git clone .*no-such-repository failed \(exit status 128\); its output "
                        r"is above\.", error.evalue)
    assert failed_cell(nb) == "source" and colab.downloads == []


def test_a_tarball_is_captured_whole_with_its_commit(colab):
    tarball = colab.tmp / "gapbench.tar.gz"
    subprocess.run(["git", "-C", str(colab.upstream), "archive", "--format=tar.gz",
                    "--prefix=gapbench/", "-o", str(tarball), "HEAD"], check=True)
    commit = subprocess.run(["git", "-C", str(colab.upstream), "rev-parse", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()
    nb, error = colab.execute(TARBALL=str(tarball), PART="all")
    assert error is None, error
    here = colab.content / "gapbench" / "gapbench" / "results" / "baselines"  # its own folder
    written = here / "colab-t4.json"
    probe = here / "colab-t4.framework-torch.json"
    assert colab.downloads == [written.resolve(), probe.resolve(), (here / "README.md").resolve()]
    assert json.loads(written.read_text())["provenance"]["source_commit"] == commit
    assert (here.parent / "ci-baseline.log").read_text().splitlines() == [
        "colab-t4 --require-gpu --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=native"]


def test_a_tarball_without_a_commit_is_refused(colab):
    tarball = colab.tmp / "plain.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(colab.upstream / "ci", arcname="ci")
    nb, error = colab.execute(TARBALL=str(tarball))
    assert error is not None and error.ename == "SystemExit" and "names no commit" in error.evalue
    assert failed_cell(nb) == "source" and colab.downloads == []
