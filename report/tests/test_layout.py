"""The report package's layout: one home per concept (catalogue.py), data that goes one way
through render (load -> derive -> diagnose -> draw -> write: nothing imports render back), and
every command in compare's shape."""

from __future__ import annotations

import ast
import graphlib
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from gapbench_report.cli import main as commandline
from gapbench_report.core import catalogue
from gapbench_report.diagnose import rules as diagnose
from gapbench_report.inputs.results import load_results
from gapbench_report.render import model
from gapbench_report.render import page as page_writer
from gapbench_report.render import summary as summary_writer
from gapbench_report.writers import markdown as markdown_writer
from tests.synthetic import in_memory, runs

REPORT = Path(__file__).resolve().parents[1]
REPO = REPORT.parent
PACKAGE = REPORT / "gapbench_report"
# Every Python package of the repository that could hold a copy of the catalogue.
SOURCES = [PACKAGE, REPO / "ci" / "gapbench_ci", REPO / "probe"]
# Each command of gapbench-report and its module (a command's module is named for its command
# where no other module has that name: the fleet's is fleet_report).
COMMANDS = commandline.COMMANDS


def catalogue_copies(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each tuple, list or set of strings that spells three or more families
    (a family order) or two or more severities (a severity order)."""
    families, severities = set(catalogue.FAMILY_ORDER), set(catalogue.SEVERITIES)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            continue
        words = {e.value for e in node.elts
                 if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        if len(words & families) >= 3:
            found.append((node.lineno, "a family order"))
        if len(words & severities) >= 2:
            found.append((node.lineno, "a severity order"))
    return found


def python_files() -> list[Path]:
    return [p for folder in SOURCES for p in sorted(folder.rglob("*.py"))
            if "tests" not in p.relative_to(folder).parts and "__pycache__" not in p.parts]


def test_the_family_order_and_the_severities_have_one_home():
    files = python_files()
    assert len(files) > 20
    wrong = []
    for path in files:
        if path == PACKAGE / "core" / "catalogue.py":
            continue
        for line, what in catalogue_copies(ast.parse(path.read_text(encoding="utf-8"))):
            wrong.append(f"{path.relative_to(REPO)}:{line}: {what}")
    assert not wrong, "read gapbench_report.core.catalogue instead:\n" + "\n".join(wrong)


def test_doctors_severities_are_the_catalogues():
    """gapbench doctor (C++) ranks its findings by the declaration order of its Severity enum; the
    report ranks the same findings by catalogue.SEVERITIES. C++ cannot read the catalogue, so this
    holds the two to one order."""
    header = (REPO / "fixtures" / "doctor_rules.h").read_text(encoding="utf-8")
    declared = re.search(r"enum class Severity\s*\{([^}]*)\}", header)
    assert declared, "fixtures/doctor_rules.h declares no `enum class Severity { ... }`"
    names = tuple(name.strip() for name in declared.group(1).split(",") if name.strip())
    assert names == catalogue.SEVERITIES


def test_the_copy_check_finds_each_kind_of_copy():
    source = ('ORDER = ("preprocess", "conv", "lstm")\nS = ["problem", "warning"]\n'
              'ONE = ("conv",)\nX = {"lstm": 1, "conv": 2, "peak": 3}\n')
    assert catalogue_copies(ast.parse(source)) == [(1, "a family order"),
                                                   (2, "a severity order")]
    assert catalogue_copies(ast.parse((PACKAGE / "core" / "catalogue.py").read_text())) != []


def test_the_readers_use_the_catalogue():
    """render's, trend's and diagnose's orders are the catalogue's, not a second tuple."""
    assert diagnose.SEVERITIES is catalogue.SEVERITIES
    assert page_writer.FAMILY_BLURB is catalogue.FAMILY_BLURB
    assert not hasattr(importlib.import_module("gapbench_report.render.command"), "SEVERITY_ORDER")
    benchmarks = in_memory(runs("transfer/pinned/cpu/bytes:4096/manual_time", [1e-6])
                           + runs("zeta/x/cpu/n:1", [1e-6])
                           + runs("preprocess/vectorized/cpu/n:1", [1e-6])).benchmarks()
    assert list(model.by_family(benchmarks.values())) == ["preprocess", "transfer", "zeta"]
    assert sorted(["zeta", "peak", "conv", "alpha", "preprocess"], key=catalogue.family_rank) \
        == ["preprocess", "conv", "peak", "alpha", "zeta"]


def imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def test_nothing_imports_render_back():
    """render is the command at the end of the flow: the model, the writers, trend and explain
    read nothing from it (the nightly, in gapbench_ci, calls render.render as a command)."""
    wrong = [p.name for p in sorted(PACKAGE.rglob("*.py"))
             if p != PACKAGE / "render" / "command.py"
             and "gapbench_report.render.command" in imported_modules(p)]
    assert not wrong


def package_modules(package: str) -> dict[str, Path]:
    """Each module of an importable package (wherever it is installed from) -> its file."""
    spec = importlib.util.find_spec(package)
    assert spec and spec.submodule_search_locations, f"{package} is not importable here"
    root = Path(next(iter(spec.submodule_search_locations)))
    return {".".join((package, *p.relative_to(root).with_suffix("").parts)).removesuffix(
        ".__init__"): p for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts}


def loaded_by_name(name: str, source: str) -> set[str]:
    """The modules a module loads by name (importlib.import_module, entry points): each string
    it spells, and, where it calls import_module, each string its module-level tables hold at
    run time (cli.main's COMMANDS builds its names)."""
    tree = ast.parse(source)
    found = {n.value for n in ast.walk(tree)
             if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    if "import_module" in source:
        for value in vars(importlib.import_module(name)).values():
            if isinstance(value, str):
                found.add(value)
            elif isinstance(value, dict):
                found |= {v for v in value.values() if isinstance(v, str)}
            elif isinstance(value, (tuple, list, frozenset, set)):
                found |= {v for v in value if isinstance(v, str)}
    return found


def import_graph(modules: dict[str, Path], by_name: bool = True) -> dict[str, set[str]]:
    """Module -> the modules among `modules` it imports (anywhere in it, a function's imports
    too; `from . import x` resolved against its package; with `by_name`, what it loads through
    importlib too)."""
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        source = path.read_text(encoding="utf-8")
        found = loaded_by_name(name, source) if by_name else set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                found |= {base} | {f"{base}.{a.name}" for a in node.names}
        graph[name] = (found & set(modules)) - {name}
    return graph


def import_circle(graph: dict[str, set[str]]) -> list[str]:
    """One circle of imports in `graph` (its modules in order, the first again last), or []."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        return list(e.args[1])
    return []


def both_packages() -> dict[str, Path]:
    return {**package_modules("gapbench_report"), **package_modules("gapbench_ci")}


def test_no_import_circles():
    """Each package's modules import one way (render's model before its writers, explain's rules
    before its writer, the fleet's judging before its page), and neither package back into the
    other."""
    graph = import_graph(both_packages())
    assert len(graph) > 40 and graph["gapbench_report.fleet.command"] >= {
        "gapbench_report.fleet.judge", "gapbench_report.fleet.page"}
    assert import_circle(graph) == []


def test_the_circle_check_finds_a_circle():
    assert import_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) in (
        ["a", "c", "b", "a"], ["b", "a", "c", "b"], ["c", "b", "a", "c"])
    assert import_circle({"a": {"b"}, "b": set()}) == []
    tree = REPORT / "gapbench_report"
    assert import_graph({"gapbench_report.render.model": tree / "render" / "model.py",
                         "gapbench_report.diagnose.rules": tree / "diagnose" / "rules.py"},
                        by_name=False) == {
        "gapbench_report.render.model": {"gapbench_report.diagnose.rules"},
        "gapbench_report.diagnose.rules": set()}


def test_the_circle_check_sees_the_commands_loaded_by_name():
    """cli.main loads each command through importlib, and a command that imported cli.main back
    would close a circle that no import statement shows."""
    graph = import_graph(package_modules("gapbench_report"))
    assert {f"gapbench_report.{c}.command" for c in COMMANDS} <= graph["gapbench_report.cli.main"]
    planted = {**graph, "gapbench_report.render.command":
               graph["gapbench_report.render.command"] | {"gapbench_report.cli.main"}}
    assert import_circle(planted) != []


def test_no_two_modules_share_a_name():
    """A module's name within its package says which one it is, across the report's packages
    and the CI's (`fleet.py` was both the CI's fleet command and the report's): each command's
    entry is <command>.command, and no two modules share a package and a name."""
    names = Counter(".".join(name.split(".")[-2:]) for name, path in both_packages().items()
                    if path.stem not in ("__init__", "__main__"))
    assert len(names) > 40
    assert [name for name, n in names.items() if n > 1] == []


def test_contributing_md_names_every_module_of_the_report():
    """docs/contributing.md's table of the report's modules follows the package: a module that
    is not in it (a new one, or one renamed) has no stated job there."""
    text = (REPO / "docs" / "contributing.md").read_text(encoding="utf-8")
    table = text[text.index("### The report packages"):text.index("`gapbench_ci` is")]
    named = set(re.findall(r"`([a-z_]+/[a-z_/]+)\.py`", table))
    files = {str(p.relative_to(PACKAGE).with_suffix("")) for p in PACKAGE.rglob("*.py")
             if "__pycache__" not in p.parts and p.stem not in ("__init__", "__main__")}
    assert len(files) > 30 and files - named == set(), "modules missing from contributing.md"


LATER_STEPS = ("gapbench_report.render.command", "gapbench_report.render.plots",
               "gapbench_report.trend.command", "gapbench_report.explain.command", "matplotlib")


@pytest.mark.parametrize("module", ["render/model", "render/summary", "render/page",
                                    "writers/markdown", "writers/html", "core/catalogue"])
def test_derive_and_write_never_import_the_command_or_the_drawing(module):
    imported = imported_modules(PACKAGE / f"{module}.py")
    assert not {m for m in imported if m.startswith(LATER_STEPS)}


# The modules that load, derive and diagnose, and what a writer may take from them: the report's
# types and constants. build_report derives every row once; a writer that imported a function
# from these would compute its own (twice, once per writer).
DERIVING = ("gapbench_report.render.model", "gapbench_report.core.framework",
            "gapbench_report.diagnose.rules", "gapbench_report.core.metrics",
            "gapbench_report.inputs.results")
WRITERS_MAY_IMPORT = {
    # The page's fixed words (headers, blurbs) are render.headings', which derives nothing.
    "gapbench_report.render.model": {"Report", "FamilySection", "VersusSection"},
    "gapbench_report.core.metrics": {"STABILITY_DRIFT"},
}


def deriving_imports(source: str) -> list[str]:
    """"module.name" for each name the source imports from a deriving module; a deriving module
    imported whole is "gapbench_report.name" (a writer could call anything in it)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith(DERIVING)]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # from . import x, from .model import y
                module = "gapbench_report" + (f".{module}" if module else "")
            for a in node.names:
                name = f"{module}.{a.name}"
                if module.startswith(DERIVING) or name.startswith(DERIVING):
                    found.append(name)
    return found


def not_allowed(source: str) -> list[str]:
    return [name for name in deriving_imports(source)
            if name.rpartition(".")[2] not in WRITERS_MAY_IMPORT.get(name.rpartition(".")[0], ())]


@pytest.mark.parametrize("module", ["render/summary", "render/page"])
def test_the_writers_print_the_model_and_compute_nothing(module):
    """The rows, groups and headlines are the model's (derived once, in build_report): the
    writers take only its types and constants, and nothing that computes."""
    source = (PACKAGE / f"{module}.py").read_text(encoding="utf-8")
    assert "gapbench_report.render.model.Report" in deriving_imports(source)
    assert not not_allowed(source), f"{module}.py computes; read the row off Report instead"


def test_the_writers_allow_list_holds_no_function():
    for module, names in WRITERS_MAY_IMPORT.items():
        for name in names:
            value = getattr(importlib.import_module(module), name)
            assert inspect.isclass(value) or not callable(value), f"{module}.{name}"


def test_the_import_check_finds_each_way_of_computing():
    assert not_allowed("from gapbench_report.render.model import Report\n"
                       "from gapbench_report.render.headings import TABLE_ROWS_SHOWN\n"
                       "from gapbench_report.core.labels import md_cell\n") == []
    assert not_allowed("from gapbench_report.render.model import Report, table_rows\n"
                       "from gapbench_report.core import framework\n"
                       "import gapbench_report.core.metrics\n"
                       "from .diagnose.rules import verdict\n") == [
        "gapbench_report.render.model.table_rows", "gapbench_report.core.framework",
        "gapbench_report.core.metrics", "gapbench_report.diagnose.rules.verdict"]


def test_the_model_and_writers_load_without_matplotlib():
    """The derive and write steps need no drawing library: a page of explain's, or summary.md,
    costs no matplotlib import."""
    code = ("import sys, gapbench_report.render.model, gapbench_report.writers.markdown, "
            "gapbench_report.writers.html, gapbench_report.compare.command, "
            "gapbench_report.check.command; "
            "print(sorted(m for m in sys.modules if m.startswith('matplotlib')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPORT)}, timeout=120,
                          check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr


def test_markdown_and_html_writers_read_the_same_rows():
    """Both writers print the rows build_report derived once: a ratio's row as the model holds
    it, whatever it says, is the row in both files."""
    run = in_memory([])
    report = model.build_report([run], [])
    assert report.ratio_rows == []
    report.portable = [("this run", {}), ("baseline t4", {})]
    report.ratio_rows = [["peak ratio (as the model put it)", "0.5", "—"]]
    assert "| peak ratio (as the model put it) | 0.5 | — |" in \
        summary_writer.summary_markdown(report)
    assert ('<td>peak ratio (as the model put it)</td><td class="num">0.5</td>'
            '<td class="num">—</td>') in page_writer.html_page(report, {})


def test_build_report_derives_every_row_the_writers_print():
    """The rows on Report are the row builders' own, so the writers have nothing left to do."""
    run = [load_results(REPORT / "tests" / "data" / "render" / f"{f}.json")
           for f in ("preprocess", "transfer")]
    report = model.build_report(run, run[:1])
    assert report.machine_line == model.machine_line(report.context)
    assert report.ratio_rows == model.ratio_rows(report.portable, run) != []
    assert report.ceilings == model.ceilings_rows(run) != []
    assert [s.family for s in report.sections] == list(report.families) == ["preprocess",
                                                                              "transfer", "peak"]
    assert report.sections[1].rows == model.table_rows(report.families["transfer"])
    assert report.sections[1].skipped == model.skipped_by_reason(report.families["transfer"])
    facts, defects, lessons = model.split_findings(report.findings)
    assert (report.facts, report.defects, report.lessons) == (model.grouped_findings(facts),
                                                              defects, lessons)
    assert report.fingerprint[-1] == ["results files", "preprocess.json, transfer.json",
                                      "preprocess.json"]


def test_trend_prints_its_tables_with_the_writers_helpers():
    """markdown_writer and html_writer are shared by render and trend: trend.md's and trend's
    index.html tables come from the same helpers as summary.md's and index.html's."""
    source = (PACKAGE / "trend" / "command.py").read_text(encoding="utf-8")
    imported = imported_modules(PACKAGE / "trend" / "command.py")
    assert {"gapbench_report.writers.html.table",
            "gapbench_report.writers.markdown.markdown_table"} <= imported
    assert not re.search(r"<t[rdh][ >]|<table|\|---", source), "trend builds a table of its own"


def test_a_markdown_table_aligns_numbers_and_quotes_code():
    lines = markdown_writer.markdown_table(["name", "n"], [["a|<b>", 2], ["`x`|y", "—"]], {1},
                                           code={0})
    assert lines == ["| name | n |", "|---|---:|", r"| `a\|<b>` | 2 |", r"| `` `x`\|y `` | — |"]
    assert markdown_writer.markdown_table(["a"], [["x|<y>"]]) == [
        "| a |", "|---|", r"| x\|&lt;y&gt; |"]


# ---- every command in compare's shape ------------------------------------------------------

# Imports a command may make inside a function, and why: none but compare's statistics.
LAZY_IMPORTS = {("compare", "mann_whitney_batch"): {"scipy.stats"}}


def module_file(command: str) -> Path:
    """A command's entry: gapbench_report.<command>.command, in the package of its own."""
    return PACKAGE / Path(*COMMANDS[command].split(".")[1:]).with_suffix(".py")


def test_the_commands_are_the_reports_own():
    assert list(COMMANDS) == ["render", "compare", "diagnose", "check", "trend", "explain",
                              "fleet"]
    assert all(module_file(command).is_file() for command in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_compares_shape(command):
    module = importlib.import_module(COMMANDS[command])
    assert callable(module._parser) and callable(module._run)
    assert inspect.signature(module.main).parameters["argv"].default is None
    assert module._parser().prog == module.PROG


@pytest.mark.parametrize("command", COMMANDS)
def test_commands_import_at_the_top(command):
    tree = ast.parse(module_file(command).read_text(encoding="utf-8"))
    wrong = []
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        allowed = LAZY_IMPORTS.get((command, function.name), set())
        for node in ast.walk(function):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = ({a.name for a in node.names} if isinstance(node, ast.Import)
                         else {node.module})
                if not names <= allowed:
                    wrong.append(f"{module_file(command).name}:{node.lineno}: {sorted(names)} in "
                                 f"{function.name}()")
    assert not wrong
