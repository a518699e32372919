"""Tests of the Colab path's parts that run without Colab: the notebook is valid nbformat 4 whose
cells compile and run no unchecked shell command, its form fields, and ci/colab-baseline: its
arguments, a missing GPU, its parts of the full profile, and the one line naming the file it
wrote (only on success). test_colab_notebook.py runs the notebook itself."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "ci" / "colab_baseline.ipynb"
SCRIPT = ROOT / "ci" / "colab-baseline"
GAPBENCH = ROOT / "build" / "default" / "gapbench"
WROTE = "ci/colab-baseline: wrote "


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
        assert all(len(line) <= 100 for line in "".join(cell["source"]).splitlines())
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None  # saved clean


def test_notebook_validates_with_nbformat_where_installed():
    nbformat = pytest.importorskip("nbformat")
    nbformat.validate(nbformat.read(str(NOTEBOOK), as_version=4))


def _code_cells(notebook):
    return ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]


def test_every_code_cell_compiles_and_runs_no_unchecked_shell_command(notebook):
    # A `!command` ignores its exit status: every command goes through run(), which checks it.
    for source in _code_cells(notebook):
        for line in source.splitlines():
            assert not line.lstrip().startswith(("!", "%")), line
        compile(source, "<cell>", "exec")


def test_notebook_checks_the_settings_then_the_gpu_then_calls_the_script(notebook):
    cells = _code_cells(notebook)
    assert "REPO_URL" in cells[0] and "TARBALL" in cells[0]
    assert "subprocess" not in cells[0] and "run(" not in cells[0]  # nothing runs before it
    gpu = next(i for i, c in enumerate(cells) if "nvidia-smi" in c)
    clone = next(i for i, c in enumerate(cells) if "git\", \"clone" in c)
    build = next(i for i, c in enumerate(cells) if '"bash", "ci/colab-baseline"' in c)
    assert 0 < gpu < clone < build  # nothing cloned, installed or built without a GPU
    assert "files.download" in cells[-1] and ".glob(" not in cells[-1]  # no "newest JSON" guess


def _form_fields(notebook) -> dict[str, str]:
    """NAME -> the text after `# @param` in the first code cell (Colab's form fields)."""
    return dict(re.findall(r'^(\w+) = "[^"]*"  # @param (.+)$', _code_cells(notebook)[0], re.M))


def test_notebook_settings_are_colab_form_fields_and_repo_url_is_empty(notebook):
    fields = _form_fields(notebook)
    assert set(fields) == {"REPO_URL", "BRANCH", "TARBALL", "NAME", "PART"}
    assert fields["REPO_URL"] == '{type:"string"}'
    assert re.search(r'^REPO_URL = ""  # @param', _code_cells(notebook)[0], re.M)
    assert "OWNER" not in re.search(r"^REPO_URL = .*$", _code_cells(notebook)[0], re.M)[0]
    assert notebook["cells"][1]["metadata"].get("cellView") == "form"


def test_notebook_offers_the_scripts_parts(notebook):
    choices = json.loads(_form_fields(notebook)["PART"])
    assert choices == [str(n) for n in parts()] + ["all"]
    for n, (_, count) in parts().items():  # the intro's table of estimates names every part
        assert re.search(rf"^\| {n} \| .*\({count}\) \|", "".join(notebook["cells"][0]["source"]),
                         re.M)


# ---- ci/colab-baseline ---------------------------------------------------------------------------

@pytest.fixture
def path_without_gpu(tmp_path):
    """A PATH with the tools the script uses and no nvidia-smi (even on a GPU machine)."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("bash", "sed", "tr", "head", "dirname", "env", "timeout"):
        os.symlink(shutil.which(tool), tools / tool)
    return tools


def fake_smi(folder: Path, name: str | None) -> None:
    """nvidia-smi that sees GPU `name`, or that cannot reach a driver (name None). Each call is
    logged in folder/nvidia-smi.log."""
    log = f'echo "$*" >> "{folder}/nvidia-smi.log"\n'
    body = (f'if [ "$1" = "--query-gpu=name" ]; then echo "{name}"; fi\n' if name else
            'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA '
            'driver." >&2\nexit 9\n')
    (folder / "nvidia-smi").write_text("#!/bin/sh\n" + log + body)
    (folder / "nvidia-smi").chmod(0o755)


def script(*args, path, cwd=None, **env):
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          env={"PATH": str(path), "HOME": "/nonexistent", **env}, cwd=cwd,
                          timeout=60)


def parts() -> dict[int, tuple[str, int]]:
    """--list-parts: part number -> (filter, number of benchmarks it says it holds)."""
    done = subprocess.run(["bash", str(SCRIPT), "--list-parts"], capture_output=True, text=True,
                          check=True)
    found = re.findall(r"^part (\d+): .*?: (\d+) benchmarks, .*; --filter '([^']+)'$",
                       done.stdout, re.M)
    assert len(found) == len(done.stdout.splitlines())
    return {int(n): (regex, int(count)) for n, count, regex in found}


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


def test_script_with_a_stuck_driver_is_stopped_at_its_limit(path_without_gpu):
    (path_without_gpu / "nvidia-smi").write_text("#!/bin/sh\nexec sleep 600\n")
    (path_without_gpu / "nvidia-smi").chmod(0o755)
    os.symlink(shutil.which("sleep"), path_without_gpu / "sleep")
    started = time.monotonic()
    done = script("--dry-run", path=path_without_gpu, GAPBENCH_SMI_TIMEOUT="1")
    assert time.monotonic() - started < 20
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "ci/colab-baseline: nvidia-smi did not answer within 1 s (GAPBENCH_SMI_TIMEOUT), stopped: "
        "the NVIDIA driver is stuck (in Colab: Runtime > Disconnect and delete runtime, then run "
        "again)\n")


@pytest.mark.parametrize("limit", ["0", "x", "1.5", "99999"])
def test_script_bad_smi_timeout(path_without_gpu, limit):
    fake_smi(path_without_gpu, "Tesla T4")
    done = script("--dry-run", path=path_without_gpu, GAPBENCH_SMI_TIMEOUT=limit)
    assert done.returncode == 2
    assert "GAPBENCH_SMI_TIMEOUT needs a whole number of seconds from 1 to 9999" in done.stderr


@pytest.mark.parametrize("gpu, name", [("Tesla T4", "colab-t4"), ("NVIDIA L4", "colab-l4"),
                                       ("NVIDIA A100-SXM4-40GB", "colab-a100-sxm4-40gb")])
def test_script_dry_run_names_the_baseline_after_the_gpu(path_without_gpu, gpu, name):
    fake_smi(path_without_gpu, gpu)
    done = script("--dry-run", path=path_without_gpu)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"ci/colab-baseline: GPU: {gpu}",
        f"+ bash {ROOT}/ci/setup --no-chromium",
        f"+ {ROOT}/ci/baseline {name} --require-gpu --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=native",
        probe_line(name)]


def probe_line(name: str, extra: str = "", root: Path = ROOT) -> str:
    """The probe's command as a dry run prints it: Colab's python3, on the GPU, full profile,
    into a folder beside the baseline."""
    return (f"+ PYTHONPATH={root}/probe python3 -m gapbench_probe --framework torch --device gpu "
            f"--profile full{extra} --out {root}/results/baselines/.probe-{name}")


def test_script_passes_its_options_on(path_without_gpu):
    fake_smi(path_without_gpu, "Tesla T4")
    done = script("--dry-run", "--skip-setup", "--name", "my-t4", "--filter=^peak/",
                  "--repetitions", "12", path=path_without_gpu)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        f"+ {ROOT}/ci/baseline my-t4 --require-gpu --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=native "
        "--filter ^peak/ --repetitions 12", probe_line("my-t4")]
    done = script("--dry-run", "--skip-setup", "--no-probe", path=path_without_gpu)
    assert done.returncode == 0 and "gapbench_probe" not in done.stdout


@pytest.mark.parametrize("extra, name", [([], "colab-t4-part2"), (["--name", "t4"], "t4-part2")])
def test_script_part_is_a_baseline_of_its_own_with_the_parts_filter(path_without_gpu, extra,
                                                                     name):
    fake_smi(path_without_gpu, "Tesla T4")
    done = script("--dry-run", "--skip-setup", "--part", "2", *extra, path=path_without_gpu)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        f"+ {ROOT}/ci/baseline {name} --require-gpu --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=native "
        f"--filter {parts()[2][0]}", probe_line(name, " --filter /op:(conv|lstm)/")]


def probe_filters() -> dict[int, str]:
    text = SCRIPT.read_text(encoding="utf-8")
    block = text[text.index("probe_filter=("):]
    return {int(n): regex for n, regex in re.findall(r"\[(\d)\]='([^']+)'",
                                                     block[:block.index(")\n")])}


def test_each_parts_probe_runs_the_ops_whose_library_twins_the_part_captures():
    """report/gapbench_report/core/framework.py's TWINS: a framework op pairs with library rows of
    these families; each part's probe filter keeps every op with a twin in the part."""
    from gapbench_report.core.framework import TWINS  # noqa: PLC0415
    filters = probe_filters()
    assert set(filters) == set(parts())
    def probe_row(op: str, family: str) -> str:
        # A threads row's twin is the probe's row of that op on a thread count.
        return f"/op:{op}/lib_threads:1/" if family == "threads" else f"/op:{op}/"
    for n, (regex, _) in parts().items():
        wanted = {probe_row(op, t.family) for op, twins in TWINS.items() for t in twins
                  if re.search(regex, f"{t.family}/")}
        missed = {row for row in wanted if not re.search(filters[n], row)}
        assert not missed, (n, missed)


def test_script_lists_four_parts_each_with_an_estimate(path_without_gpu):
    done = script("--list-parts", path=path_without_gpu)  # no GPU needed to list them
    assert done.returncode == 0 and list(parts()) == [1, 2, 3, 4]
    assert all(re.search(r"about \d+ min on a T4 \(an estimate\)", line)
               for line in done.stdout.splitlines())
    # The header's total is the parts' sum.
    assert f"({sum(c for _, c in parts().values())} benchmarks)" in SCRIPT.read_text()


def test_parts_cover_every_family_and_every_pipeline_consumer():
    families = sorted(set(re.findall(r"^GAPBENCH_FAMILY\((\w+)\)",
                                     "".join(p.read_text() for p in (ROOT / "bench").glob("*.cpp")),
                                     re.M)))
    assert len(families) >= 7
    names = [f"{f}/x/cpu/n:1/real_time" for f in families if f != "pipeline"]
    names += [f"pipeline/{mode}/{device}/produce_ms:{p}/consume_ms:{c}/depth:2/workers:1/"
              "real_time" for mode in ("none", "prefetch") for device in ("cpu", "gpu")
              for p in ("0.5", "1", "16") for c in ("1", "4", "16")]
    for name in names:
        assert sum(bool(re.search(regex, name)) for regex, _ in parts().values()) == 1, name


@pytest.mark.skipif(not GAPBENCH.is_file(), reason=f"no {GAPBENCH} built (cmake --build)")
def test_parts_split_the_full_profile_once_as_gapbench_lists_it():
    def listed(regex: str) -> list[str]:
        done = subprocess.run([str(GAPBENCH), "--profile=full", "--benchmark_list_tests=true",
                               f"--benchmark_filter={regex}"], capture_output=True, text=True,
                              check=True)
        return done.stdout.split()

    every = listed(".")
    in_parts = []
    for n, (regex, count) in parts().items():
        names = listed(regex)
        assert len(names) == count, f"part {n}: the estimate counts {count}, gapbench lists " \
                                    f"{len(names)}: update ci/colab-baseline and the notebook"
        in_parts += names
    assert sorted(in_parts) == sorted(every)  # each benchmark in exactly one part


@pytest.mark.parametrize("args, words", [
    (["--bogus"], "unknown argument '--bogus'"),
    (["--name"], "--name needs a value"),
    (["--filter", "--dry-run"], "--filter needs a value"),
    (["--repetitions", "many"], "whole number"),
    (["--part", "5"], "--part must be one of 1 2 3 4"),
    (["--part", "0"], "--part must be one of 1 2 3 4"),
    (["--part=x"], "--part must be one of 1 2 3 4"),
    (["--part", "08"], "--part must be one of 1 2 3 4"),
    (["--part", "1", "--filter", "^peak/"], "--part and --filter"),
])
def test_script_bad_arguments(path_without_gpu, args, words):
    fake_smi(path_without_gpu, "Tesla T4")
    done = script(*args, path=path_without_gpu)
    assert done.returncode == 2 and words in done.stderr
    assert done.stdout == ""  # refused before the GPU check or any step


def test_script_help(path_without_gpu):
    done = script("--help", path=path_without_gpu)
    assert done.returncode == 0 and "colab-<gpu>" in done.stdout and "--part N" in done.stdout
    assert "set -euo" not in done.stdout and "estimate" in done.stdout


# ---- ci/colab-baseline with stand-ins for ci/setup and ci/baseline ----------------------------

# Stands in for ci/baseline as its contract says: progress on stderr; on success the path of the
# JSON it wrote, and only that, on stdout (exit 0); refused: exit 1, nothing written; an error:
# exit 2. FAKE_BASELINE picks: ok, refuse, error, silent (exit 0 naming no file). It logs its
# arguments, and makes the committed CPU baseline the newest JSON, which must not matter.
FAKE_BASELINE = r"""#!/usr/bin/env bash
set -euo pipefail
out_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/results/baselines"
echo "$*" >> "$out_dir/../ci-baseline.log"
echo "ci/baseline: running the fake capture" >&2
case "${FAKE_BASELINE:-ok}" in
  refuse) echo "ci/baseline: refused, nothing written: 3 of 9 benchmarks spread too wide" >&2
          exit 1 ;;
  error) echo "ci/baseline: building (preset default) failed (exit status 1)" >&2; exit 2 ;;
  silent) exit 0 ;;
esac
printf '{"provenance": {"name": "%s", "source_commit": "%s"}}\n' \
  "$1" "${GAPBENCH_SOURCE_COMMIT:-}" > "$out_dir/$1.json"
printf '| [`%s`](%s.json) | a fake row |\n' "$1" "$1" >> "$out_dir/README.md"
touch -d 2099-01-01 "$out_dir/ci-cpu-2core.json"
echo "$out_dir/$1.json"
"""
# Stands in for gapbench-probe (python -m gapbench_probe, and the torch it imports first): logs
# its arguments, writes --out/framework-torch.json (a results file with no benchmarks: a
# stand-in); FAKE_PROBE=error exits 2 writing nothing, fail writes the file and exits 1, hang
# never ends, flood prints 6 MiB first, malformed writes a file cut short. FAKE_TORCH=hang makes
# `import torch` never end.
FAKE_PROBE = """import json, os, sys, time
args = sys.argv[1:]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
with open(os.path.join(root, "results", "probe.log"), "a") as log:
    log.write(" ".join(args) + "\\n")
how = os.environ.get("FAKE_PROBE", "ok")
if how == "error":
    sys.exit(2)
if how == "hang":
    with open(os.path.join(root, "results", "hung.pid"), "w") as f:
        f.write(str(os.getpid()))
    time.sleep(3600)
if how == "flood":
    for _ in range(6 * 1024):
        sys.stdout.write("x" * 1023 + "\\n")
out = args[args.index("--out") + 1]
os.makedirs(out, exist_ok=True)
context = {k: "1" for k in ("gapbench.schema", "gapbench.version", "gapbench.profile",
                            "gapbench.seed", "machine.id", "gpu.status")}
context["framework.name"] = "torch"
with open(os.path.join(out, "framework-torch.json"), "w") as f:
    text = json.dumps({"context": context, "benchmarks": []})
    f.write(text[:20] if how == "malformed" else text)
sys.exit(1 if how == "fail" else 0)
"""
FAKE_TORCH = """import os, time
if os.environ.get("FAKE_TORCH") == "hang":
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "results", "hung.pid"), "w") as f:
        f.write(str(os.getpid()))
    time.sleep(3600)
"""
FAKE_SETUP = """#!/usr/bin/env bash
echo "ci/setup: the fake set-up $*"
exit "${FAKE_SETUP_STATUS:-0}"
"""


def fake_tree(root: Path) -> Path:
    """A gapbench tree with the real ci/colab-baseline, stand-ins for ci/setup and ci/baseline,
    and a committed CPU baseline in results/baselines/."""
    (root / "ci").mkdir(parents=True)
    shutil.copy2(SCRIPT, root / "ci" / "colab-baseline")
    for name, text in (("baseline", FAKE_BASELINE), ("setup", FAKE_SETUP)):
        (root / "ci" / name).write_text(text)
        (root / "ci" / name).chmod(0o755)
    baselines = root / "results" / "baselines"
    baselines.mkdir(parents=True)
    (baselines / "ci-cpu-2core.json").write_text('{"provenance": {"name": "ci-cpu-2core"}}\n')
    (baselines / "README.md").write_text("# Baselines\n\n| [`ci-cpu-2core`](ci-cpu-2core.json) |"
                                         " the committed row |\n")
    (root / "CMakeLists.txt").write_text("# a stand-in\n")
    shutil.copy2(ROOT / "ci" / "report-python", root / "ci" / "report-python")
    # the report's reader, which reads the probe's file back (a copy: a tarball of the tree
    # holds no link out of it)
    shutil.copytree(ROOT / "report" / "gapbench_report", root / "report" / "gapbench_report",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for module in ("gapbench_probe", "torch"):
        (root / "probe" / module).mkdir(parents=True)
        (root / "probe" / module / "__init__.py").write_text("")
    (root / "probe" / "gapbench_probe" / "__main__.py").write_text(FAKE_PROBE)
    (root / "probe" / "torch" / "__init__.py").write_text(FAKE_TORCH)
    return root


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """fake_tree() and a PATH whose nvidia-smi sees a T4."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_smi(bin_dir, "Tesla T4")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    for variable in ("FAKE_BASELINE", "FAKE_SETUP_STATUS", "GAPBENCH_SOURCE_COMMIT",
                     "FAKE_PROBE", "FAKE_TORCH"):
        monkeypatch.delenv(variable, raising=False)
    return fake_tree(tmp_path / "gapbench")


def run_tree_script(tree: Path, *args, timeout: float | None = None):
    return subprocess.run(["bash", str(tree / "ci" / "colab-baseline"), *args],
                          capture_output=True, text=True, timeout=timeout)


def test_script_last_line_names_the_file_the_capture_wrote(tree):
    done = run_tree_script(tree, "--part", "3")
    assert done.returncode == 0, done.stderr
    written = tree / "results" / "baselines" / "colab-t4-part3.json"
    assert done.stdout.splitlines()[-1] == WROTE + str(written)
    assert [line for line in done.stdout.splitlines() if line.startswith(WROTE)] == \
        [WROTE + str(written)]
    assert json.loads(written.read_text())["provenance"]["name"] == "colab-t4-part3"
    assert "ci/setup: the fake set-up --no-chromium" in done.stdout
    assert "running the fake capture" in done.stderr  # ci/baseline's progress still shows
    # the probe's file beside the baseline, named before the last line; its folder gone
    probe = tree / "results" / "baselines" / "colab-t4-part3.framework-torch.json"
    assert done.stdout.splitlines()[-2] == f"ci/colab-baseline: probe wrote {probe}"
    assert json.loads(probe.read_text())["context"]["framework.name"] == "torch"
    assert not (tree / "results" / "baselines" / ".probe-colab-t4-part3").exists()
    assert (tree / "results" / "probe.log").read_text().splitlines() == [
        "--framework torch --device gpu --profile full "
        "--filter /op:(matmul|dense|pipeline)/|/lib_threads: "
        f"--out {tree}/results/baselines/.probe-colab-t4-part3"]


@pytest.mark.parametrize("how, kept, words", [
    ("error", False, "the probe failed (exit status 2; its output is above): the baseline has "
                     "no framework file"),
    ("fail", True, "the probe failed (exit status 1; its output is above): its file kept"),
    ("no-torch", False, "python3 has no PyTorch: no framework file beside the baseline"),
])
def test_a_failed_probe_costs_the_baseline_nothing(tree, monkeypatch, how, kept, words):
    if how == "no-torch":
        shutil.rmtree(tree / "probe" / "torch")
    else:
        monkeypatch.setenv("FAKE_PROBE", how)
    done = run_tree_script(tree)
    assert done.returncode == 0, done.stderr
    written = tree / "results" / "baselines" / "colab-t4.json"
    assert done.stdout.splitlines()[-1] == WROTE + str(written) and written.is_file()
    assert (tree / "results" / "baselines" / "colab-t4.framework-torch.json").is_file() == kept
    assert words in done.stderr


@pytest.mark.parametrize("fake, status, words", [
    ({"FAKE_BASELINE": "refuse"}, 1, "ci/baseline refused the run (its reasons are above)"),
    ({"FAKE_BASELINE": "error"}, 2, "ci/baseline failed (exit status 2"),
    ({"FAKE_BASELINE": "silent"}, 2, "named no JSON file"),
    ({"FAKE_SETUP_STATUS": "3"}, 2, "ci/setup failed (exit status 3"),
])
def test_script_failed_capture_names_no_file(tree, monkeypatch, fake, status, words):
    for variable, value in fake.items():
        monkeypatch.setenv(variable, value)
    done = run_tree_script(tree)
    assert done.returncode == status
    assert words in done.stderr.splitlines()[-1]
    assert WROTE not in done.stdout
    if "FAKE_SETUP_STATUS" in fake:
        assert not (tree / "results" / "ci-baseline.log").exists()  # no capture after it


def test_a_missing_probe_python_is_refused_before_the_capture(tree):
    done = run_tree_script(tree, "--probe-python", "/nonexistent/python")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "ci/colab-baseline: --probe-python /nonexistent/python: no such program; name a Python "
        "that has PyTorch, or give --no-probe (nothing was captured)")
    assert not (tree / "results" / "ci-baseline.log").exists()  # no capture started
    assert WROTE not in done.stdout


@pytest.mark.parametrize("fake, words", [
    ({"FAKE_TORCH": "hang"}, "python3 did not import torch within 2 s, stopped: no framework "
                             "file beside the baseline"),
    ({"FAKE_PROBE": "hang"}, "the probe did not finish within 2 s (--probe-limit): stopped: the "
                             "baseline has no framework file"),
])
def test_a_probe_python_that_hangs_is_stopped_at_its_limit(tree, monkeypatch, fake, words):
    for variable, value in fake.items():
        monkeypatch.setenv(variable, value)
    started = time.monotonic()
    done = run_tree_script(tree, "--probe-limit", "2", timeout=60)
    assert time.monotonic() - started < 30
    assert done.returncode == 0, done.stderr
    assert words in done.stderr
    written = tree / "results" / "baselines" / "colab-t4.json"
    assert done.stdout.splitlines()[-1] == WROTE + str(written)
    assert not (tree / "results" / "baselines" / "colab-t4.framework-torch.json").exists()
    hung = int((tree / "results" / "hung.pid").read_text())
    with pytest.raises(ProcessLookupError):  # stopped, not left running
        os.kill(hung, 0)


def test_a_stopped_script_stops_the_probe_with_it(tree, monkeypatch):
    monkeypatch.setenv("FAKE_PROBE", "hang")
    script = subprocess.Popen(["bash", str(tree / "ci" / "colab-baseline")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid_file = tree / "results" / "hung.pid"
    deadline = time.monotonic() + 30
    while not pid_file.is_file() or not pid_file.read_text():
        assert time.monotonic() < deadline and script.poll() is None
        time.sleep(0.1)
    script.terminate()
    assert script.wait(timeout=30) == 143
    hung = int(pid_file.read_text())
    deadline = time.monotonic() + 15  # timeout(1) passes SIGTERM on to the probe's group
    while time.monotonic() < deadline:
        try:
            os.kill(hung, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the probe outlived the script")


def test_a_probe_that_floods_its_output_is_shown_up_to_a_bound(tree, monkeypatch):
    monkeypatch.setenv("FAKE_PROBE", "flood")
    done = run_tree_script(tree, timeout=120)
    assert done.returncode == 0, done.stderr
    assert 4 << 20 <= len(done.stderr) < (4 << 20) + 4096  # 6 MiB printed
    assert "ci/colab-baseline: more than 4 MiB of output; the rest is not shown" in done.stderr
    # the probe ran on to its end: its file is beside the baseline
    assert (tree / "results" / "baselines" / "colab-t4.framework-torch.json").is_file()


def test_a_malformed_probe_file_is_not_put_beside_the_baseline(tree, monkeypatch):
    monkeypatch.setenv("FAKE_PROBE", "malformed")
    done = run_tree_script(tree)
    assert done.returncode == 0, done.stderr
    assert not (tree / "results" / "baselines" / "colab-t4.framework-torch.json").exists()
    left = tree / "results" / "baselines" / ".probe-colab-t4"
    assert (left / "framework-torch.json").is_file()
    assert (f"ci/colab-baseline: the probe's file is not one the report can read "
            f"({left}/framework-torch.json: not valid JSON (truncated?)") in done.stderr
    assert "Traceback" not in done.stderr
    assert f"left in {left}, not put beside the baseline" in done.stderr
    assert done.stdout.splitlines()[-1] == WROTE + str(tree / "results" / "baselines" /
                                                      "colab-t4.json")


@pytest.mark.parametrize("limit", ["0", "x", "1.5", "99999999"])
def test_script_bad_probe_limit(path_without_gpu, limit):
    done = script("--probe-limit", limit, path=path_without_gpu)
    assert done.returncode == 2 and "--probe-limit needs a whole number of seconds" in done.stderr
