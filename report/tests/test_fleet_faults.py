"""The fleet's faults, as docs/faults.md's section "The fleet" lists them: `gapbench-ci fleet
submit` and `fleet status` given bad arguments or a broken Slurm, and `gapbench-report fleet`
and `fleet status` given a node whose files are not what a task writes.

Each case is a row of a table below: the command's arguments, or the file a node holds, and the
words its one line (or its node's problem) must hold. Slurm's commands and gapbench are played by
the scripts in data/fleet/fakes/ (each says what it does), put first on PATH as `sbatch`,
`squeue` and `scontrol`; the nodes are copies of real runs (data/fleet/this-machine/).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from gapbench_ci import fleet_cluster, fleet_status

from gapbench_report.fleet import command as fleet_report
from gapbench_report.inputs import fleet as fleet_inputs
from gapbench_report.inputs.fleet import DIGEST, read_node

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "fleet"
FAKES = DATA / "fakes"
MACHINE = DATA / "this-machine"
GOOD = ["normal-2", "normal-3", "normal-4", "sse41"]  # the rest of the fleet, which must render
# gapbench_ci (the fleet's Slurm half) is ci/'s package; the report is report/'s.
PYTHONPATH = os.pathsep.join([str(HERE.parents[1] / "ci"), str(HERE.parent)])
ENV = {**os.environ, "PYTHONPATH": PYTHONPATH, "GAPBENCH_SLURM_TIMEOUT": "1"}


def slurm(tmp_path: Path, **fakes: str) -> dict[str, str]:
    """An environment whose PATH finds these fakes first, by their Slurm names:
    slurm(tmp_path, sbatch="sbatch-hangs")."""
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    for name, fake in fakes.items():
        target = bin_ / name
        target.unlink(missing_ok=True)
        target.symlink_to(FAKES / fake)
    return {**ENV, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}",
            "FAKE_SBATCH_GOT": str(tmp_path / "sbatch-got.sh")}


def run(env: dict[str, str], *args: object, module: str = "gapbench_ci",
        timeout: float = 60) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", module, "fleet", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout,
                          check=False)


def one_line(done: subprocess.CompletedProcess, status: int, prog: str) -> str:
    """The command's one line on stderr, after checking its exit status and that it is one."""
    lines = done.stderr.splitlines()
    assert done.returncode == status and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{prog}: ") and "internal error" not in lines[0], lines[0]
    return lines[0]


# ---- submit: every argument checked before anything is made or submitted ----------------------

SUBMIT = "gapbench-ci fleet submit"
BAD_ARGUMENTS = [
    (["--families", "trasnfer,conv"], "--families: unknown family 'trasnfer' (did you mean "
                                      "transfer?); the families: preprocess, conv, lstm"),
    (["--families", "conv,conv"], "--families names conv twice"),
    (["--families", " , "], "--families: give family names separated by commas"),
    (["--filter", "("], "refuses the run: --benchmark_filter '(' cannot be used as a regular "
                        "expression"),
    (["--filter", "^nothing/"], "refuses the run: the filter '^nothing/' matches no benchmark"),
    (["--filter", ""], "--filter '': give a regular expression"),
    (["--job-name", "x\n#SBATCH --wrap=rm"], "--job-name 'x\\n#SBATCH --wrap=rm': holds a "
                                             "control character"),
    (["--job-name", "red\x1b[31m"], "--job-name 'red\\x1b[31m': holds a control character"),
    (["--job-name", " "], "--job-name: give a name"),
    (["--out", "fleet\nx"], "--out 'fleet\\nx': holds a control character"),
    (["--partition", "gpu debug"], "--partition 'gpu debug': not as Slurm writes it"),
    (["--partition", "gpu\r"], "--partition 'gpu\\r': holds a control character"),
    (["--gpus-per-node", "0"], "--gpus-per-node '0': not as Slurm writes it"),
    (["--gpus-per-node", "a100:x"], "--gpus-per-node 'a100:x': not as Slurm writes it"),
    (["--nodelist", "node[1-"], "--nodelist 'node[1-': not as Slurm writes it"),
    (["--nodelist", "n1;reboot"], "--nodelist 'n1;reboot': not as Slurm writes it"),
    (["--time", "0"], "--time '0': no time at all"),
    (["--time", "abc"], "--time 'abc': give minutes, or Slurm's D-HH:MM:SS"),
    (["--time", "1:2:3:4"], "--time '1:2:3:4': give minutes"),
    (["--time=-5"], "--time '-5': give minutes"),
    (["--time", "999999999"], "--time '999999999': more than a year"),
    (["--time", "\u0661\u0660"], "--time '\u0661\u0660': give minutes"),  # Arabic-Indic 10
    (["--nodes", "0"], "--nodes 0: from 1 to 100000"),
    (["--nodes", "10000000000000000000000"], "--nodes 10000000000000000000000: from 1 to"),
    (["--nodes", "x"], "argument --nodes: invalid int value: 'x'"),
    (["--tasks-per-node", "0"], "--tasks-per-node 0: from 1 to 1024"),
    (["--nodes", "2", "--nodelist", "n1"], "not allowed with argument"),
]


