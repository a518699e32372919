"""The command line: bad input is one line and exit 2; a run writes one file per framework,
whole, and exits 1 when a benchmark failed."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gapbench_probe import cli, frameworks, plan
from gapbench_probe.machine import Doctor
from tests.conftest import TINY
from tests.fake_framework import fake

PROBE = Path(__file__).resolve().parents[1]


def probe_command(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PROBE)}
    return subprocess.run([sys.executable, "-m", "gapbench_probe", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=60, check=False)


@pytest.mark.parametrize("args,line", [
    (["--framework", "jax"], "gapbench-probe: unknown framework 'jax' (torch, tensorflow or all)"),
    (["--device", "tpu"], "gapbench-probe: unknown device 'tpu' (cpu, gpu or all)"),
    (["--profile", "long"], "gapbench-probe: unknown profile 'long' (quick or full)"),
    (["--filter", "("], None),
    (["--filter", "^nothing$"], "gapbench-probe: no benchmark matches --filter '^nothing$'"),
    (["--seed", "x"], "gapbench-probe: --seed needs a whole number from 0 to 2^64 - 1, got 'x'"),
    (["--bogus"], "gapbench-probe: unrecognized arguments: --bogus"),
    (["--gapbench", "/no/such/gapbench"], "gapbench-probe: --gapbench /no/such/gapbench: no such "
                                          "executable"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, line):
    done = probe_command(*args, "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0] == line if line else lines[0].startswith("gapbench-probe: --filter '('")
    assert not (tmp_path / "out" / "framework-torch.json").exists()


def test_an_unwritable_folder_is_refused_before_running(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = probe_command("--out", str(blocker / "sub"), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(f"gapbench-probe: --out {blocker / 'sub'}: cannot write there")
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.fixture
def fakes(monkeypatch, tiny):
    """main() with the fake framework under both names and the tiny profile."""
    monkeypatch.setitem(plan.PROFILES, "quick", TINY)
    monkeypatch.setattr(cli, "PROFILES", {**plan.PROFILES, "quick": TINY})
    monkeypatch.setattr(cli, "ask_doctor", lambda path: Doctor({"machine.id": "m1"}, "test"))

    def use(**adapters):
        monkeypatch.setattr(frameworks, "ADAPTERS", adapters)
    return use


def test_one_file_per_framework(tmp_path, fakes, capsys):
    fakes(torch=fake("torch"), tensorflow=fake("tensorflow", gpu="tensorflow is a CPU build"))
    assert cli.main(["--out", str(tmp_path)]) == 0
    for name in ("torch", "tensorflow"):
        data = json.loads((tmp_path / f"framework-{name}.json").read_text())
        assert data["context"]["framework.name"] == name
        assert all(e["name"].startswith(f"framework/{name}/") for e in data["benchmarks"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["framework-tensorflow.json",
                                                         "framework-torch.json"]
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'framework-tensorflow.json'}" in out
    assert "skipped 11: tensorflow is a CPU build" in out


def test_a_failure_still_writes_the_file_and_exits_1(tmp_path, fakes):
    fakes(torch=fake("torch", dense="raise"))
    assert cli.main(["--framework", "torch", "--device", "cpu", "--out", str(tmp_path)]) == 1
    data = json.loads((tmp_path / "framework-torch.json").read_text())
    failed = {e["name"] for e in data["benchmarks"]
              if e.get("error_occurred") and not e["error_message"].startswith("skipped: ")}
    assert failed == {"framework/torch/cpu/op:dense/batch:4/real_time"}
    assert [p.name for p in tmp_path.iterdir()] == ["framework-torch.json"]  # no temp left


def test_skips_alone_exit_0(tmp_path, fakes, monkeypatch):
    monkeypatch.setitem(sys.modules, "gapbench_probe_fake_framework", None)
    fakes(torch=fake("torch"))
    assert cli.main(["--framework", "torch", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "framework-torch.json").read_text())
    assert all(e["error_message"].startswith("skipped: torch is not installed")
               for e in data["benchmarks"])


def test_a_real_run_without_the_frameworks(tmp_path):
    """The real command, in a Python without torch (the test's): every entry a skip, exit 0."""
    try:
        import torch  # noqa: F401
        pytest.skip("this Python has torch")
    except ImportError:
        pass
    done = probe_command("--framework", "torch", "--out", str(tmp_path),
                         "--filter", "op:matmul/n:16/", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "framework-torch.json").read_text())
    assert {e["name"] for e in data["benchmarks"]} == {
        "framework/torch/cpu/op:matmul/n:16/real_time",
        "framework/torch/gpu/op:matmul/n:16/real_time"}
    assert "skipped 2: torch is not installed in this Python" in done.stdout


