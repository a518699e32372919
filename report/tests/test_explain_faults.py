"""explain against hostile or broken traces (issue 47; docs/faults.md, "explain"): each refused in
one line before it is parsed, or read without inventing a finding; its time linear in the steps.
Each of these failed on the code before it (the commit says how)."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gapbench_report.explain import command as explain
from gapbench_report.explain import rules as explain_rules
from gapbench_report.explain import writer as explain_writer
from gapbench_report.inputs import traces
from measure.bench_explain import tiny_trace

DATA = Path(__file__).parent / "data" / "traces"
REPORT = Path(__file__).resolve().parents[1]


@pytest.fixture
def hta():
    pytest.importorskip("ijson")
    return pytest.importorskip("hta")


def one_line(capsys, *argv) -> str:
    assert explain.main([*map(str, argv)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def answer(capsys, trace: Path) -> dict:
    assert explain.main([str(trace), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["traces"][0]


# ---- refused before it is parsed ------------------------------------------------------------

def test_a_trace_nested_past_the_stated_depth_is_refused_before_it_is_parsed(
        capsys, tmp_path, monkeypatch):
    """200 KB of nested brackets took 23 GB in ijson (its cost grows with the square of the
    depth): refused by the check that reads the file, never handed to HTA."""
    monkeypatch.setattr(traces, "read_kineto", lambda path: pytest.fail("parsed"))
    deep = tmp_path / "deep.pt.trace.json.gz"
    deep.write_bytes(gzip.compress(b'{"traceEvents": [{"args": ' + b"[" * 100_000
                                   + b"]" * 100_000 + b"}]}"))
    started = time.perf_counter()
    err = one_line(capsys, deep)
    assert time.perf_counter() - started < 10
    assert f"its JSON nests deeper than {traces.MAX_TRACE_DEPTH} levels (at byte 87)" in err
    assert "refused before it is parsed" in err


@pytest.mark.parametrize("text, depth", [
    (b'{"a": "[[[[[[[[[[[["}', 1),  # brackets in a string do not count
    (b'{"a": "\\\\"}', 1),  # an escaped backslash ends no string's quote
    (b'{"a": "\\"[[[[", "b": [[[]]]}', 4),  # an escaped quote does not end its string
    (b'{"a": [[["x]]]", "y\\\\\\"]"]]]}', 4),
])
def test_the_depth_is_counted_outside_strings_wherever_the_chunks_split(text, depth):
    for cut in range(1, len(text)):
        for limit, refused in ((depth, False), (depth - 1, True)):
            check = traces.JsonCheck(Path("t.json"), max_depth=limit)
            try:
                check.feed(text[:cut])
                check.feed(text[cut:])
                check.end()
            except traces.TraceError:
                assert refused, (text, cut, limit)
                continue
            assert not refused and check.depth == 0 and not check.in_string, (text, cut)


def test_every_corpus_trace_is_within_the_depth(hta):
    deepest = 0
    for path in sorted(DATA.glob("*.pt.trace.json.gz")):
        check = traces.JsonCheck(path, max_depth=8)
        check.feed(gzip.decompress(path.read_bytes()))  # 8 is enough for every one of them
        deepest += 1
    assert deepest > 60


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_trace_that_is_not_utf8_is_one_line_not_a_bytes_repr(capsys, tmp_path, gzipped):
    body = (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "caf\xe9", "pid": 1, '
            b'"tid": 1, "ts": 1, "dur": 2}]}')
    path = tmp_path / ("latin.pt.trace.json" + (".gz" if gzipped else ""))
    path.write_bytes(gzip.compress(body) if gzipped else body)
    err = one_line(capsys, path)
    assert "not UTF-8 text (byte 0xe9 at offset 58): a PyTorch trace is JSON in UTF-8" in err
    assert "b'" not in err and "\\n" not in err


@pytest.mark.parametrize("events, said", [
    ("[]", "a PyTorch profiler trace with no events (its traceEvents is empty)"),
    ('{"a": 1}', "its traceEvents is an object, not a list of events"),
    ("[1, 2]", "its traceEvents holds a number, not events (objects with ph, name, ts, dur)"),
    ('["x"]', "its traceEvents holds a string, not events"),
    (None, "JSON with no traceEvents: not a PyTorch profiler trace"),
])
def test_empty_or_ill_typed_trace_events_are_one_clear_line(hta, capsys, tmp_path, events,
                                                            said):
    """Not "HolisticTraceAnalysis could not read it ...: ValueError: No objects to
    concatenate"."""
    path = tmp_path / "t.pt.trace.json"
    path.write_text('{"schemaVersion": 1' + (f', "traceEvents": {events}' if events else "")
                    + "}", encoding="utf-8")
    err = one_line(capsys, path)
    assert said in err and "concatenate" not in err and "AttributeError" not in err


