"""gapbench-ci, gapbench_ci's own entry point: every command reached through it, one line and
exit status 2 for an unknown one, the console script and the entry points that ci/pyproject.toml
installs, and the package's imports: no module imported back, no circle."""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from gapbench_report.cli import main as dispatcher

from gapbench_ci import __main__ as ci
from tests import PYTHONPATH, REPO
from tests.checks import help_and_one_line_for_a_bad_flag
from tests.test_commandline import CLOSED_CHILD, with_entry_points

CI = REPO / "ci"
ENV = {**os.environ, "PYTHONPATH": PYTHONPATH}
PROGS = {"baseline": "ci/baseline", "nightly": "ci/nightly", "gate-proof": "ci/gate-proof",
         "gpu-check": "ci/gpu-check"}


@pytest.mark.parametrize("command", PROGS)
def test_each_command_is_reached(capsys, command):
    assert ci.main([command, "--help"]) == 0
    assert capsys.readouterr().out.startswith(f"usage: {PROGS[command]} ")
    assert ci.main([command, "--no-such-flag"]) == 2  # the command's own one line
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"{PROGS[command]}: "), err


def test_help_lists_every_command(capsys):
    assert ci.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("gapbench-ci: ")
    for command in PROGS:
        assert f"gapbench-ci {command} " in out
    assert ci.main([]) == 2  # no command: the same text, and the status of bad arguments
    assert "gapbench-ci nightly " in capsys.readouterr().out


def test_an_unknown_command_is_one_line_and_2(capsys):
    assert ci.main(["render", "--help"]) == 2  # the report's command, not this package's
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == ["gapbench-ci: unknown command 'render' (use baseline, nightly, "
                                "gate-proof, gpu-check, fleet, steady-run)"]


def test_python_dash_m_runs_it():
    done = subprocess.run([sys.executable, "-m", "gapbench_ci", "gpu-check", "--help"], env=ENV,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("usage: ci/gpu-check "), done.stderr
    done = subprocess.run([sys.executable, "-m", "gapbench_ci", "nope"], env=ENV,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr


def test_the_console_script_points_at_the_dispatcher():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    scripts = tomllib.loads((CI / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["gapbench-ci"].partition(":")
    assert getattr(importlib.import_module(module), name) is ci.main


def imported_modules(path: Path) -> set[str]:
    """The gapbench_ci modules a source file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "gapbench_ci":
            found.update(f"gapbench_ci.{a.name}" for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return {m for m in found if m.startswith("gapbench_ci.")}


def test_no_module_a_ci_script_runs_imports_itself_back():
    """ci/X runs its module as __main__ (python -m gapbench_ci.X): a module it imports, directly
    or through others, that imported it back would load a second copy, with classes of its own
    (ci/baseline's Refused then ended as "internal error", exit 2, where gapbench-ci baseline
    refused with exit 1)."""
    package = CI / "gapbench_ci"
    imports = {f"gapbench_ci.{p.stem}": imported_modules(p) for p in package.glob("*.py")}
    scripts = [s for s in sorted(CI.iterdir()) if s.is_file()]
    as_main = {m for s in scripts
               for m in re.findall(r"-m (gapbench_ci\.\w+)", s.read_text(encoding="utf-8"))}
    assert "gapbench_ci.baseline" in as_main
    for module in sorted(as_main):
        reached, todo = set(), list(imports[module])
        while todo:
            m = todo.pop()
            if m not in reached:
                reached.add(m)
                todo += imports.get(m, ())
        assert module not in reached, f"{module} is imported back by a module it imports"


def import_graph() -> dict[str, set[str]]:
    """Each gapbench_ci module's imports of the package's other modules."""
    package = CI / "gapbench_ci"
    return {f"gapbench_ci.{p.stem}": imported_modules(p) - {f"gapbench_ci.{p.stem}"}
            for p in sorted(package.glob("*.py"))}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of `graph`: each set of modules that reach one another (a strongly
    connected component of more than one module, or a module that imports itself)."""
    found, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in graph.get(module, ()):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1 or module in graph.get(module, ()):
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_circle_in_the_package():
    graph = import_graph()
    assert len(graph) > 15 and "gapbench_ci.tools" in graph
    assert circles(graph) == []


def test_the_circle_check_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"a"}}) == [["a"]] and circles({"a": {"b"}, "b": set()}) == []


# ---- every command of the package, and the report's commands it adds --------------------------

COMMANDS = ["gapbench_ci.baseline", "gapbench_ci.nightly", "gapbench_ci.gate_proof",
            "gapbench_ci.gpu_check", "gapbench_ci.gpu_kit", "gapbench_ci.gpu_quick_estimate",
            "gapbench_ci.fleet_submit", "gapbench_ci.fleet_status"]


@pytest.mark.parametrize("module", COMMANDS)
def test_every_command_has_help_and_one_line_for_a_bad_flag(capsys, module):
    help_and_one_line_for_a_bad_flag(capsys, module)


@pytest.mark.parametrize("module", COMMANDS)
def test_every_command_opens_closed_descriptors_on_dev_null(tmp_path, module):
    report = tmp_path / "report.txt"
    subprocess.run([sys.executable, "-c", CLOSED_CHILD, module, str(report)], env=ENV,
                   timeout=120, check=False)
    assert report.read_text() == "[True, True, True]"


def declared_commands() -> dict[str, str]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    project = tomllib.loads((CI / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project["entry-points"][dispatcher.ENTRY_POINT_GROUP]


def test_pyproject_declares_the_report_commands_as_entry_points_that_load():
    declared = declared_commands()
    assert sorted(declared) == sorted(dispatcher.CHECKOUT_SCRIPTS) == ["baseline", "nightly"]
    for name, target in declared.items():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), name


def test_baseline_and_nightly_run_through_the_entry_points_pyproject_declares(
        capsys, monkeypatch, tmp_path):
    with_entry_points(monkeypatch, tmp_path,
                      "\n".join(f"{name} = {target}"
                                for name, target in declared_commands().items()))
    for command in ("baseline", "nightly"):
        assert dispatcher.main([command, "--help"]) == 0
        assert capsys.readouterr().out.startswith(f"usage: ci/{command} ")