def test_a_framework_the_filter_leaves_empty_is_not_written(tmp_path, fakes, capsys):
    fakes(torch=fake("torch"), tensorflow=fake("tensorflow"))
    earlier = tmp_path / "framework-tensorflow.json"
    earlier.write_text("earlier figures")
    assert cli.main(["--out", str(tmp_path), "--filter", "^framework/torch/"]) == 0
    assert earlier.read_text() == "earlier figures"
    assert json.loads((tmp_path / "framework-torch.json").read_text())["benchmarks"]
    assert (f"gapbench-probe: no tensorflow benchmark matches --filter '^framework/torch/': "
            f"{earlier} not written") in capsys.readouterr().out


def missing(name: str):
    """A fake framework whose module this Python lacks."""
    return type(f"Missing{name}", (fake(name),), {"module": "gapbench_probe_no_such_framework"})


def test_under_all_a_missing_framework_keeps_an_earlier_file(tmp_path, fakes, capsys):
    fakes(torch=missing("torch"), tensorflow=fake("tensorflow"))
    earlier = tmp_path / "framework-torch.json"
    earlier.write_text("figures of another Python")
    assert cli.main(["--out", str(tmp_path)]) == 0
    assert earlier.read_text() == "figures of another Python"
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("gapbench-probe: torch is not installed in this "
                                               "Python (")
    assert err[0].endswith(f": {earlier} kept as it was")
    assert json.loads((tmp_path / "framework-tensorflow.json").read_text())["benchmarks"]


def test_under_all_a_missing_framework_without_a_file_gets_one(tmp_path, fakes, capsys):
    fakes(torch=missing("torch"))
    assert cli.main(["--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "framework-torch.json").read_text())
    assert all(e["error_message"].startswith("skipped: torch is not installed")
               for e in data["benchmarks"])
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].endswith("wrote " + str(tmp_path / "framework-torch.json")
                                             + ", every benchmark skipped")


def test_asked_for_by_name_a_missing_framework_replaces_the_file(tmp_path, fakes):
    fakes(torch=missing("torch"))
    (tmp_path / "framework-torch.json").write_text("earlier figures")
    assert cli.main(["--framework", "torch", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "framework-torch.json").read_text())
    assert {e["error_message"][:32] for e in data["benchmarks"]} == {
        "skipped: torch is not installed "}


# ---- a Python without numpy, closed descriptors, bad seeds, a run that only failed -------------

WITHOUT_NUMPY = ("import sys; sys.modules['numpy'] = None; from gapbench_probe.cli import main; "
                 "sys.exit(main())")


def without_numpy(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT_NUMPY, *args], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(PROBE)}, cwd=cwd,
                          timeout=60, check=False)