def test_a_fifo_a_device_and_a_socket_are_refused_in_one_line(tmp_path):
    """Never opened: a FIFO would wait for a writer for ever, /dev/zero be read for ever."""
    fifo = tmp_path / "fifo.pt.trace.json"
    os.mkfifo(fifo)
    sock_path = tmp_path / "s.pt.trace.json"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    try:
        for path, kind in ((fifo, "a FIFO"), (Path("/dev/zero"), "a device"),
                           (sock_path, "a socket")):
            done = subprocess.run([sys.executable, "-m", "gapbench_report", "explain", str(path)],
                                  capture_output=True, text=True, timeout=60, cwd=REPORT,
                                  env={**os.environ, "PYTHONPATH": str(REPORT)}, check=False)
            assert done.returncode == 2 and done.stdout == ""
            assert done.stderr == (f"gapbench-report explain: {path}: is {kind}, not a trace "
                                   "file: not read\n")
    finally:
        sock.close()


# ---- read without inventing a finding -------------------------------------------------------

def edited(tmp_path: Path, name: str, edit, tag: str = "edited") -> Path:
    doc = json.loads(gzip.decompress((DATA / name).read_bytes()))
    edit(doc)
    out = tmp_path / f"{tag}.{name.removesuffix('.gz')}"
    out.write_text(json.dumps(doc), encoding="utf-8")
    return out


def profiler_steps(doc: dict) -> list[dict]:
    return [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]


def test_an_outer_profiler_step_around_the_steps_changes_nothing(hta, capsys, tmp_path):
    """A ProfilerStep around the real ones (a record_function of that name around the loop) was
    read as one more step: the loop's figures then mixed the outer step's with the inner ones'
    (3,245 ops a step for 2,434). It is read as the steps inside it."""
    name = "torch_cpu_loop_rows_elements.defaults.pt.trace.json.gz"

    def wrap(doc):
        steps = profiler_steps(doc)
        first = min(float(s["ts"]) for s in steps)
        last = max(float(s["ts"]) + float(s["dur"]) for s in steps)
        doc["traceEvents"].append({**steps[0], "name": "ProfilerStep#0", "ts": first - 5,
                                   "dur": last - first + 10})

    plain = answer(capsys, edited(tmp_path, name, lambda doc: None, "plain"))
    wrapped = answer(capsys, edited(tmp_path, name, wrap))
    assert wrapped["steps"] == plain["steps"] == 2
    assert wrapped["step_seconds"] == plain["step_seconds"]
    assert [(f["rule"], f["lost_seconds_per_step"], f["evidence"]["ops"])
            for f in wrapped["findings"]] == [(f["rule"], f["lost_seconds_per_step"],
                                              f["evidence"]["ops"]) for f in plain["findings"]]
    assert wrapped["findings"][0]["rule"] == "op_burst"
    assert "1 ProfilerStep span around other steps (a record_function of that name around the " \
           "loop?) read as the steps inside them." in wrapped["notes"]


def test_negative_step_durations_invent_no_finding(hta, capsys, tmp_path):
    """Steps of negative length gave "waits 0 s of its 0 s ... -0%", an input-bound finding."""
    def negate(doc):
        for s in profiler_steps(doc):
            s["dur"] = -abs(float(s["dur"]))

    doc = answer(capsys, edited(tmp_path, "torch_cpu_clean.pt.trace.json.gz", negate))
    assert doc["findings"] == [] and doc["step_seconds"] > 0
    assert "4 ProfilerStep spans of no or negative duration (a trace edited, or a clock that " \
           "went back) left out." in doc["notes"]
    # And a profile whose step has no length judges nothing.
    profile = traces.Profile("t", "PyTorch", steps=1, step_seconds=-1e-3, input_seconds=0.0)
    assert explain_rules.explain(profile, None) == []


CLEAN = "torch_cpu_clean.defaults.pt.trace.json.gz"


def test_steps_that_overlap_count_no_op_twice(hta, capsys, tmp_path):
    """Each ProfilerStep stretched half into the next counted the ops between twice: 13.2 ms
    steps for 9.5 and "host time with no op running"."""
    def overlap(doc):
        steps = sorted(profiler_steps(doc), key=lambda s: float(s["ts"]))
        for a, b in zip(steps, steps[1:]):
            a["dur"] = float(b["ts"]) - float(a["ts"]) + 0.5 * float(b["dur"])

    plain = answer(capsys, edited(tmp_path, CLEAN, lambda doc: None, "plain"))
    over = answer(capsys, edited(tmp_path, CLEAN, overlap))
    assert over["findings"] == plain["findings"] == []
    assert over["steps"] == plain["steps"] == 4
    assert over["step_seconds"] == pytest.approx(plain["step_seconds"], rel=0.02)
    assert "3 ProfilerStep spans overlapping the next (a trace edited or merged?) read as ending " \
           "where the next begins, so that no op is counted in two steps." in over["notes"]


