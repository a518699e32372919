"""The packages' dependency direction: gapbench_ci (orchestration: builds, runs, git; ci/) may
import gapbench_report (analysis and drawing: reads JSON); gapbench_report never imports
gapbench_ci, nor names one of its modules: `gapbench-report baseline|nightly` reach gapbench_ci
through the entry points ci/pyproject.toml declares (checked in ci/tests/test_ci_main.py)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from gapbench_report.cli import main as commandline

REPORT = Path(__file__).resolve().parents[1] / "gapbench_report"
PYPROJECT = REPORT.parent / "pyproject.toml"


def is_ci(name: str | None) -> bool:
    return name is not None and (name == "gapbench_ci" or name.startswith("gapbench_ci."))


def references(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, kind, name) for every import of gapbench_ci and every string naming one of its
    modules (importlib.import_module("gapbench_ci.x"), __import__ and the like)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, "import", a.name) for a in node.names if is_ci(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and is_ci(node.module):
            found.append((node.lineno, "import", node.module))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and is_ci(node.value):
            found.append((node.lineno, "string", node.value))
    return found


def test_the_analysis_package_never_imports_the_orchestration_one():
    modules = sorted(REPORT.rglob("*.py"))
    assert len(modules) > 10
    wrong = []
    for path in modules:
        rel = path.relative_to(REPORT).as_posix()
        for line, kind, name in references(ast.parse(path.read_text(encoding="utf-8"))):
            wrong.append(f"gapbench_report/{rel}:{line}: {kind} {name}")
    assert not wrong, "gapbench_report must not import gapbench_ci:\n" + "\n".join(wrong)


def test_the_check_finds_each_kind_of_reference():
    source = ("import gapbench_ci\nfrom gapbench_ci.runner import git\n"
              "import importlib\nimportlib.import_module('gapbench_ci.nightly')\n"
              "from gapbench_report.inputs import results\nname = 'gapbench_cider'\n")
    assert references(ast.parse(source)) == [
        (1, "import", "gapbench_ci"), (2, "import", "gapbench_ci.runner"),
        (4, "string", "gapbench_ci.nightly")]


@pytest.mark.parametrize("command", sorted(commandline.COMMANDS))
def test_every_sub_command_names_a_module_with_main(command):
    assert callable(importlib.import_module(commandline.COMMANDS[command]).main)


def test_the_console_script_is_the_dispatcher():
    tomllib = pytest.importorskip("tomllib")
    scripts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["gapbench-report"] == "gapbench_report.cli.main:main"


def test_the_report_project_installs_nothing_of_gapbench_ci():
    """gapbench_ci is a project of its own (ci/pyproject.toml): the report's wheel holds neither
    its modules nor its commands."""
    tomllib = pytest.importorskip("tomllib")
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert not any(is_ci(p.rstrip("*")) for p in data["tool"]["setuptools"]["packages"]["find"]
                   ["include"])
    named = [*data["project"]["scripts"].values(),
             *data["project"].get("entry-points", {}).get(commandline.ENTRY_POINT_GROUP,
                                                          {}).values()]
    assert not [t for t in named if is_ci(t.partition(":")[0])]