@pytest.mark.parametrize("args, words", BAD_ARGUMENTS, ids=[" ".join(a) for a, _ in
                                                           BAD_ARGUMENTS])
def test_submit_refuses_bad_arguments_before_anything_is_made(tmp_path, args, words):
    env = slurm(tmp_path, sbatch="sbatch-accepts", scontrol="scontrol-done")
    done = run(env, "submit", "--out", tmp_path / "fleet", "--gapbench", FAKES / "gapbench",
               *args)
    assert words in one_line(done, 2, SUBMIT)
    assert not (tmp_path / "fleet").exists()
    assert not (tmp_path / "sbatch-got.sh").exists(), "sbatch was called"


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan", "inf", "7200"])
def test_a_bad_slurm_timeout_names_the_variable(tmp_path, value):
    env = {**slurm(tmp_path, sbatch="sbatch-accepts"), "GAPBENCH_SLURM_TIMEOUT": value}
    done = run(env, "submit", "--out", tmp_path / "fleet", "--gapbench", FAKES / "gapbench")
    assert (f"environment variable GAPBENCH_SLURM_TIMEOUT needs a number of seconds above 0 and "
            f"at most 3600, got {value!r}") in one_line(done, 2, SUBMIT)
    assert not (tmp_path / "fleet").exists()


def test_names_are_quoted_as_sbatch_reads_its_directives(tmp_path):
    env = slurm(tmp_path, sbatch="sbatch-accepts")
    name = 'my "fleet" #1 \\ of 2'
    done = run(env, "submit", "--out", tmp_path / "fleet dir #2", "--gapbench",
               FAKES / "gapbench", "--job-name", name, "--families", "conv")
    assert done.returncode == 0, done.stderr
    script = (tmp_path / "sbatch-got.sh").read_text()
    assert '#SBATCH --job-name="my \\"fleet\\" #1 \\\\ of 2"' in script
    assert f'#SBATCH --output="{tmp_path}/fleet dir #2/slurm-%j.out"' in script
    assert script == (tmp_path / "fleet dir #2" / "fleet.sbatch").read_text()


# ---- submit: a Slurm that hangs, answers nothing or garbage, refuses; Ctrl-C ------------------

SBATCH_FAULTS = [
    ("sbatch-hangs", "sbatch did not answer in 1 s; is slurmctld up? (scontrol ping says); it "
                     "may have queued the job all the same: squeue --me --name=gapbench-fleet"),
    ("sbatch-says-nothing", "sbatch exited 0 but answered no job id ('')"),
    ("sbatch-garbage", "sbatch exited 0 but answered no job id ('Submitted batch job (null)')"),
    ("sbatch-refuses", "sbatch refused the job: sbatch: error: Batch job submission failed: "
                       "Invalid partition name specified"),
]


@pytest.mark.parametrize("fake, words", SBATCH_FAULTS, ids=[f for f, _ in SBATCH_FAULTS])
@pytest.mark.parametrize("out_there", [False, True], ids=["new-folder", "empty-folder"])
def test_a_failed_submission_leaves_nothing_and_the_retry_works(tmp_path, fake, words,
                                                                  out_there):
    out = tmp_path / "fleet" if out_there else tmp_path / "new" / "fleet"
    if out_there:
        out.mkdir()  # the user's empty folder stays, empty
    started = time.monotonic()
    done = run(slurm(tmp_path, sbatch=fake), "submit", "--out", out, "--gapbench",
               FAKES / "gapbench")
    assert words in one_line(done, 2, SUBMIT)
    assert time.monotonic() - started < 30
    assert out.exists() == out_there and (not out_there or not any(out.iterdir()))
    assert out_there or not out.parent.exists()  # every folder it made is gone
    retry = run(slurm(tmp_path, sbatch="sbatch-accepts"), "submit", "--out", out, "--gapbench",
                FAKES / "gapbench")
    assert retry.returncode == 0 and "submitted job 4242" in retry.stdout, retry.stderr
    assert json.loads((out / "fleet.json").read_text())["job"] == "4242"
    assert sorted(p.name for p in out.iterdir()) == ["fleet.json", "fleet.sbatch"]


