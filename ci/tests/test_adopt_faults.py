"""`ci/baseline NAME --adopt FILE...` given hostile input (docs/faults.md, "Adopting a baseline").

Every case below is run in a folder holding the files of tests/data/adopt/ (its README says what
each one is) and a few made by `workdir` (links, a copy, a FIFO, a folder), into a copy of the
committed results/baselines/. Each must end with exactly one line on stderr and its exit status
(1: the files are no baseline; 2: bad arguments or a file that is no results file), write
nothing to stdout, and leave the baselines folder byte for byte as it was: no partial baseline,
no temporary file, no README row.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gapbench_ci import baseline, baseline_folder
from tests import PYTHONPATH, REPO

DATA = REPO / "ci" / "tests" / "data"
REPORT_DATA = REPO / "report" / "tests" / "data"  # the report's own bad files
COMMITTED = REPO / "results" / "baselines"
COMMIT, HOW = "42634e8", "GPU variants only, on a lent GPU."
TOO_MANY = "use letters, digits, '.', '_' and '-' (at most 64), starting with a letter or digit"

# (what is wrong, NAME, the files after --adopt, more arguments, exit status, the one line)
CASES = [
    # -- a name that is taken: a committed baseline is never replaced without --replace
    ("a committed baseline's name", "ci-cpu-2core", ["conv.json"], [], 2,
     "ci-cpu-2core is already a baseline in baselines (ci-cpu-2core.json); --adopt never "
     "replaces one: pass --replace to replace it"),
    ("a baseline with a framework side", "h200-ubuntu24", ["conv.json"], [], 2,
     "h200-ubuntu24 is already a baseline in baselines (h200-ubuntu24.framework-torch.json, "
     "h200-ubuntu24.json); --adopt never replaces one: pass --replace to replace it"),
    ("another baseline's framework side", "h200-ubuntu24.framework-torch", ["conv.json"],
     ["--replace"], 2,
     "h200-ubuntu24.framework-torch.json would replace baselines/h200-ubuntu24.framework-torch"
     ".json, baseline h200-ubuntu24's file: choose another name (--replace replaces only "
     "h200-ubuntu24.framework-torch's own files)"),
    ("a name differing only in case (one file on macOS)", "CI-CPU-2core", ["conv.json"], [], 2,
     "CI-CPU-2core.json would replace baselines/ci-cpu-2core.json, baseline ci-cpu-2core's "
     "file: choose another name (--replace replaces only CI-CPU-2core's own files)"),
    ("--replace with nothing to replace", "gpu-new", ["conv.json"], ["--replace"], 2,
     "--replace: there is no baseline gpu-new in baselines to replace"),
    # -- a name that is no file name
    ("a path", "sub/gpu", ["conv.json"], [], 2, f"name 'sub/gpu': {TOO_MANY}"),
    ("a way up", "..", ["conv.json"], [], 2, f"name '..': {TOO_MANY}"),
    ("an empty name", "", ["conv.json"], [], 2, f"name '': {TOO_MANY}"),
    ("a final newline", "gpu\n", ["conv.json"], [], 2, f"name 'gpu\\n': {TOO_MANY}"),
    ("a control character", "gpu\x1b[31m", ["conv.json"], [], 2,
     f"name 'gpu\\x1b[31m': {TOO_MANY}"),
    # -- a name Windows keeps for a device: a checkout there could not hold NAME.json
    *[(f"Windows's {name}", name, ["conv.json"], [], 2,
       f"name {name!r}: {name.split('.')[0]} is a device name on Windows (CON, PRN, AUX, NUL, "
       "COM1-9, LPT1-9, with any extension), where a checkout could not hold the file: choose "
       "another") for name in ("CON", "aux", "COM1", "nul.gpu", "Lpt9")],
    # -- a file given twice, by whatever path
    ("one path twice", "gpu-new", ["conv.json", "conv.json"], [], 2,
     "conv.json is given twice: give each file once"),
    ("./x and x", "gpu-new", ["conv.json", "./conv.json"], [], 2,
     "conv.json is given twice: give each file once"),
    ("a symlink to it", "gpu-new", ["conv.json", "link-to-conv.json"], [], 2,
     "link-to-conv.json is conv.json (the same file through another path or a link): give "
     "each file once"),
    ("a path through its folder", "gpu-new", ["conv.json", "folder/../conv.json"], [], 2,
     "folder/../conv.json is conv.json (the same file through another path or a link): give "
     "each file once"),
    ("a hard link", "gpu-new", ["conv.json", "hard-link-to-conv.json"], [], 2,
     "hard-link-to-conv.json is conv.json (the same file through another path or a link): "
     "give each file once"),
    ("a copy", "gpu-new", ["conv.json", "copy-of-conv.json"], [], 2,
     "copy-of-conv.json holds the same bytes as conv.json (a copy): give each file once"),
    # -- files that are no baseline (exit 1)
    ("two machines' files", "gpu-new", ["conv.json", "other-machine.json"], [], 1,
     "refused, nothing written: the files come from 2 machines (another-gpu, lent-gpu); a "
     "baseline is one machine"),
    ("a spread over the limit", "gpu-new", ["conv.json", "noisy.json"], [], 1,
     "refused, nothing written: 1 of 2 benchmarks spread too wide to be a baseline ((Q3 - Q1) / "
     "median above 75%); run again when the machine is quiet: lstm/cudnn/gpu/scope:seq/batch:64/"
     "input:50/hidden:64/steps:100/manual_time: spread 100.0% (cv 53.4%, 10 repetitions)"),
    ("a failed benchmark", "gpu-new", ["failed.json"], [], 1,
     "refused, nothing written: 1 benchmark(s) failed; a baseline needs every benchmark to run "
     "or skip with a reason: lstm/cudnn/gpu/scope:seq/batch:64/input:50/hidden:64/steps:100/"
     "manual_time: validation failed: 3 of 4096 elements off"),
    ("a gapbench-probe file only", "gpu-new", ["framework-torch.json"], [], 1,
     "refused, nothing written: no gapbench results file among them (only gapbench-probe's)"),
    # -- files that are no results files (exit 2)
    ("a missing file", "gpu-new", ["conv.json", "absent.json"], [], 2,
     "absent.json: no such file"),
    ("an empty file", "gpu-new", ["empty.json"], [], 2, "empty.json: empty file"),
    ("a file cut short", "gpu-new", ["truncated.json"], [], 2,
     "truncated.json: not valid JSON (truncated?): Unterminated string starting at: line 25 "
     "column 16"),
    ("no JSON at all", "gpu-new", ["not_json.json"], [], 2,
     "not_json.json: not valid JSON (truncated?): Expecting value: line 1 column 1"),
    ("another schema", "gpu-new", ["wrong_schema.json"], [], 2,
     "wrong_schema.json: unknown schema version '9' (this report reads 1 and 2)"),
    ("a folder", "gpu-new", ["folder"], [], 2, "folder: is a directory, not a results file"),
    ("a FIFO (read, it would wait forever)", "gpu-new", ["fifo.json"], [], 2,
     "fifo.json: is a FIFO, not a results file"),
    ("a device", "gpu-new", ["/dev/null"], [], 2, "/dev/null: is a device, not a results file"),
    ("a framework name that is a path", "gpu-new", ["conv.json", "framework-bad-name.json"],
     [], 2, "framework-bad-name.json: framework.name '../../outside' is no framework "
     "gapbench-probe measures (torch, tensorflow)"),
    # -- --commit and --how
    ("a commit that is no SHA", "gpu-new", ["conv.json"], ["--commit", "main"], 2,
     "--commit 'main' is not a commit SHA (7 to 40 lowercase hex digits, as git rev-parse "
     "prints them)"),
    ("a commit with a final newline", "gpu-new", ["conv.json"], ["--commit", "42634e8\n"], 2,
     "--commit '42634e8\\n' is not a commit SHA (7 to 40 lowercase hex digits, as git "
     "rev-parse prints them)"),
    ("a commit too short", "gpu-new", ["conv.json"], ["--commit", "4263"], 2,
     "--commit '4263' is not a commit SHA (7 to 40 lowercase hex digits, as git rev-parse "
     "prints them)"),
    ("an empty --how", "gpu-new", ["conv.json"], ["--how", " "], 2,
     "--adopt needs --how: how the files were made (machine, OS, build, libraries, commands), "
     "in words the files cannot say"),
    ("a control character in --how", "gpu-new", ["conv.json"], ["--how", "x\x1b[2Jy"], 2,
     "--how holds a control character: give it as plain text (it goes into the provenance and "
     "the README's table)"),
]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """The folder the cases run in (their current directory): tests/data/adopt's files, the
    report's own bad files, links, a copy, a folder, a FIFO, and `baselines`, a copy of
    results/baselines."""
    for path in sorted((DATA / "adopt").glob("*.json")):
        shutil.copy(path, tmp_path)
    for name in ("empty.json", "truncated.json", "compare/not_json.json",
                 "compare/wrong_schema.json"):
        shutil.copy(REPORT_DATA / name, tmp_path)
    (tmp_path / "link-to-conv.json").symlink_to("conv.json")
    os.link(tmp_path / "conv.json", tmp_path / "hard-link-to-conv.json")
    shutil.copy(tmp_path / "conv.json", tmp_path / "copy-of-conv.json")
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo.json")
    shutil.copytree(COMMITTED, tmp_path / "baselines")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every entry of the folder, hidden ones too, with its bytes."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def adopt_args(name: str, files: list[str], extra: list[str]) -> list[str]:
    """The command line; --commit and --how as a careful user gives them, unless `extra` does."""
    args = [name, "--adopt", *files, "--out-dir", "baselines", *extra]
    if "--commit" not in extra:
        args += ["--commit", COMMIT]
    if "--how" not in extra:
        args += ["--how", HOW]
    return args


@pytest.mark.parametrize("what, name, files, extra, status, line", CASES,
                         ids=[case[0] for case in CASES])
def test_each_case_is_one_line_its_status_and_nothing_written(workdir, capsys, what, name,
                                                              files, extra, status, line):
    before, around = snapshot(workdir / "baselines"), sorted(os.listdir(workdir))
    assert baseline.main(adopt_args(name, files, extra)) == status
    out, err = capsys.readouterr()
    assert err.splitlines() == [f"ci/baseline: {line}"] and out == ""
    assert snapshot(workdir / "baselines") == before  # committed files untouched, no stray file
    assert sorted(os.listdir(workdir)) == around


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its permissions")
def test_an_unreadable_file(workdir, capsys):
    (workdir / "conv.json").chmod(0)
    assert baseline.main(adopt_args("gpu-new", ["conv.json"], [])) == 2
    assert capsys.readouterr().err.splitlines() == [
        "ci/baseline: conv.json: cannot read: Permission denied"]


# ---- the same command as a script and through the entry point -----------------------------------

def run_both_ways(args: list[str], cwd: Path) -> list[tuple[int, str, str]]:
    """(exit status, stdout, stderr) of `ci/baseline ARGS` (the script: the module as __main__)
    and of `gapbench-ci baseline ARGS` (the entry point: the module imported)."""
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}
    ways = [[str(REPO / "ci" / "baseline"), *args],
            [sys.executable, "-m", "gapbench_ci", "baseline", *args]]
    done = [subprocess.run(way, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
            for way in ways]
    return [(d.returncode, d.stdout, d.stderr) for d in done]


@pytest.mark.parametrize("files, status", [
    (["conv.json", "other-machine.json"], 1),
    (["conv.json", "noisy.json"], 1),
    (["framework-torch.json"], 1),
    (["conv.json", "conv.json"], 2),
])
def test_the_script_and_the_entry_point_say_the_same(workdir, files, status):
    """ci/baseline ran the module as __main__, and baseline_adopt imported it back: a second
    copy, whose Refused the first did not catch ("internal error: Refused: ...", exit 2)."""
    script, entry = run_both_ways(adopt_args("gpu-new", files, []), workdir)
    assert script == entry
    code, out, err = script
    assert code == status and out == "" and len(err.splitlines()) == 1, err
    assert "internal error" not in err


# ---- replacing a baseline: only with --replace ------------------------------------------------

def test_replace_swaps_the_whole_baseline_and_says_what_it_replaced(workdir, capsys):
    folder = workdir / "baselines"
    old = json.loads((folder / "h200-ubuntu24.json").read_text())["provenance"]
    untouched = (folder / "ci-cpu-2core.json").read_bytes()
    assert baseline.main(adopt_args("h200-ubuntu24", ["conv.json", "lstm.json"],
                                    ["--replace"])) == 0, capsys.readouterr().err
    assert capsys.readouterr().out == "baselines/h200-ubuntu24.json\n"
    prov = json.loads((folder / "h200-ubuntu24.json").read_text())["provenance"]
    assert [(r["file"], r["machine.id"], r["captured_at"]) for r in prov["replaced"]] == [
        ("h200-ubuntu24.framework-torch.json", "e49b4bca775614d9", "2026-11-26T14:33:41+00:00"),
        ("h200-ubuntu24.json", "e49b4bca775614d9", old["captured_at"])]
    assert " --replace" in prov["command"]
    # The old framework side was the old machine's: it goes with the baseline it sat beside.
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md", "ci-cpu-2core.json", "h100-ubuntu24.framework-torch.json",
        "h100-ubuntu24.json", "h200-ubuntu24.json"]
    readme = (folder / "README.md").read_text()
    assert readme.count("[`h200-ubuntu24`]") == 1 and "machine.id lent-gpu" in readme
    assert "NVIDIA H200" not in readme.split("<!-- baselines:begin")[1]
    assert (folder / "ci-cpu-2core.json").read_bytes() == untouched


def test_a_new_name_beside_the_committed_ones_is_written(workdir, capsys):
    before = snapshot(workdir / "baselines")
    assert baseline.main(adopt_args("gpu-new", ["conv.json", "lstm.json",
                                                "framework-torch.json"], [])) == 0
    after = snapshot(workdir / "baselines")
    assert sorted(set(after) - set(before)) == ["gpu-new.framework-torch.json", "gpu-new.json"]
    assert {k: v for k, v in after.items() if k in before and k != "README.md"} == \
        {k: v for k, v in before.items() if k != "README.md"}
    assert "replaced" not in json.loads(after["gpu-new.json"])["provenance"]


# ---- what the README's table shows of outside text ------------------------------------------

def test_html_and_backticks_from_outside_reach_the_readme_as_text(workdir, capsys):
    """--how's raw HTML landed in results/baselines/README.md as HTML, and a backtick in a file
    name ended the command's code span."""
    shutil.copy(workdir / "conv.json", workdir / "con`v.json")
    how = "<img src=x onerror=alert(1)> *T4* | [x](javascript:alert(1))"
    assert baseline.main(adopt_args("gpu-new", ["con`v.json"], ["--how", how])) == 0, \
        capsys.readouterr().err
    row = next(line for line in (workdir / "baselines" / "README.md").read_text().splitlines()
               if line.startswith("| [`gpu-new`]"))
    assert "adopted: &lt;img src=x onerror=alert(1)&gt; \\*T4\\* \\| \\[x\\](javascript:alert(1))" \
        in row, row
    assert "<img" not in row
    assert row.endswith(" | ``ci/baseline gpu-new --adopt 'con`v.json' --out-dir baselines "
                        "--how TEXT`` |"), row
    # The table still has its six columns: nothing from outside ended a cell.
    assert len(re.split(r"(?<!\\)\|", row)) == 8, row


