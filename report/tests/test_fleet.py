"""gapbench-report fleet and gapbench-ci fleet submit|status, without a Slurm cluster (the real
one-node cluster is smoke_fleet.py, ctest's smoke.fleet_slurm).

The outlier logic is judged on real runs of one machine (data/fleet/this-machine/, made by
fleet_real_runs.py; its README.md says how): one capped to SSE4.1 and one run while other
processes loaded the cores must each be found first and blamed on the fact that made them slow.
The committed CPU baseline and the H200's files are hardware of their own: shown, never judged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gapbench_report.fleet import judge as fleet_judge
from gapbench_report.fleet import page as fleet_page
from gapbench_report.inputs.fleet import DIGEST, node_folders, read_fleet

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = HERE / "data" / "fleet"
MACHINE = DATA / "this-machine"
BASELINE = ROOT / "results" / "baselines" / "ci-cpu-2core.json"
FAKES = DATA / "fakes"  # stand-ins for gapbench and Slurm's commands (fault tests)
NORMAL = ["normal-1", "normal-2", "normal-3", "normal-4"]


def make_fleet(root: Path, runs: list[str], others: bool = True) -> Path:
    """A fleet folder of this machine's runs named, with the H200 and the CPU baseline."""
    for run in runs:
        shutil.copytree(MACHINE / run, root / run)
    if others:
        shutil.copytree(DATA / "h200", root / "h200")
        (root / "ci-cpu-2core").mkdir()
        shutil.copy(BASELINE, root / "ci-cpu-2core" / "results.json")
    return root


def judged(root: Path) -> fleet_judge.Fleet:
    return fleet_judge.build_fleet(root, read_fleet(node_folders(root)))