def test_ctrl_c_while_sbatch_hangs_leaves_nothing(tmp_path):
    env = {**slurm(tmp_path, sbatch="sbatch-hangs"), "GAPBENCH_SLURM_TIMEOUT": "60"}
    out = tmp_path / "fleet"
    process = subprocess.Popen([sys.executable, "-m", "gapbench_ci", "fleet", "submit", "--out",
                                str(out), "--gapbench", str(FAKES / "gapbench")], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not out.exists() and time.monotonic() < deadline:  # sbatch is being asked
        time.sleep(0.05)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130 and err.strip() == f"{SUBMIT}: interrupted", err
    assert not out.exists()
    gone = subprocess.run(["pgrep", "-f", str(FAKES / "sbatch-hangs")], capture_output=True,
                          check=False)
    assert gone.returncode == 1, "the hanging sbatch was left running"


# ---- status: a Slurm that hangs or answers garbage; a record that is no record ----------------

STATUS = "gapbench-ci fleet status"


def fleet_folder(tmp_path: Path, record: str | None = '{"job": "4242", "tasks": 5}') -> Path:
    root = tmp_path / "fleet"
    root.mkdir()
    if record is not None:
        (root / "fleet.json").write_text(record)
    return root


@pytest.mark.parametrize("squeue, words", [
    ("squeue-hangs", "squeue did not answer in 1 s; is slurmctld up? (scontrol ping says)"),
    ("squeue-garbage", "squeue answered no job state for job 4242: '<html>proxy error</html>'"),
])
def test_status_with_a_stuck_or_garbled_slurm_is_one_line(tmp_path, squeue, words):
    started = time.monotonic()
    done = run(slurm(tmp_path, squeue=squeue), "status", fleet_folder(tmp_path))
    assert words in one_line(done, 2, STATUS)
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("record, words", [
    ('{"job": "", "tasks": 1}', "fleet.json: job is '', not a Slurm job id"),
    ('{"job": 7, "tasks": 1}', "fleet.json: job is 7, not a Slurm job id"),
    ('{"job": "7", "tasks": "3"}', "fleet.json: tasks is '3', not a number of tasks"),
    ('{"job": "7", "tasks": true}', "fleet.json: tasks is True, not a number of tasks"),
    ("[]", "fleet.json: job is None"),
    ("", "fleet.json: empty file"),
    ('{"job": "7", "tas', "fleet.json: not valid JSON (truncated?)"),
    ("fifo", "fleet.json: cannot be read: a FIFO, not a regular file"),
])
def test_status_of_a_record_that_is_no_record(tmp_path, record, words):
    root = fleet_folder(tmp_path, None if record == "fifo" else record)
    if record == "fifo":
        os.mkfifo(root / "fleet.json")
    done = run(slurm(tmp_path, squeue="squeue-done", scontrol="scontrol-done"), "status", root)
    assert words in one_line(done, 2, STATUS)


# ---- one bad node: listed with its reason, the rest read (the report and status alike) --------

def good_fleet(root: Path, tasks: bool = True) -> Path:
    """The rest of the fleet: four real runs, each with the task.json a passed task writes."""
    for run_name in GOOD:
        shutil.copytree(MACHINE / run_name, root / run_name)
        if tasks:
            (root / run_name / "task.json").write_text('{"exit_status": 0}')
    return root


def results_with(key: str, literal: str) -> str:
    """normal-1's conv-naive.json with its first repetition's `key` as the JSON text `literal`."""
    data = json.loads((MACHINE / "normal-1" / "conv-naive.json").read_text())
    first = next(b for b in data["benchmarks"] if b.get("run_type") == "iteration")
    first[key] = "@@"
    return json.dumps(data).replace('"@@"', literal)


def context_with(key: str, literal: str) -> str:
    data = json.loads((MACHINE / "normal-1" / "conv-naive.json").read_text())
    data["context"][key] = "@@"
    return json.dumps(data).replace('"@@"', literal)


# (file in the bad node, its content, the words of its problem). None: the node has no
# problem, and the fleet renders all the same.
BAD_FILES = [
    ("doctor.json", '{"facts": {}, "findings": 5}', "doctor.json: findings is 5, not a list"),
    ("doctor.json", '{"facts": {}, "findings": {"id": "x"}}', "findings is {'id': 'x'}, not a"),
    ("doctor.json", '{"facts": {}, "findings": [1, {"id": []}, null]}',
     "doctor.json: 3 of 3 findings not objects with a severity, an id and a text"),
    ("doctor.json", '{"facts": [], "findings": []}', "doctor.json: not gapbench doctor --json"),
    ("doctor.json", "[]", "doctor.json: not gapbench doctor --json output"),
    ("doctor.json", "", "doctor.json: empty file"),
    ("doctor.json", b"\xff\xfe{}", "doctor.json: cannot be read: not UTF-8 text"),
    ("doctor.json", "[" * 100000, "doctor.json: JSON nested too deeply"),
    ("doctor.json", '{"facts": {"gpu.status": "ok", "gpu.name": "X", "gpu.memory_total_bytes": '
                    'Infinity, "cpu.cores": NaN, "pcie.gen_current": -Infinity, "gpu.count": '
                    '1e400, "machine.id": "\\ud800\\n"}, "findings": [{"severity": "\\u001b[31m",'
                    ' "id": "x\\ud800", "text": "\\n"}]}', None),
    ("task.json", '{"exit_status": null}', "task.json: exit_status is None, not a whole number "
                                           "from 0 to 255"),
    ("task.json", '{"exit_status": "0"}', "task.json: exit_status is '0', not a whole number"),
    ("task.json", '{"exit_status": true}', "task.json: exit_status is True, not a whole number"),
    ("task.json", '{"exit_status": 1e400}', "task.json: exit_status is inf, not a whole number"),
    ("task.json", '{"exit_status": -1}', "task.json: exit_status is -1, not a whole number"),
    ("task.json", '{"exit_status": 10000000000000000000000}', "exit_status is 1e+22, not a whole"),
    ("task.json", "{}", "task.json: has no exit_status"),
    ("task.json", '"0"', "task.json: has no exit_status"),
    ("conv-naive.json", results_with("bytes_per_second", "NaN"),
     "conv-naive.json: conv/naive/cpu/n:1/c:1/hw:28/k:1/r:3/stride:1/pad:0/real_time: "
     "bytes_per_second is nan, not a finite number"),
    ("conv-naive.json", results_with("bytes_per_second", "-Infinity"),
     "bytes_per_second is -inf, not a finite number"),
    ("conv-naive.json", results_with("bytes_per_second", '"lots"'),
     "bytes_per_second is 'lots', not a finite number"),
    ("conv-naive.json", results_with("time_unit", "[1]"), "real_time"),
    ("conv-naive.json", results_with("real_time", "1e400"), "real_time inf 'ns' is no time"),
    ("conv-naive.json", context_with("load_avg", "[NaN, 1e400]"), None),
    ("conv-naive.json", context_with("load_avg", "[true]"), None),
    ("conv-naive.json", context_with("load_avg", '"high"'), None),
    ("gapbench.log", b"\xff\xfe\x00 a log that is not UTF-8", None),
    ("a-visitor.json", (MACHINE / "sse41" / "conv-naive.json").read_text(),
     "a-visitor.json: another machine's file (machine.id 705d369e6ac2671f; this node is "
     "bce1e628ae92a5fd, as doctor.json and 5 of its 6 results files say): not read"),
]


def write_bad_node(root: Path, name: str, content: str | bytes) -> Path:
    node = root / "normal-1"
    shutil.copytree(MACHINE / "normal-1", node)
    (node / "task.json").write_text('{"exit_status": 0}')
    path = node / name
    path.unlink(missing_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
    return node


def problems_of(summary: str, node: str) -> list[str]:
    return [line for line in summary.splitlines() if line.startswith(f"| {node} | ")]


def report_renders(tmp_path: Path, root: Path, capsys) -> str:
    """The report on `root` (in this process: many cases): exit 0, nothing on stderr, both files
    written, the verdict on the good runs."""
    assert fleet_report.main([str(root), "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err == ""
    summary = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "Slowest for this work: sse41" in summary
    assert (tmp_path / "out" / "index.html").read_text(encoding="utf-8").count("sse41") > 2
    return summary


@pytest.mark.parametrize("name, content, words", BAD_FILES,
                         ids=[f"{n}:{str(c)[:40]}" for n, c, _ in BAD_FILES])
def test_one_bad_file_is_its_nodes_problem_and_the_rest_renders(tmp_path, capsys, monkeypatch,
                                                                 name, content, words):
    root = good_fleet(tmp_path / "fleet")
    write_bad_node(root, name, content)
    problems = problems_of(report_renders(tmp_path, root, capsys), "normal-1")
    if words is None:
        assert problems == []
    else:
        assert len(problems) == 1 and words in problems[0], problems
    (root / "fleet.json").write_text('{"job": "4242", "tasks": 5}')
    for key, value in slurm(tmp_path, squeue="squeue-done", scontrol="scontrol-done").items():
        monkeypatch.setenv(key, value)
    assert fleet_status.main([str(root)]) == (0 if words is None else 1)
    done = capsys.readouterr()
    assert done.err == "", done.err
    line = next(x for x in done.out.splitlines() if x.startswith("  normal-1: "))
    assert words is None or words in line, line
    lines = done.out.splitlines()
    assert all(f"  {n}: done, passed (5 results file(s))" in lines for n in GOOD), lines


def test_another_machines_file_in_a_node_enters_neither_its_medians_nor_its_groups(tmp_path):
    """sse41's conv-naive.json copied into normal-1 as a-visitor.json (read first, so that its
    times would have been the node's): set apart, named; the node's medians are its own. With
    no doctor.json, the machine most of its files are of decides."""
    alone = fleet_inputs.read_node_files(MACHINE / "normal-1")
    for doctor in (True, False):
        root = tmp_path / f"fleet-{doctor}"
        node = write_bad_node(root, "a-visitor.json",
                              (MACHINE / "sse41" / "conv-naive.json").read_text())
        if not doctor:
            (node / "doctor.json").unlink()
        read = fleet_inputs.read_node_files(node)
        assert read.medians == alone.medians and read.files == 5
        assert read.machine == "bce1e628ae92a5fd"
        assert [p for p in read.problems if "another machine's file" in p] == [
            "a-visitor.json: another machine's file (machine.id 705d369e6ac2671f; this node is "
            "bce1e628ae92a5fd, as " + ("doctor.json and " if doctor else "")
            + "5 of its 6 results files say): not read"]


SPECIAL = {
    "fifo": lambda path: os.mkfifo(path),
    "device": lambda path: path.symlink_to("/dev/zero"),
    "symlink loop": lambda path: path.symlink_to(path.name),
    "symlink to nothing": lambda path: path.symlink_to("nowhere"),
    "folder": lambda path: path.mkdir(),
}
KIND_WORDS = {"fifo": "a FIFO", "device": "a device", "symlink loop": "a symbolic link that loops",
              "symlink to nothing": "a symbolic link to nothing", "folder": "a directory"}


@pytest.mark.parametrize("name", ["doctor.json", "task.json", "gapbench.log", "conv-naive.json",
                                  DIGEST])
@pytest.mark.parametrize("kind", SPECIAL)
def test_a_special_file_where_a_file_belongs_is_never_opened(tmp_path, capsys, name, kind):
    root = good_fleet(tmp_path / "fleet")
    node = write_bad_node(root, "unused.txt", "")
    (node / name).unlink(missing_ok=True)
    SPECIAL[kind](node / name)
    problems = problems_of(report_renders(tmp_path, root, capsys), "normal-1")
    if name == DIGEST:  # the report's own, hidden: never read unless whole, else written anew
        assert problems == []
    elif name == "task.json":
        assert any(f"task.json: cannot be read: {KIND_WORDS[kind]}" in p or
                   f"task.json: {KIND_WORDS[kind]}, not a file" in p for p in problems), problems
    else:
        assert any(f"{name}: {KIND_WORDS[kind]}, not a file: not read" in p for p in problems), \
            problems


def test_a_digest_that_is_not_what_the_report_wrote_is_read_past(tmp_path):
    root = good_fleet(tmp_path / "fleet", tasks=False)
    node = root / "normal-2"
    read_node(node)
    digest = json.loads((node / DIGEST).read_text())
    for field, value in (("medians", [1, 2]), ("findings", "x"), ("load", float("inf")),
                         ("medians", {"not a name": 1.0}), ("files", True)):
        broken = {**digest, "node": {**digest["node"], field: value}}
        (node / DIGEST).write_text(json.dumps(broken))
        again = read_node(node)
        assert again.medians == read_node(node).medians and not again.problems, field
        assert json.loads((node / DIGEST).read_text()) == digest  # written anew
    (node / DIGEST).unlink()
    (node / DIGEST).symlink_to(tmp_path / "elsewhere.json")  # never written through a link
    read_node(node)
    assert not (tmp_path / "elsewhere.json").exists()


@pytest.mark.parametrize("name, shown", [
    (b"node-\xff", "node-\\xff"),
    (b"new\nline", "new\\nline"),
    (b"esc\x1b[31m", "esc\\x1b[31m"),
])
def test_a_node_folder_named_oddly_is_shown_escaped(tmp_path, capsys, name, shown):
    root = good_fleet(tmp_path / "fleet")
    odd = os.path.join(os.fsencode(root), name)
    shutil.copytree(MACHINE / "normal-1", os.fsdecode(odd))
    summary = report_renders(tmp_path, root, capsys)
    assert f"<td>{shown}</td>" in (tmp_path / "out" / "index.html").read_text()
    if b"\xff" in name:
        assert f"| {shown} | the folder's name is not UTF-8" in summary


@pytest.mark.parametrize("kind", ["symlink loop", "symlink to nothing"])
def test_a_node_folder_that_is_a_broken_link_is_listed(tmp_path, capsys, kind):
    root = good_fleet(tmp_path / "fleet")
    SPECIAL[kind](root / "gone")
    summary = report_renders(tmp_path, root, capsys)
    assert f"| gone | cannot be read: {KIND_WORDS[kind]} |" in summary


def run_as_nobody() -> list[str] | None:
    """A command prefix that runs as an unprivileged user (root reads any folder), or None."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    return [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if setpriv else None


def as_nobody(top: Path, prefix: list[str]) -> tuple[list[str], dict[str, str]]:
    """The interpreter and environment in which an unprivileged user runs this checkout's code.
    The checkout may sit where only its owner can read (root's home folder, mode 700, where a
    newcomer working as root clones by default): the two packages are copied into `top`, and
    the Python is found past links (a .venv linked into the checkout). Skips, with the reason,
    when that user cannot run the Python or import what the report needs."""
    code = top / "code"
    for package in (HERE.parents[1] / "ci" / "gapbench_ci", HERE.parent / "gapbench_report"):
        shutil.copytree(package, code / package.name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for p in [code, *code.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    python = (Path(os.path.realpath(sys.prefix)) / "bin" / Path(sys.executable).name
              if sys.prefix != sys.base_prefix else Path(sys.executable))
    env = {**ENV, "PYTHONPATH": str(code), "MPLCONFIGDIR": str(top / "mpl")}
    tried = subprocess.run([*prefix, str(python), "-c", "import gapbench_report.fleet.command, "
                            "gapbench_ci.fleet"], env=env, capture_output=True, text=True,
                           timeout=120, check=False)
    if tried.returncode != 0:
        why = (tried.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"skipped: {prefix[1]} cannot run {python} with this checkout's packages "
                    f"({why}); put the Python where that user can read it")
    return [*prefix, str(python)], env


def test_an_unreadable_node_folder_is_listed_and_the_rest_renders():
    prefix = run_as_nobody()
    if prefix is None:
        pytest.skip("skipped: as root, an unprivileged user is needed and setpriv is missing")
    top = Path(tempfile.mkdtemp(prefix="gapbench-fleet-perm-"))  # /tmp: nobody can reach it
    try:
        top.chmod(0o777)
        python, env = as_nobody(top, prefix) if prefix else ([sys.executable], ENV)
        root = good_fleet(top / "fleet")
        shutil.copytree(MACHINE / "normal-1", root / "locked")
        (root / "locked").chmod(0)
        for p in [root, *root.rglob("*")]:
            if p.name != "locked" and "locked" not in p.parts:
                p.chmod(0o777 if p.is_dir() else 0o666)  # the rest, and the digests written
        done = subprocess.run([*python, "-m", "gapbench_report", "fleet", str(root), "--out",
                               str(top / "out")], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        summary = (top / "out" / "summary.md").read_text()
        assert "| locked | cannot be read: Permission denied |" in summary
        assert "Slowest for this work: sse41" in summary
        (root / "fleet.json").write_text('{"job": "4242", "tasks": 5}')
        slurm_env = slurm(top, squeue="squeue-done", scontrol="scontrol-done")
        for fake in (top / "bin").iterdir():  # copies: the links lead into the checkout
            target = fake.resolve()
            fake.unlink()
            shutil.copy(target, fake)
            fake.chmod(0o755)
        done = subprocess.run([*python, "-m", "gapbench_ci", "fleet", "status", str(root)],
                              env={**slurm_env, "PYTHONPATH": env["PYTHONPATH"]},
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 1 and done.stderr == "", done.stderr
        assert "  locked: failed: cannot be read: Permission denied" in done.stdout
    finally:
        if (top / "fleet" / "locked").exists():
            (top / "fleet" / "locked").chmod(0o755)
        shutil.rmtree(top)


# ---- no partial output; a partial fleet -------------------------------------------------------

def test_page_and_summary_come_from_one_run_or_neither_is_written(tmp_path, monkeypatch):
    root = good_fleet(tmp_path / "fleet")
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.md").write_text("the last run's\n")
    (out / "index.html").write_text("the last run's\n")

    def broken(_fleet):
        raise RuntimeError("the page could not be made")
    monkeypatch.setattr(fleet_report, "html_report", broken)
    assert fleet_report.main([str(root), "--out", str(out)]) == 2
    assert [(out / f).read_text() for f in ("summary.md", "index.html")] == ["the last run's\n"] * 2
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "summary.md"]  # no temporary
    monkeypatch.undo()
    (out / "index.html").unlink()
    os.mkfifo(out / "index.html")  # a file that cannot be replaced: refused before any write
    assert fleet_report.main([str(root), "--out", str(out)]) == 2
    assert (out / "summary.md").read_text() == "the last run's\n"


def test_a_folder_with_only_what_submit_wrote_renders(tmp_path):
    root = tmp_path / "fleet"
    root.mkdir()
    (root / "fleet.json").write_text('{"job": "4242", "tasks": 16}')
    (root / "fleet.sbatch").write_text("#!/bin/bash\n")
    done = run(ENV, root, "--out", tmp_path / "out", module="gapbench_report")
    assert done.returncode == 0, done.stderr
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "0 node folders" in summary and "No node has written its folder yet" in summary


# ---- the one-node cluster at a deep path -----------------------------------------------------

def test_the_clusters_sockets_fit_whatever_its_folders_depth(tmp_path):
    deep = Path("/" + "/".join(["a-rather-deep-folder"] * 12)) / "cluster"
    assert len(os.fsencode(deep)) > 200
    conf = fleet_cluster.slurm_conf(deep, "node-with-a-long-host-name-01", 2)
    socket_line = next(x for x in conf.splitlines() if x.startswith("AuthInfo=socket="))
    munge = socket_line.split("=", 2)[2]
    assert munge == str(fleet_cluster.munge_socket(deep)) and len(os.fsencode(munge)) <= 107
    step = fleet_cluster.spool(deep) / f"node-with-a-long-host-name-01_{2**32 - 1}.{2**32 - 1}"
    assert len(os.fsencode(step)) <= 107
    assert f"SlurmdSpoolDir={fleet_cluster.spool(deep)}" in conf
    assert fleet_cluster.sockets_folder(deep) != fleet_cluster.sockets_folder(deep.parent)


@pytest.mark.parametrize("folder", ["/tmp/with space", "/tmp/with#hash", "/tmp/new\nline"])
def test_a_cluster_folder_slurm_conf_cannot_name_is_refused(folder):
    done = subprocess.run([sys.executable, "-m", "gapbench_ci.fleet_cluster", "start", folder],
                          env=ENV, capture_output=True, text=True, timeout=60, check=False)
    assert "slurm.conf cannot name a folder with spaces" in one_line(
        done, 2, "python -m gapbench_ci.fleet_cluster")
    assert not os.path.exists(folder)
