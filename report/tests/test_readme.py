"""The README and docs/ stay true: short, linked, and every command in the README runs as written
(its program, subcommand, preset and flags exist)."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
MAX_README_LINES = 150
# A prose sentence this long said twice is text copied, not a phrase reused.
MIN_DUPLICATE_CHARS = 80

FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def code_blocks(text: str) -> list[list[str]]:
    blocks, current = [], None
    for line in text.splitlines():
        if FENCE.match(line):
            if current is None:
                current = []
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text (links and code marks dropped), lower case,
    every character but letters, digits, spaces, hyphens and underscores removed, spaces as
    hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a file's headings; a repeated heading gets -1, -2, ... as on GitHub."""
    found: set[str] = set()
    count: dict[str, int] = {}
    for line in prose_lines(path.read_text(encoding="utf-8")):
        if m := HEADING.match(line):
            slug = github_slug(m.group(2))
            n = count.get(slug, 0)
            count[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def links(path: Path) -> list[str]:
    return [m.group(1) for line in prose_lines(path.read_text(encoding="utf-8"))
            for m in LINK.finditer(line)]


def test_github_slug():
    assert github_slug("Precision: the `math` axis") == "precision-the-math-axis"
    assert github_slug("`fixtures/`, the harness") == "fixtures-the-harness"
    assert github_slug("Why 16 rounds of 2 repetitions") == "why-16-rounds-of-2-repetitions"


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"


def test_every_doc_is_linked_from_the_readme():
    linked = {(README.parent / target.split("#")[0]).resolve()
              for target in links(README) if not target.startswith(("http:", "https:", "#"))}
    unlinked = [p.name for p in sorted(DOCS.glob("*.md")) if p.resolve() not in linked]
    assert not unlinked, f"docs not linked from README.md: {unlinked}"


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.name)
def test_relative_links_resolve(path):
    broken = []
    for target in links(path):
        if target.startswith(("http:", "https:", "mailto:")):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with the anchor #{anchor} in {dest.name}")
    assert not broken, f"{path.name}: " + "; ".join(broken)


# Where code points a reader at the docs ("Statistics: docs/report.md#compare").
SOURCE_DOC_LINK = re.compile(r"docs/([\w-]+\.md)(?:#([\w-]+))?")
SOURCE_SUFFIXES = {".py", ".h", ".cpp", ".cu", ".cmake", ".sh", ".toml", ".txt"}


def source_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the sources cannot be listed")
    return [REPO / name for name in listed.stdout.splitlines()
            if Path(name).suffix in SOURCE_SUFFIXES or name.startswith("ci/")]


def test_links_from_the_sources_into_docs_resolve():
    broken = []
    for path in source_files():
        if not path.is_file():
            continue
        for m in SOURCE_DOC_LINK.finditer(path.read_text(encoding="utf-8", errors="replace")):
            dest = DOCS / m.group(1)
            where = f"{path.relative_to(REPO)}: docs/{m.group(1)}"
            if not dest.exists():
                broken.append(f"{where}: no such file")
            elif m.group(2) and m.group(2) not in anchors(dest):
                broken.append(f"{where}#{m.group(2)}: no such heading")
    assert not broken, "\n".join(broken)


def sentences(path: Path) -> list[str]:
    """Prose sentences, white space folded; tables and headings left out."""
    lines = [line.strip() for line in prose_lines(path.read_text(encoding="utf-8"))
             if not line.lstrip().startswith(("|", "#"))]
    text = re.sub(r"\s+", " ", re.sub(r"(^|\s)(?:[-*>]|\d+\.)\s", " ", " ".join(lines)))
    return [s.strip() for s in re.split(r"(?<=[.!?:;])\s+", text)
            if len(s.strip()) >= MIN_DUPLICATE_CHARS]