def test_without_numpy_help_works_and_a_run_says_what_to_install(tmp_path):
    for flag in ("--help", "--version"):
        done = without_numpy(flag, cwd=tmp_path)
        assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "--framework torch|tensorflow|all" in without_numpy("--help", cwd=tmp_path).stdout
    done = without_numpy("--out", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert re.fullmatch(r"gapbench-probe: needs numpy, which this Python \((.+)\) lacks: \1 -m "
                        r"pip install numpy \(PyTorch and TensorFlow bring it\)", line), line
    assert not (tmp_path / "out").exists()


def test_the_framework_names_of_help_are_the_adapters():
    assert plan.FRAMEWORKS == tuple(frameworks.ADAPTERS)


CLOSED_CHILD = """
import os, sys
from gapbench_probe import cli
out = os.dup2(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644), 9)
for fd in (0, 1, 2):
    os.close(fd)
cli.main(["--help"])
null = os.stat(os.devnull)
os.write(9, repr([os.path.samestat(os.fstat(fd), null) for fd in (0, 1, 2)]).encode())
"""


def test_closed_descriptors_are_opened_on_dev_null_first(tmp_path):
    report = tmp_path / "report.txt"
    subprocess.run([sys.executable, "-c", CLOSED_CHILD, str(report)], timeout=60, check=False,
                   env={**os.environ, "PYTHONPATH": str(PROBE)})
    assert report.read_text() == "[True, True, True]"


def test_a_reader_gone_ends_the_probe_quietly_as_sigpipe_does(tmp_path):
    """`gapbench-probe | head -1`: the file is written, then the report of it meets no reader."""
    if importlib.util.find_spec("torch"):
        pytest.skip("this Python has torch: the run would measure it")
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "gapbench_probe", "--framework", "torch",
                               "--filter", "op:matmul/n:16/", "--out", str(tmp_path)],
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=60,
                              check=False, env={**os.environ, "PYTHONPATH": str(PROBE)})
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (-signal.SIGPIPE, "")
    assert json.loads((tmp_path / "framework-torch.json").read_text())["benchmarks"]


@pytest.mark.parametrize("args, env, line", [
    (["--seed", "-1"], {}, "--seed needs a whole number from 0 to 2^64 - 1, got '-1'"),
    (["--seed", str(2**64)], {}, f"--seed needs a whole number from 0 to 2^64 - 1, got "
                                 f"'{2**64}'"),
    (["--seed", " 7"], {}, "--seed needs a whole number from 0 to 2^64 - 1, got ' 7'"),
    ([], {"GAPBENCH_SEED": "-1"}, "GAPBENCH_SEED needs a whole number from 0 to 2^64 - 1, got "
                                  "'-1'"),
])
def test_a_seed_gapbench_refuses_is_refused_before_anything_runs(tmp_path, args, env, line):
    earlier = tmp_path / "out" / "framework-torch.json"
    earlier.parent.mkdir()
    earlier.write_text("earlier figures")
    done = subprocess.run([sys.executable, "-m", "gapbench_probe", *args, "--out",
                           str(earlier.parent)], capture_output=True, text=True, timeout=60,
                          check=False, env={**os.environ, "PYTHONPATH": str(PROBE), **env})
    assert done.returncode == 2 and done.stderr.splitlines() == [f"gapbench-probe: {line}"]
    assert earlier.read_text() == "earlier figures"


def test_the_largest_seed_gapbench_takes_is_taken():
    assert cli.seed_of(str(2**64 - 1)) == 2**64 - 1
    assert cli.seed_of(None) == 42


def test_a_run_where_every_benchmark_failed_keeps_the_earlier_file(tmp_path, fakes, capsys):
    fakes(torch=fake("torch", sumsq="wrong"))
    earlier = tmp_path / "framework-torch.json"
    earlier.write_text("figures of a run that worked")
    args = ["--framework", "torch", "--device", "cpu", "--filter", "op:sumsq", "--out",
            str(tmp_path)]
    assert cli.main(args) == 1
    assert earlier.read_text() == "figures of a run that worked"
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("gapbench-probe: every torch benchmark failed (")
    assert err[0].endswith(f"): {earlier} kept as it was")
    earlier.unlink()  # with no earlier file, the failures are written, as before
    assert cli.main(args) == 1 and earlier.exists()