def report(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    return subprocess.run([sys.executable, "-m", "gapbench_report", "fleet", *map(str, args)],
                          capture_output=True, text=True, env=env, check=False, timeout=120)


def ci(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    # gapbench_ci is ci/'s package: the fleet's Slurm half, tested here beside the report's.
    path = os.pathsep.join([str(ROOT / "ci"), str(HERE.parent)])
    env = {**os.environ, "PYTHONPATH": path, **(env or {})}
    return subprocess.run([sys.executable, "-m", "gapbench_ci", "fleet", *map(str, args)],
                          capture_output=True, text=True, env=env, check=False, timeout=120)


# ---- the outliers, on real runs -----------------------------------------------------------------

def test_sse41_run_is_found_first_and_blamed_on_the_cap(tmp_path):
    f = judged(make_fleet(tmp_path, [*NORMAL, "sse41"]))
    first = f.outliers[0]
    assert first.node.label == "sse41", [fleet_page.headline(o) for o in f.outliers]
    assert first.differences[0].key == "onednn.isa_cap"
    assert first.differences[0].value == "SSE41"
    assert "onednn.isa_cap` SSE41" in fleet_page.headline(first)
    assert first.cost > 1.1 and all(first.cost > o.cost for o in f.outliers[1:])


def test_loaded_run_is_found_first_and_blamed_on_the_load(tmp_path):
    f = judged(make_fleet(tmp_path, [*NORMAL, "loaded"]))
    first = f.outliers[0]
    assert first.node.label == "loaded", [fleet_page.headline(o) for o in f.outliers]
    assert first.differences[0].key == "load_avg", fleet_page.headline(first)
    assert "1-minute load average: `load_avg` 23.42" in fleet_page.headline(first)


def test_both_slow_runs_lead_the_ranking_each_with_its_cause(tmp_path):
    f = judged(make_fleet(tmp_path, [*NORMAL, "sse41", "loaded"]))
    top = {o.node.label: o.differences[0].key for o in f.outliers[:2]}
    assert top == {"sse41": "onednn.isa_cap", "loaded": "load_avg"}, [fleet_page.headline(o)
                                                                 for o in f.outliers]


def test_other_hardware_are_groups_of_their_own_never_outliers(tmp_path):
    f = judged(make_fleet(tmp_path, [*NORMAL, "sse41", "loaded"]))
    alone = {g.nodes[0].label: g for g in f.groups if len(g.nodes) == 1}
    assert set(alone) == {"h200", "ci-cpu-2core"}
    assert "NVIDIA H200 140 GiB · PCIe Gen5 ×16" in alone["h200"].label
    for g in alone.values():
        assert not g.outliers and "a group of one" in g.notes[0]
    assert {o.node.label for o in f.outliers} <= {*NORMAL, "sse41", "loaded"}
    # Five folders of one machine.id: one machine with five runs, never five machines.
    assert f.machines == 4  # this machine, this machine capped (its machine.id says so), 2 more
    assert "1 machine(s) ran more than once" in " ".join(f.groups[0].notes)


def test_a_link_trained_lower_is_named_with_doctors_facts(tmp_path):
    """Four H200 nodes from the real H200 files; one's link trained at Gen3 x8 and its times are
    3x: the slower node is named, and the link is the reason."""
    for i in range(4):
        folder = tmp_path / f"gpu{i}"
        shutil.copytree(DATA / "h200", folder)
        if i == 2:
            path = folder / "pipeline.json"
            data = json.loads(path.read_text())
            data["context"].update({"pcie.gen_current": "3", "pcie.width_current": "8"})
            for b in data["benchmarks"]:
                if b.get("aggregate_name") != "cv":
                    b["real_time"] *= 3
            path.write_text(json.dumps(data))
    f = judged(tmp_path)
    assert [o.node.label for o in f.outliers] == ["gpu2"]
    assert [d.key for d in f.outliers[0].differences] == ["pcie.gen_current",
                                                          "pcie.width_current"]
    assert "`pcie.gen_current` 3; the others: 5 (median)" in fleet_page.headline(f.outliers[0])


def test_page_and_summary_give_the_verdict_first(tmp_path):
    root = make_fleet(tmp_path / "fleet", [*NORMAL, "sse41"])
    done = report(root, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    summary = (tmp_path / "out" / "summary.md").read_text()
    verdict = [line for line in summary.splitlines() if line.startswith("**")][0]
    assert verdict.startswith("**Slowest for this work: sse41:"), verdict
    page = (tmp_path / "out" / "index.html").read_text()
    assert page.index('id="verdict"') < page.index('id="outliers"') < page.index('id="groups"')
    assert "a group of one: it has no median" in page
    assert "onednn.isa_cap" in page and "cpu_library_capped" in page  # doctor's finding


def test_filter_compares_only_the_work_asked_for(tmp_path):
    root = make_fleet(tmp_path, [*NORMAL, "sse41"], others=False)
    f = fleet_judge.build_fleet(root, read_fleet(node_folders(root)), __import__("re").compile(
        "^peak/memcpy/"))
    assert all(s.name.startswith("peak/memcpy/") for o in f.outliers for s in o.slow)
    assert "only the benchmarks matching" in f.notes[0]


def test_other_profiles_are_compared_on_shared_names_and_the_page_says_so(tmp_path):
    root = make_fleet(tmp_path, [*NORMAL, "sse41"], others=False)
    for path in (root / "normal-3").glob("conv-*.json"):  # a run of another profile
        data = json.loads(path.read_text())
        data["context"]["gapbench.profile"] = "full"
        path.write_text(json.dumps(data))
    (root / "normal-3" / "conv-naive.json").unlink()  # and without the naive convolutions
    f = judged(root)
    assert "compared only on the benchmark names they share" in " ".join(f.groups[0].notes)
    assert f.outliers[0].node.label == "sse41"


# ---- faults -------------------------------------------------------------------------------------

def test_crashed_truncated_and_empty_nodes_are_listed_and_the_rest_renders(tmp_path):
    root = make_fleet(tmp_path / "fleet", [*NORMAL, "sse41"])
    crashed = root / "crashed"
    crashed.mkdir()
    shutil.copy(MACHINE / "normal-1" / "doctor.json", crashed)
    (crashed / "gapbench.log").write_text("conv/naive/cpu/n:1 ...\nSegmentation fault\n")
    (crashed / "task.json").write_text(json.dumps({"exit_status": 139}))
    truncated = root / "truncated"
    shutil.copytree(MACHINE / "normal-2", truncated)
    text = (truncated / "conv-onednn.json").read_text()
    (truncated / "conv-onednn.json").write_text(text[: len(text) // 2])
    (root / "empty").mkdir()
    done = report(root, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| crashed | gapbench killed by SIGSEGV (exit status 139); its log ends: " \
           "Segmentation fault |" in summary
    assert "| truncated | conv-onednn.json: not valid JSON (truncated?)" in summary
    assert "| empty | empty: no results file, no doctor.json (the node wrote nothing) |" in summary
    assert "Slowest for this work: sse41" in summary


@pytest.mark.parametrize("kind", ["missing", "file", "empty", "loose files"])
def test_a_folder_that_is_no_fleet_is_one_line_and_exit_2(tmp_path, kind):
    target = tmp_path / "dir"
    if kind == "file":
        target.write_text("{}")
    elif kind == "empty":
        target.mkdir()
    elif kind == "loose files":
        target.mkdir()
        shutil.copy(BASELINE, target / "results.json")
    done = report(target, "--out", tmp_path / "out")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("gapbench-report fleet: ")
    assert not (tmp_path / "out").exists()


def test_the_report_folder_inside_the_fleet_is_no_node(tmp_path):
    root = make_fleet(tmp_path, [*NORMAL], others=False)
    assert report(root, "--out", root / "report").returncode == 0
    done = report(root, "--out", root / "report")
    assert done.returncode == 0 and "problems" not in (root / "report" / "summary.md").read_text()


# ---- submit and status without a cluster ---------------------------------------------------------

def test_dry_run_prints_the_script_and_submits_nothing(tmp_path):
    out = tmp_path / "fleet"
    done = ci("submit", "--out", out, "--nodes", "4", "--partition", "gpu", "--gpus-per-node",
              "1", "--families", "transfer,conv", "--dry-run")
    assert done.returncode == 0, done.stderr
    script = done.stdout
    for line in ("#SBATCH --nodes=4", "#SBATCH --ntasks-per-node=1", "#SBATCH --time=30",
                 "#SBATCH --partition=gpu", "#SBATCH --gpus-per-node=1",
                 f"#SBATCH --output={out.resolve()}/slurm-%j.out",
                 'srun --kill-on-bad-exit=0 bash -c "$task"'):
        assert line in script, line
    assert "export GAPBENCH_FLEET_SHARED=0" in script
    assert not out.exists()
    full = ci("submit", "--out", out, "--profile", "full", "--tasks-per-node", "2", "--dry-run")
    assert "#SBATCH --time=240" in full.stdout and "GAPBENCH_FLEET_SHARED=1" in full.stdout


def test_a_dry_run_with_a_node_list_leaves_the_count_to_slurm(tmp_path):
    done = ci("submit", "--out", tmp_path / "fleet", "--nodelist", "gpu[1-3],cpu7", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "#SBATCH --nodelist=gpu[1-3],cpu7" in done.stdout and "--nodes=" not in done.stdout


def test_the_task_script_runs_and_writes_its_folder(tmp_path):
    """The task part of the script, run as srun would run it, with a stand-in gapbench that
    writes what the real one writes: every file lands whole, task.json last."""
    fake = tmp_path / "gapbench"
    fake.write_text("#!/bin/bash\nif [ \"$1\" = doctor ]; then echo '{\"facts\": {}}'; exit 0; "
                    "fi\nfor a; do case $a in --benchmark_out=*) echo '{}' > \"${a#*=}\";; "
                    "--benchmark_list_tests=true) printf '%s/x/cpu/n:1\\n' peak conv lstm; "
                    "exit 0;; esac; done\nexit 1\n")
    fake.chmod(0o755)
    script = ci("submit", "--out", tmp_path / "fleet", "--families", "conv,lstm", "--gapbench",
                fake, "--dry-run").stdout
    task = script.split("task=$(cat <<'TASK'\n")[1].split("\nTASK\n")[0]
    env = {**os.environ, "SLURM_PROCID": "0", "SLURM_JOB_ID": "7"}
    for line in script.splitlines():
        if line.startswith("export "):
            key, value = line[len("export "):].split("=", 1)
            env[key] = value.strip("'")
    done = subprocess.run(["bash", "-c", task], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1  # the stand-in's runs exit 1: the task says so
    host = subprocess.run(["hostname", "-s"], capture_output=True, text=True,
                          timeout=60).stdout.strip()
    folder = tmp_path / "fleet" / host
    assert sorted(p.name for p in folder.iterdir()) == [DIGEST, "conv.json", "doctor.json",
                                                        "gapbench.log", "lstm.json", "peak.json",
                                                        "task.json"]
    assert json.loads((folder / "task.json").read_text())["exit_status"] == 1
    # peak/ once, first; each family judged against it.
    log = (folder / "gapbench.log").read_text()
    assert "peak: --benchmark_filter=^peak/ \n" in log
    assert "lstm: --benchmark_filter=^lstm/ --peak=peak.json" in log
    assert log.index("peak: --benchmark_filter") < log.index("conv: --benchmark_filter")


def test_sbatch_missing_is_exit_2_and_leaves_nothing(tmp_path):
    out = tmp_path / "fleet"
    bin_ = tmp_path / "bin"  # a PATH with grep (the fake gapbench's) and no sbatch
    bin_.mkdir()
    (bin_ / "grep").symlink_to(shutil.which("grep"))
    done = ci("submit", "--out", out, "--gapbench", FAKES / "gapbench", env={"PATH": str(bin_)})
    assert done.returncode == 2 and "sbatch not found" in done.stderr, done.stderr
    assert not out.exists()


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="skipped: Slurm's sbatch is not "
                    "installed (bash ci/setup --fleet)")
def test_sbatch_refusing_gives_slurms_message_and_leaves_nothing(tmp_path):
    out = tmp_path / "fleet"
    out.mkdir()  # an empty folder of the user's stays, empty
    conf = tmp_path / "slurm.conf"
    conf.write_text("")  # refused at once (a missing one is retried for a minute)
    done = ci("submit", "--out", out, "--gapbench", FAKES / "gapbench",
              env={"SLURM_CONF": str(conf)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("gapbench-ci fleet submit: sbatch refused the job: ")
    assert "Unable to process configuration file" in done.stderr
    assert out.is_dir() and not any(out.iterdir())


def test_a_second_submit_into_the_same_folder_is_refused(tmp_path):
    out = tmp_path / "fleet"
    out.mkdir()
    (out / "fleet.json").write_text('{"job": "1", "tasks": 1}')
    done = ci("submit", "--out", out, "--gapbench", FAKES / "gapbench")
    assert done.returncode == 2 and "already exists" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["fleet.json"]


def test_status_of_a_folder_that_is_no_fleet(tmp_path):
    done = ci("status", tmp_path)
    assert done.returncode == 2 and "not a fleet folder (no fleet.json" in done.stderr
