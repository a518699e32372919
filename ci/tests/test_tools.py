"""tools: every outside command, run with a time limit, stopped with what it started, and a
failure as one line with the command's last line; configuring and building, listing the
benchmarks and doctor written once; and that the package runs no command any other way."""

from __future__ import annotations

import ast
import sys
import time
from pathlib import Path

import pytest

from gapbench_ci import tools
from tests import REPO
from tests.checks import process_gone
from tests.fakes import COPY, make_fake


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_a_failure_names_the_command_and_carries_its_last_line(tmp_path):
    fails = script(tmp_path / "fails", "echo progress; echo 'first' >&2; echo 'the reason' >&2; "
                                       "exit 3\n")
    with pytest.raises(tools.CommandFailed) as failed:
        tools.run([fails, "--x"], "the step")
    assert str(failed.value) == "the step exited with status 3: the reason"
    assert (failed.value.status, failed.value.last) == (3, "the reason")
    assert failed.value.command == [str(fails), "--x"]
    done = tools.run([fails], ok=(0, 3))  # a status the caller takes
    assert (done.status, done.out, done.last) == (3, "progress\n", "the reason")
    with pytest.raises(tools.CommandFailed, match=r"^\S+/fails exited with status 3: the "):
        tools.run([fails])  # by default the command names itself


def test_a_log_gets_the_command_its_output_and_the_failure_points_at_it(tmp_path):
    fails = script(tmp_path / "fails", "echo out; echo 'error: it broke' >&2; exit 1\n")
    log = tmp_path / "logs" / "step.log"
    with pytest.raises(tools.CommandFailed, match=r": error: it broke \(logs/step.log\)$"):
        tools.run([fails], "step", log=log)
    assert log.read_text() == f"$ {fails}\nout\nerror: it broke\n"
    assert tools.last_log_line(log, "out") == "out"


def test_a_command_that_is_not_there_or_cannot_run_is_one_line(tmp_path):
    with pytest.raises(tools.CommandFailed, match="^no-such-tool not found: bash ci/setup "):
        tools.run(["no-such-tool"])
    (tmp_path / "plain").write_text("not executable")
    with pytest.raises(tools.CommandFailed, match="cannot run .*plain: Permission denied"):
        tools.run([tmp_path / "plain"], "it")


def test_at_its_limit_a_command_is_stopped_with_what_it_started(tmp_path):
    child = tmp_path / "child.pid"
    slow = script(tmp_path / "slow", f"sleep 60 & echo $! > {child}; wait\n")
    start = time.monotonic()
    with pytest.raises(tools.TimedOut, match=r"^slow: still running after 1 s \(its limit\), "
                                             r"stopped$") as cut:
        tools.run([slow], "slow", 1)
    assert cut.value.status is None and time.monotonic() - start < 20
    with pytest.raises(tools.TimedOut, match=r"^slow did not answer in 0.5 s; is it up\?$"):
        tools.run([slow], limit=0.5, stuck="is it up?")
    pid = int(child.read_text())
    process_gone(pid, "its command")  # the sleeping child went with its group


def test_input_and_environment_reach_the_command(tmp_path):
    echo = script(tmp_path / "echo", 'cat; printf "%s" "$GAPBENCH_TEST_WORD"\n')
    done = tools.run([echo], input="in ", env={"GAPBENCH_TEST_WORD": "word"})
    assert done.out == "in word"


def test_echo_shows_the_output_on_stderr_and_points_at_it(tmp_path, capfd):
    fails = script(tmp_path / "fails", "echo building; exit 2\n")
    with pytest.raises(tools.CommandFailed) as failed:
        tools.run([fails], "building it", echo=True)
    assert str(failed.value) == "building it failed (exit status 2; its output is above)"
    err = capfd.readouterr().err
    assert err == f"+ {fails}\nbuilding\n"