# ---- what a killed writer left -------------------------------------------------------------

def _last_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_killed_writers_files_are_removed_by_the_next_run_and_ignored_by_git(workdir, capsys):
    """A SIGKILLed --adopt left .NAME.json.PID.RANDOM.tmp files (1.1 MB) in results/baselines/:
    nothing removed them and git did not ignore them."""
    folder = workdir / "baselines"
    dead, alive = _last_pid(), os.getpid()
    litter = [f".gpu-old.json.{dead}.0a1b2c3d.tmp", f".README.md.{dead}.99aa00ff.tmp",
              ".cpu-x.run.json", ".cpu-x.run.json.partial.Ab12Cd"]
    kept = [f".gpu-new.json.{alive}.0a1b2c3d.tmp"]  # a live writer's: not ours to remove
    for name in litter + kept:
        (folder / name).write_text("{")
    assert baseline.main(adopt_args("gpu-new", ["conv.json"], [])) == 0, capsys.readouterr().err
    hidden = sorted(p.name for p in folder.iterdir() if p.name.startswith("."))
    assert hidden == kept
    ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "--no-index",
                              *(f"results/baselines/{name}" for name in litter + kept)],
                             capture_output=True, text=True, check=False)
    assert ignored.stdout.split() == [f"results/baselines/{n}" for n in litter + kept]


# ---- a typo among the options ----------------------------------------------------------------

@pytest.mark.parametrize("args, line", [
    (["-x"], "unrecognized arguments: -x (see --help)"),
    (["--adpot", "x.json"], "unrecognized arguments: --adpot (see --help)"),
    ([], "the following arguments are required: name (see --help)"),
])
def test_an_unknown_option_is_named_before_a_missing_name(capsys, args, line):
    """`ci/baseline -x` answered "the following arguments are required: name"."""
    assert baseline.main(args) == 2
    assert capsys.readouterr().err.splitlines() == [f"ci/baseline: {line}"]
    assert baseline_folder.PROG == "ci/baseline"