def test_ops_of_no_duration_are_not_host_time_with_no_op(hta, capsys, tmp_path):
    """A trace with whole-microsecond times records a sub-microsecond op with no duration: every
    op of a step so read as "host time with no op running" of the whole step."""
    def untimed(doc):
        for e in doc["traceEvents"]:
            if e.get("cat") == "cpu_op":
                e["dur"] = 0

    doc = answer(capsys, edited(tmp_path, CLEAN, untimed))
    assert [f["rule"] for f in doc["findings"]] == []
    assert "In 4 of 4 steps most ops have no duration (a trace whose times are whole " \
           "microseconds records a shorter op so): the host time between ops is not judged " \
           "there." in doc["notes"]


@pytest.mark.parametrize("share", [1.0, 0.5])
def test_events_at_negative_times_are_refused_in_one_line(hta, capsys, tmp_path, share):
    """HTA dropped every event before time 0 without a word: all of them gave "a trace with no
    events", half of them half the steps."""
    def shifted(doc):
        times = sorted(float(e["ts"]) for e in doc["traceEvents"] if "ts" in e)
        at = times[min(len(times) - 1, int(share * len(times)))] + 1
        for e in doc["traceEvents"]:
            if "ts" in e:
                e["ts"] = float(e["ts"]) - at

    err = one_line(capsys, edited(tmp_path, CLEAN, shifted))
    assert "it has events at negative times (\"ts\": -...), which torch.profiler never writes " \
           "and which would be dropped unread" in err


# ---- what the answer prints -----------------------------------------------------------------

def burst(names: dict[str, float]) -> traces.Profile:
    profile = traces.Profile("t\x1b[2J.pt.trace.json", "PyTorch", steps=1, step_seconds=0.01)
    profile.bursts = [traces.Loop(sum(names.values()), 0.005, max(names, key=names.get),
                                  names=names)]
    return profile


def test_an_op_with_no_name_is_shown_as_such():
    (f,) = explain_rules.explain(burst({"": 300.0, "aten::add": 200.0}), None)
    assert f"(most: {explain_rules.NO_NAME} 300, add 200)" in f.text
    assert ", 300," not in f.text


def test_control_characters_in_names_are_escaped_in_markdown_and_the_page():
    """ESC and BEL in an op's or a file's name reached explain's Markdown (and the terminal it
    is printed on) raw."""
    profile = burst({"aten::\x1b]0;owned\x07": 300.0, "aten::add": 200.0})
    answers = [explain_rules.Answer(profile, explain_rules.explain(profile, None), [])]
    for text in (explain_writer.markdown(answers, None), explain_writer.html_page(answers, None)):
        assert "\x1b" not in text and "\x07" not in text
        assert "\\x1b]0;owned\\x07 300" in text and "t\\x1b[2J.pt.trace.json" in text


def test_help_is_whole_sentences():
    """The description was the docstring's first line, cut mid-sentence ("... profiler
    trace,")."""
    text = explain._parser().format_help()
    description = text.split("\n\n")[1]
    assert description.rstrip().endswith("(docs/explain.md).")
    assert " ".join(description.split()) == explain.DESCRIPTION


# ---- time linear in the steps ---------------------------------------------------------------

def fastest(path: Path, tries: int) -> float:
    best = float("inf")
    for _ in range(tries):
        started = time.perf_counter()
        traces.read_profile(path)
        best = min(best, time.perf_counter() - started)
    return best


def test_the_time_is_linear_in_the_steps(hta, tmp_path):
    """Steps x events before (HTA's add_iteration compared each event with each step, and each
    step filtered every event): 1,000 steps took 10.5 s, 2,000 34.7 s. Four times the steps of
    the same events (18 a step) now take about four times as long, never the sixteen of a
    quadratic: the fastest of a few tries, so that other jobs' load does not decide."""
    small, large = tmp_path / "small.pt.trace.json", tmp_path / "large.pt.trace.json"
    tiny_trace(0.5, small, steps=250)
    tiny_trace(2.0, large, steps=1000)
    assert traces.read_profile(large).steps == 1000
    ratio = fastest(large, 2) / fastest(small, 3)
    assert ratio < 8, f"4x the steps took {ratio:.1f}x the time"


def test_the_iterations_are_the_ones_hta_makes(hta):
    """traces.iterations (linear) gives each event the iteration HTA 0.5's add_iteration
    gives it."""
    from hta.common import trace as hta_trace
    from hta.common.trace import Trace

    for name in ("synthesised_gpu_launch", "synthesised_gpu_input", "torch_cpu_loop"):
        found = []
        for linear in (False, True):
            with traces.quiet(), traces._stream_numbers_by_column():
                if linear:
                    cm = traces._iterations_in_linear_time()
                    cm.__enter__()
                    assert hta_trace.add_iteration is traces.iterations
                trace = Trace(trace_files={0: str(DATA / f"{name}.pt.trace.json.gz")},
                              trace_dir="", parser_config=traces._hta_config())
                trace.load_traces(include_last_profiler_step=True, use_multiprocessing=False,
                                  use_memory_profiling=False)
                if linear:
                    cm.__exit__(None, None, None)
            found.append(trace.get_trace(0)["iteration"])
        assert found[0].equals(found[1]), name
        assert hta_trace.add_iteration is not traces.iterations