def test_the_configure_command_is_written_once_for_each_build(tmp_path, monkeypatch):
    """The nightly's (this Python), the GPU check's (the GPU machine's Python, its GPU's
    architecture, the GPU libraries required, -D options last), the kit's (CMake's own Python,
    an architecture named) and a preset's (the baseline's)."""
    seen = []
    monkeypatch.setattr(tools, "run", lambda command, what, limit, **how:
                        seen.append((command, what, how.get("cwd"))))
    tools.configure(Path("/src"), Path("/b"), extra=["-DX=1"])
    tools.configure(Path("/src"), Path("/b"), python="/gpu/python3", cuda_architectures="native",
                    require_gpu_libraries=True, extra=["-DY=2"])
    tools.configure(Path("/src"), Path("/b"), python=None, cuda_architectures="90",
                    require_gpu_libraries=True, what="configuring")
    tools.configure(Path("/src"), preset="default", extra=["-DZ=3"])
    base = ["cmake", "-S", "/src", "-B", "/b", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"]
    assert seen == [
        ([*base, f"-DPython3_EXECUTABLE={sys.executable}", "-DX=1"], "configuring /src", None),
        ([*base, "-DCMAKE_CUDA_ARCHITECTURES=native", "-DPython3_EXECUTABLE=/gpu/python3",
          "-DGAPBENCH_REQUIRE_GPU_LIBRARIES=ON", "-DY=2"], "configuring /src", None),
        ([*base, "-DCMAKE_CUDA_ARCHITECTURES=90", "-DGAPBENCH_REQUIRE_GPU_LIBRARIES=ON"],
         "configuring", None),
        (["cmake", "--preset", "default", "-DZ=3"], "configuring /src", Path("/src")),
    ]
    seen.clear()
    tools.build(Path("/b"), jobs=2)
    tools.build(Path("/b"), tools.GAPBENCH_AND_GPU_TESTS)
    tools.build(preset="default", cwd=Path("/src"))
    assert [c for c, _, _ in seen] == [
        ["cmake", "--build", "/b", "--target", "gapbench", "--parallel", "2"],
        ["cmake", "--build", "/b", "--target", "gapbench", "gapbench_gpu_tests"],
        ["cmake", "--build", "--preset", "default", "--target", "gapbench"]]


def test_list_benchmarks_and_doctor(tmp_path):
    exe = make_fake(tmp_path, "gb", facts={"gpu.name": "Fake GPU"})
    assert tools.list_benchmarks(exe, "quick", "memcpy") == [COPY]
    status, data = tools.doctor(exe)
    assert status == 0 and data["facts"]["gpu.name"] == "Fake GPU"
    with pytest.raises(tools.CommandFailed) as refused:
        tools.list_benchmarks(exe, "quick", "^nothing")
    assert refused.value.status == 2 and "matches no benchmark" in refused.value.last
    silent = script(tmp_path / "silent", "echo 'not json'; exit 1\n")
    with pytest.raises(tools.CommandFailed, match=r"silent doctor --json failed \(exit status 1"):
        tools.doctor(silent)


@pytest.mark.parametrize("value", ["0", "-1", "x", "nan", "3601"])
def test_a_bad_slurm_timeout_names_the_variable(monkeypatch, value):
    monkeypatch.setenv(tools.TIMEOUT_VARIABLE, value)
    with pytest.raises(tools.UsageError, match=tools.TIMEOUT_VARIABLE):
        tools.slurm_timeout()


def test_slurm_that_is_not_installed_says_so(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(tools, "SBIN", ())
    with pytest.raises(tools.CommandFailed, match="^squeue not found: Slurm's commands are not "):
        tools.slurm(["squeue"])


# ---- no command any other way ----------------------------------------------------------------

# The processes gapbench_ci starts that are not commands run to their end: the daemons of the
# one-node cluster (stopped by fleet_cluster.stop) and gate-proof's busy loop on the other core.
STARTED_OTHERWISE = {"fleet_cluster.py": 1, "gate_proof.py": 1}


def subprocess_calls(source: str) -> list[str]:
    """subprocess.run, Popen, call, check_call, check_output and os.system in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name):
            name = f"{node.func.value.id}.{node.func.attr}"
            if name in ("subprocess.run", "subprocess.Popen", "subprocess.call",
                        "subprocess.check_call", "subprocess.check_output", "os.system",
                        "os.popen"):
                found.append(name)
    return found


def test_every_command_of_the_package_runs_through_tools():
    package = REPO / "ci" / "gapbench_ci"
    calls = {p.name: subprocess_calls(p.read_text(encoding="utf-8"))
             for p in sorted(package.glob("*.py")) if p.name not in ("tools.py", "processes.py")}
    assert {name: len(c) for name, c in calls.items() if c} == STARTED_OTHERWISE
    assert subprocess_calls("import subprocess\nsubprocess.run(['x'])\nos.system('y')\n") == [
        "subprocess.run", "os.system"]