def test_no_text_is_said_twice():
    where: dict[str, str] = {}
    twice = []
    for path in markdown_files():
        for s in sentences(path):
            if s in where:
                twice.append(f"{where[s]} and {path.name}: {s[:70]}...")
            where.setdefault(s, path.name)
    assert not twice, "\n".join(twice)


# Twelve words in a row, said both in docs/ and in a docstring or comment, is text copied.
COPIED_WORDS = 12
CPP_COMMENT = re.compile(r"^\s*(//+|\*|#(?!include|pragma|define|if|endif|else|undef))")


def plain_words(text: str) -> list[str]:
    """The words of a text with Markdown's links, code marks, emphasis and tables dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[`*>|]", " ", text).split()


def runs_of_words(words: list[str]) -> set[str]:
    return {" ".join(words[i:i + COPIED_WORDS]) for i in range(len(words) - COPIED_WORDS + 1)}


def code_prose(path: Path) -> list[str]:
    """A source file's prose: a Python file's docstrings and comments, else its comment lines."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".py":
        return [" ".join(CPP_COMMENT.sub("", line) for line in text.splitlines()
                         if CPP_COMMENT.match(line))]
    tree = ast.parse(text)
    prose = [doc for node in ast.walk(tree)
             if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
             and (doc := ast.get_docstring(node))]
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    prose.append(" ".join(t.string[1:] for t in tokens if t.type == tokenize.COMMENT))
    return prose


def copied_into_code() -> list[str]:
    documented: set[str] = set()
    for path in markdown_files():
        documented |= runs_of_words(plain_words(path.read_text(encoding="utf-8")))
    copies = []
    for path in source_files():
        if (path.suffix not in {".py", ".h", ".cpp", ".cu", ".cmake"} or not path.is_file()
                or "data" in path.relative_to(REPO).parts):
            continue
        for prose in code_prose(path):
            if found := runs_of_words(plain_words(prose)) & documented:
                copies.append(f"{path.relative_to(REPO)}: \"{min(found)} ...\"")
    return copies


def test_no_docstring_or_comment_repeats_the_docs():
    copies = copied_into_code()
    assert not copies, ("said in docs/ already (leave a line and a link):\n"
                        + "\n".join(copies))


def test_the_copy_check_sees_a_copied_comment(tmp_path, monkeypatch):
    sentence = next(s for s in sentences(DOCS / "reading-results.md"))
    copy = tmp_path / "copy.h"
    copy.write_text(f"// {sentence}\nint x;\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "source_files", lambda: [copy])
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    copies = copied_into_code()
    assert len(copies) == 1 and copies[0].startswith("copy.h: ")


# ---- the README's commands ---------------------------------------------------------------------

def readme_commands() -> list[list[str]]:
    """Every command of the README's code blocks, as words: continuation lines joined, comments
    dropped, `a && b` and `a | b` split, environment assignments in front dropped."""
    commands = []
    for block in code_blocks(README.read_text(encoding="utf-8")):
        for line in "\n".join(block).replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            current: list[str] = []
            for word in [*words, "&&"]:
                if word in ("&&", "||", "|", ";"):
                    while current and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", current[0]):
                        current.pop(0)
                    if current:
                        commands.append(current)
                    current = []
                else:
                    current.append(word)
    return commands


def flags(words: list[str]) -> list[str]:
    return [w for w in words if w.startswith("-")]


def flag_names(words: list[str]) -> list[str]:
    return [w.split("=", 1)[0] for w in flags(words)]


def run(argv: list[str], **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def missing_flags(words: list[str], help_text: str) -> list[str]:
    return [f for f in flag_names(words) if not re.search(re.escape(f) + r"(?![\w-])", help_text)]


def check_script(words: list[str]) -> str | None:
    script = REPO / words[0]
    if not script.is_file():
        return f"{words[0]}: no such script"
    done = run(["bash", str(script), "--help"])
    if done.returncode != 0:
        return f"{words[0]} --help: exit {done.returncode}"
    if missing := missing_flags(words[1:], done.stdout + done.stderr):
        return f"{words[0]}: {missing} not in its --help"
    return None


def check_preset(words: list[str]) -> str | None:
    presets = json.loads((REPO / "CMakePresets.json").read_text(encoding="utf-8"))
    kind = ("workflowPresets" if "--workflow" in words else
            "testPresets" if words[0] == "ctest" else
            "buildPresets" if "--build" in words else "configurePresets")
    if "--preset" not in words:
        return f"{shlex.join(words)}: the test knows only `--preset P` forms"
    name = words[words.index("--preset") + 1]
    if name not in {p["name"] for p in presets.get(kind, [])}:
        return f"{shlex.join(words)}: no {kind} entry named {name!r} in CMakePresets.json"
    return None


def check_report(words: list[str]) -> str | None:
    command = words[0]
    done = run([sys.executable, "-m", "gapbench_report", command, "--help"],
               PYTHONPATH=str(REPO / "report"))
    if done.returncode != 0:
        return f"gapbench-report {command}: no such command ({done.stderr.strip()[:200]})"
    if missing := missing_flags(words[1:], done.stdout):
        return f"gapbench-report {command}: {missing} not in its --help"
    return None


def gapbench_binary() -> Path | None:
    path = Path(os.environ.get("GAPBENCH_BINARY", REPO / "build" / "default" / "gapbench"))
    return path if path.is_file() and os.access(path, os.X_OK) else None


def check_gapbench(words: list[str], tmp_path: Path) -> str | None:
    binary = gapbench_binary()
    if binary is None:
        pytest.skip("no gapbench executable (set GAPBENCH_BINARY or build build/default)")
    help_text = run([str(binary), "--help"]).stdout
    if words[1:2] == ["doctor"]:
        return (f"gapbench doctor: {missing} not in --help"
                if (missing := missing_flags(words[2:], help_text)) else None)
    for flag in flags(words[1:]):
        if flag == "--help" or not flag.startswith("--benchmark_"):
            if missing := missing_flags([flag], help_text):
                return f"gapbench: {missing} not in its --help"
            continue
        # Google Benchmark's own flags: it refuses one it does not know (exit 2). Listing the
        # tests runs nothing; a results file goes to a temporary folder.
        name = flag.split("=", 1)[0]
        probe = f"{name}={tmp_path / 'out.json'}" if name == "--benchmark_out" else flag
        done = run([str(binary), probe, "--benchmark_list_tests=true",
                    "--benchmark_filter=^peak/memcpy/"])
        if done.returncode != 0:
            return f"gapbench {flag}: exit {done.returncode}: {done.stderr.strip()[:200]}"
    return None


def check_command(words: list[str], tmp_path: Path) -> str | None:
    """None when the command's program, subcommand, preset and flags exist; else what is wrong."""
    if words[0] == "bash":
        words = words[1:]
    program = Path(words[0])
    if words[0].startswith("ci/"):
        return check_script(words)
    if words[0] in ("cmake", "ctest"):
        return check_preset(words)
    if program.name == "gapbench-report":
        return check_report(words[1:])
    if program.name.startswith("python") and words[1:3] == ["-m", "gapbench_report"]:
        return check_report(words[3:])
    if program.name == "gapbench":
        return check_gapbench(words, tmp_path)
    return f"{shlex.join(words)}: a command this test cannot check; teach it, or leave it out"


@pytest.mark.parametrize("words", readme_commands(), ids=shlex.join)
def test_readme_command_exists(words, tmp_path):
    assert (problem := check_command(words, tmp_path)) is None, problem


def test_readme_has_commands():
    commands = [shlex.join(w) for w in readme_commands()]
    assert "cmake --workflow --preset bench" in commands
    assert "cmake --workflow --preset test" in commands


def test_ci_runs_the_readme_test_command():
    assert "cmake --workflow --preset test" in (REPO / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize("words, wrong", [
    (["bash", "ci/setup", "--no-such-flag"], "not in its --help"),
    (["ci/no-such-script"], "no such script"),
    (["cmake", "--workflow", "--preset", "no-such-preset"], "no workflowPresets entry"),
    (["ctest", "--preset", "bench-nightly"], "no testPresets entry"),
    ([".venv/bin/gapbench-report", "render", "x.json", "--no-such-flag"], "not in its --help"),
    ([".venv/bin/gapbench-report", "no-such-command"], "no such command"),
    (["python", "-m", "gapbench_report", "compare", "--bogus"], "not in its --help"),
    (["make", "all"], "cannot check"),
])
def test_a_wrong_command_is_caught(words, wrong, tmp_path):
    assert wrong in (check_command(words, tmp_path) or "")


def test_a_wrong_gapbench_flag_is_caught(tmp_path):
    if gapbench_binary() is None:
        pytest.skip("no gapbench executable (set GAPBENCH_BINARY or build build/default)")
    assert check_command(["build/default/gapbench", "--benchmark_bogus=1"], tmp_path)
    assert check_command(["build/default/gapbench", "--profil=full"], tmp_path)
    assert check_command(["build/default/gapbench", "doctor", "--jsn"], tmp_path)
    assert check_command(["build/default/gapbench", "--benchmark_repetitions=2"], tmp_path) is None


def test_the_readme_example_is_what_the_report_says_of_the_committed_h200_run():
    """The diagnosis quoted under "What you get" is the report's own, word for word, on the files
    it names: the verdict whole, every finding's title, and each quoted text up to its cuts."""
    from gapbench_report.diagnose import rules as diagnose  # noqa: PLC0415
    from gapbench_report.inputs.results import load_results  # noqa: PLC0415
    text = README.read_text(encoding="utf-8")
    quote = [line[2:] if line.startswith("> ") else line[1:]
             for line in text[text.index("## What you get"):
                              text.index("## Compare with a baseline")].splitlines()
             if line.startswith(">")]
    quoted = " ".join(line.strip() for line in quote)
    baselines = REPO / "results" / "baselines"
    findings = diagnose.diagnose([load_results(baselines / "h200-ubuntu24.json"),
                                  load_results(baselines / "h200-ubuntu24.framework-torch.json")])
    verdict = diagnose.verdict(findings)
    assert f"**{verdict}**" in quoted
    by_title = {f.title: f for f in findings}
    items = re.findall(r"- (?:\*\*\w+\*\* — )?\*\*(.+?)\*\*: (.+?)(?= - \*\*| gapbench's own "
                       r"defects| Lessons that hold|$)", quoted)
    assert len(items) == 6, items
    for title, body in items:
        assert title in by_title, title
        for part in (p.strip() for p in body.split("…")):
            assert part in by_title[title].text, (title, part)


def test_the_readme_versus_excerpt_is_what_the_report_says_of_the_planted_quota():
    """The excerpt under "Compare with a baseline" is the report's summary.md of the planted
    1-CPU container quota against the same machine's plain run (report/tests/data/versus/
    this-machine), word for word up to its cuts, the quota named first."""
    from gapbench_report.inputs import machines  # noqa: PLC0415
    from gapbench_report.render import model
    from gapbench_report.render import summary as markdown_writer
    text = README.read_text(encoding="utf-8")
    block = text[text.index("<!-- versus:begin"):text.index("<!-- versus:end")]
    quote = [line[2:] if line.startswith("> ") else line[1:] for line in block.splitlines()
             if line.startswith(">")]
    data = REPO / "report" / "tests" / "data" / "versus" / "this-machine"
    runs, baselines, _ = machines.read_inputs([data / "quota-1cpu"], [data / "plain-1"])
    flat = " ".join(markdown_writer.summary_markdown(model.build_report(runs, baselines)).split())
    paragraphs = " ".join(line.strip() or "\n" for line in quote).split("\n")
    checked = 0
    for part in (p for chunk in paragraphs for p in chunk.split("…")):
        part = " ".join(part.split())
        if part:
            assert part in flat, part
            checked += 1
    assert checked == 5
    assert "this process may use 1 CPU here and 2 there (a container quota here): 100%" in \
        " ".join(" ".join(quote).split())


def test_the_readme_framework_comparison_is_what_the_report_says_of_the_planted_run():
    """The framework excerpt under "Compare with a baseline" is the report's summary.md of the
    planted TensorFlow run with oneDNN off against its default (report/tests/data/versus/
    framework/tensorflow-onednn-off), word for word up to its cuts."""
    from gapbench_report.inputs import machines  # noqa: PLC0415
    from gapbench_report.inputs.results import load_results  # noqa: PLC0415
    from gapbench_report.render import model
    from gapbench_report.render import summary as markdown_writer
    text = README.read_text(encoding="utf-8")
    block = text[text.index("<!-- framework-versus:begin"):text.index("<!-- framework-versus:end")]
    quote = " ".join(line[2:] for line in block.splitlines() if line.startswith("> "))
    data = REPO / "report" / "tests" / "data" / "versus" / "framework"
    case = data / "tensorflow-onednn-off"
    report = model.build_report(
        [load_results(data / "library.json"),
         load_results(case / "planted" / "framework-tensorflow.json")],
        [machines.machine_run(case / "default-stack")])
    flat = " ".join(markdown_writer.summary_markdown(report).split())
    parts = [" ".join(p.split()) for p in quote.split("…") if p.strip()]
    assert len(parts) == 3
    for part in parts:
        assert part in flat, part
    assert "your stack for 3.60x (TensorFlow's oneDNN optimisations" in quote


# The side-by-side table of results/baselines/README.md: each time row's benchmark, per machine.
SIDE_BY_SIDE_ROWS = {
    "conv n 32 · c 64 · hw 56 · k 64 · r 3, cuDNN float32 (`math:fp32`)":
        "conv/cudnn/gpu/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1/math:fp32/manual_time",
    "the same, cuDNN TF32 (`math:tf32`)":
        "conv/cudnn/gpu/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1/math:tf32/manual_time",
    "the same, cuDNN fp16 NHWC (`math:fp16`)":
        "conv/cudnn/gpu/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1/math:fp16/manual_time",
    "the same, gapbench's naive float32 kernel":
        "conv/naive/gpu/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1/manual_time",
    "GEMM 4096², cuBLAS float32 (`peak/sgemm`)": "peak/sgemm/gpu/n:4096/manual_time",
    "the same, TF32": "peak/gemm/gpu/n:4096/math:tf32/manual_time",
    "the same, fp16": "peak/gemm/gpu/n:4096/math:fp16/manual_time",
    "the same, bf16": "peak/gemm/gpu/n:4096/math:bf16/manual_time",
    "LSTM sequence, batch 64, hidden 512, 25 steps, cuDNN float32":
        "lstm/cudnn/gpu/scope:seq/batch:64/input:512/hidden:512/steps:25/manual_time",
    "256 MiB pinned h2d copy":
        "transfer/pinned/gpu/dir:h2d/mode:sync/bytes:268435456/manual_time",
    "256 MiB pageable h2d copy":
        "transfer/pageable/gpu/dir:h2d/mode:sync/bytes:268435456/manual_time",
    "a kernel launch and a synchronize": "overhead/launch/gpu/what:launch_sync/manual_time",
}


def test_the_cpu_baselines_peak_sentence_is_what_its_file_says():
    """results/baselines/README.md's sentence on the CPU baseline's physical peak: "predates" it
    while the file has no peak/flops rows; once re-made, its figure and OpenBLAS's share of it."""
    from gapbench_report.core import metrics  # noqa: PLC0415
    from gapbench_report.inputs.results import load_results  # noqa: PLC0415
    folder = REPO / "results" / "baselines"
    text = (folder / "README.md").read_text(encoding="utf-8")
    said = " ".join(text[text.index("<!-- cpu-peak:begin"):text.index("<!-- cpu-peak:end")]
                    .split())
    benchmarks = list(load_results(folder / "ci-cpu-2core.json").benchmarks().values())
    peak = metrics.cpu_flop_peak(benchmarks, "fp32")
    if peak is None:
        sgemm = metrics.gemm_peaks(benchmarks)["cpu", "fp32"].counter("flops")
        assert "predates" in said and f"OpenBLAS's SGEMM ({sgemm / 1e9:.0f} GFLOP/s)" in said
    else:
        share, _ = metrics.cpu_library_shares(benchmarks)["OpenBLAS"]
        assert "predates" not in said
        assert f"{peak.counter('flops') / 1e9:.0f} GFLOP/s" in said and f"{share:.0%}" in said


def test_the_gpu_baselines_side_by_side_are_what_their_files_say():
    """Every figure of the H100 and H200 table in results/baselines/README.md, from the
    committed files: the machines' facts from their context, each time the median of its row,
    each row of the math it names (Benchmark.math)."""
    from gapbench_report.core import metrics  # noqa: PLC0415
    from gapbench_report.core.labels import fmt_bytes, fmt_seconds  # noqa: PLC0415
    from gapbench_report.inputs.results import load_results  # noqa: PLC0415
    folder = REPO / "results" / "baselines"
    text = (folder / "README.md").read_text(encoding="utf-8")
    table = text[text.index("<!-- side-by-side:begin"):text.index("<!-- side-by-side:end")]
    rows = {cells[0]: cells[1:] for line in table.splitlines()[3:]  # after the header
            for cells in [[c.strip() for c in line.strip("|").split(" | ")]]}
    for column, name in enumerate(("h100-ubuntu24", "h200-ubuntu24")):
        results = load_results(folder / f"{name}.json")
        ctx = results.context
        commit = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))[
            "provenance"]["gapbench_commit"]
        expected = {
            "GPU": f"{ctx['gpu.name']}, {ctx['gpu.sm_count']} SMs, compute capability "
                   f"{ctx['gpu.compute_capability']}",
            "memory": f"{fmt_bytes(float(ctx['gpu.memory_total_bytes']))}, clock "
                      f"{ctx['gpu.clock_mem_max_mhz']} MHz",
            "link to the host": f"PCIe {ctx['pcie.gen_max']} ×{ctx['pcie.width_max']}, "
                                f"{ctx['pcie.bandwidth_max_gbps']} GB/s per direction",
            "driver, cuDNN, cuBLAS": f"{ctx['nvidia.driver_release']}, "
                                     f"{ctx['cudnn.version_loaded']}, "
                                     f"{ctx['cublas.version_loaded']}",
            "gapbench commit": f"`{commit}`",
        }
        maths = ("fp32", "tf32", "fp16", "bf16")
        theory = [metrics.gpu_theoretical_flops(ctx, m) for m in maths]
        gemms = metrics.gemm_peaks(results.benchmarks().values())
        expected["theoretical peak, float32 · TF32 · fp16 · bf16 (132 SMs × the 1980 MHz "
                 "recorded)"] = " · ".join(f"{t / 1e12:.3g}" if t < 1e15 else f"{t / 1e12:.0f}"
                                           for t in theory) + " TFLOP/s"
        expected["cuBLAS's fastest GEMM's share of it, float32 · TF32 · fp16 · bf16"] = " · ".join(
            f"{gemms['gpu', m].counter('flops') / t:.0%}" for m, t in zip(maths, theory))
        for label, benchmark in SIDE_BY_SIDE_ROWS.items():
            b = results.benchmarks()[benchmark]
            assert b.math == (benchmark.split("math:")[1].split("/")[0]
                              if "math:" in benchmark else "fp32"), benchmark
            expected[label] = fmt_seconds(b.median)
        assert {label: cells[column] for label, cells in rows.items()} == expected, name
