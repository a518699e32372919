"""Tests of the nightly gate: the two-pass decision, the A B B A order, the rerun of only the
flagged benchmarks, the known-good commit, history and the files written, on fake executables."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from gapbench_report.cli.kit import ToolError
from gapbench_report.compare import command as cmp

from gapbench_ci import nightly, nightly_gate, nightly_state, nightly_summary
from gapbench_ci.runner import RunSpec, Side, TreeState, exact_filter
from tests.fakes import BENCHMARKS, COPY, IMAGE, LOOP, SUMSQ, invocations, make_fake
from tests.synthetic import in_memory

SPEC = RunSpec(".", "quick", 3, 0.01)


def quiet(_line: str) -> None:
    pass


def sides(tmp_path: Path, log: Path, a: dict | None = None, b: dict | None = None):
    return (Side("baseline", make_fake(tmp_path / "bin", "a", log=str(log), **(a or {}))),
            Side("contender", make_fake(tmp_path / "bin", "b", log=str(log), **(b or {}))))


def labels_and_filters(log: Path) -> list[tuple[str, str]]:
    out = []
    for call in invocations(log):
        f = next(a.split("=", 1)[1] for a in call["args"] if a.startswith("--benchmark_filter="))
        out.append((call["label"], f))
    return out


# ---- the decision ----------------------------------------------------------------------------

def _row(name, status, change=0.0, p=0.5, note=""):
    return cmp.Row(name, status, 1e-4, 1e-4 * (1 + change), change, p, 10, 10, note)


def _comparison(rows):
    return cmp.Comparison("b", "c", "m", "m", 0.05, 0.01, False, False, None, rows)


def test_settle_confirms_only_a_repeated_flag():
    first = _comparison([_row(SUMSQ, cmp.SLOWER, 0.10, 1e-4), _row(IMAGE, cmp.SLOWER, 0.08, 1e-3),
                         _row(COPY, cmp.SLOWER, 0.2, 1e-4), _row(LOOP, cmp.SAME)])
    rerun = _comparison([_row(SUMSQ, cmp.SLOWER, 0.11, 1e-4), _row(IMAGE, cmp.SAME, 0.01, 0.4),
                         _row(COPY, cmp.ERROR, note="contender failed: crash")])
    final, confirmed = nightly_gate.settle(first, rerun)
    status = {r.name: r for r in final.rows}
    assert confirmed == [SUMSQ]
    assert status[SUMSQ].status == cmp.SLOWER
    assert "confirmed by the rerun (+11.0%" in status[SUMSQ].note
    assert status[IMAGE].status == cmp.SAME
    assert status[IMAGE].note.startswith("first pass SLOWER (+8.0%")
    assert "not confirmed: rerun SAME (+1.0%" in status[IMAGE].note
    assert status[COPY].status == cmp.ERROR and "crash" in status[COPY].note
    assert status[LOOP] == first.rows[3]  # untouched
    assert [r.name for r in final.rows] == [SUMSQ, IMAGE, COPY, LOOP]  # order kept
    assert cmp.has_regression(final)
    # Without a rerun nothing is confirmed.
    final, confirmed = nightly_gate.settle(first, None)
    assert confirmed == [] and not cmp.has_regression(final)


# ---- the gate on fake executables ------------------------------------------------------------

def test_identical_builds_pass_and_run_a_b_b_a(tmp_path):
    log = tmp_path / "log.jsonl"
    v = nightly_gate.gate(sides(tmp_path, log), SPEC, 3, tmp_path / "w", say=quiet)
    assert v.exit_code == 0 and not v.regression
    assert v.flagged == [] and v.rerun is None
    assert [label for label, _ in labels_and_filters(log)] == list("abba" * 3)
    assert {r.status for r in v.final.rows} == {cmp.SAME}
    sumsq = v.first.contender.benchmarks()[SUMSQ]
    assert len(sumsq.samples) == 18  # 3 rounds x 2 runs x 3 repetitions
    assert len(sumsq.process_medians) == 6  # compare judges by run


def test_a_real_slowdown_is_confirmed_and_only_the_flagged_rerun(tmp_path):
    log = tmp_path / "log.jsonl"
    v = nightly_gate.gate(sides(tmp_path, log, b={"slow": {"vectorized/cpu/op:sumsq": 1.2}}),
                          SPEC, 3, tmp_path / "w", say=quiet)
    assert v.flagged == [SUMSQ] and v.confirmed == [SUMSQ]
    assert v.exit_code == 1
    assert v.status_of(SUMSQ) == cmp.SLOWER and v.status_of(IMAGE) == cmp.SAME
    calls = labels_and_filters(log)
    rerun = 3 * nightly_gate.RERUN_FACTOR  # rounds
    assert [c[0] for c in calls] == list("abba" * (3 + rerun))  # rerun: more rounds
    assert {c[1] for c in calls[:12]} == {"."}
    assert {c[1] for c in calls[12:]} == {exact_filter([SUMSQ])}  # the rerun: only the flagged
    # rounds x 2 runs x 3 repetitions
    assert len(v.rerun.contender.benchmarks()[SUMSQ].samples) == 2 * rerun * 3
    assert (tmp_path / "w" / "rerun-contender.json").exists()


def test_a_flag_that_does_not_repeat_is_no_regression(tmp_path):
    log = tmp_path / "log.jsonl"
    # Slow in the contender's first six runs (the first pass) only: noise, not a change.
    v = nightly_gate.gate(sides(tmp_path, log, b={"slow": {"image": 1.3}, "slow_runs": 6}),
                          SPEC, 3, tmp_path / "w", rerun_rounds=3, say=quiet)
    assert v.flagged == [IMAGE] and v.confirmed == []
    assert v.exit_code == 0
    row = next(r for r in v.final.rows if r.name == IMAGE)
    assert row.status == cmp.SAME and "not confirmed" in row.note


def test_rerun_rounds_can_be_set(tmp_path):
    log = tmp_path / "log.jsonl"
    v = nightly_gate.gate(sides(tmp_path, log, b={"slow": {"image": 1.3}}), SPEC, 3,
                          tmp_path / "w", rerun_rounds=4, say=quiet)
    assert v.confirmed == [IMAGE]
    assert [c[0] for c in labels_and_filters(log)] == list("abba" * 7)


def test_faster_is_no_regression(tmp_path):
    v = nightly_gate.gate(sides(tmp_path, tmp_path / "log", b={"slow": {"memcpy": 0.8}}),
                          SPEC, 3, tmp_path / "w", say=quiet)
    assert v.exit_code == 0 and v.status_of(COPY) == cmp.FASTER


def test_a_new_failure_is_a_regression(tmp_path):
    v = nightly_gate.gate(sides(tmp_path, tmp_path / "log", b={"fail": ["memcpy"]}), SPEC, 1,
                          tmp_path / "w", say=quiet)
    assert v.failures == [COPY] and v.confirmed == [] and v.exit_code == 1
    assert nightly_summary.headline(v) == "REGRESSION: 1 new failure"
    # Failing on both sides is no news of tonight.
    v = nightly_gate.gate(sides(tmp_path, tmp_path / "log", a={"fail": ["memcpy"]},
                                b={"fail": ["memcpy"]}), SPEC, 1, tmp_path / "w2", say=quiet)
    assert v.failures == [] and v.exit_code == 0


def test_a_crashing_executable_is_a_tool_error(tmp_path):
    bad = tmp_path / "crash"
    bad.write_text("#!/bin/sh\necho 'Segmentation fault' >&2\nexit 139\n")
    bad.chmod(0o755)
    good = make_fake(tmp_path, "a")
    with pytest.raises(ToolError, match="status 139: Segmentation fault"):
        nightly_gate.gate((Side("baseline", good), Side("contender", bad)), SPEC, 1,
                          tmp_path / "w", say=quiet)


# ---- the known-good commit ---------------------------------------------------------------------

@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()

    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                              text=True).stdout.strip()
    git("init", "-q")
    git("config", "user.email", "t@example.invalid")
    git("config", "user.name", "t")
    for i in (1, 2, 3):
        (root / "f").write_text(str(i))
        git("add", "f")
        git("commit", "-q", "-m", f"c{i}")
    return root, git


def test_known_good_order(repo, tmp_path):
    root, git = repo
    state = tmp_path / "state"
    head1 = git("rev-parse", "HEAD~1")
    first = git("rev-parse", "HEAD~2")
    assert nightly_state.choose_known_good(root, None, state) == nightly_state.KnownGood(
        head1, "HEAD~1 (no known-good recorded)", fell_back=True)
    state.mkdir()
    (state / nightly_state.KNOWN_GOOD_FILE).write_text(first + "\n")
    good = nightly_state.choose_known_good(root, None, state)
    assert good.commit == first and "last good night" in good.how and not good.fell_back
    assert nightly_state.choose_known_good(root, "HEAD", state).commit == git("rev-parse", "HEAD")
    (state / nightly_state.KNOWN_GOOD_FILE).write_text("f" * 40)  # gone (a rewritten history)
    good = nightly_state.choose_known_good(root, None, state)
    assert good.commit == head1 and good.fell_back and "not a commit here" in good.how
    with pytest.raises(ToolError, match="not a commit"):
        nightly_state.choose_known_good(root, "nope", state)


def test_no_parent_and_nothing_recorded_is_a_clear_error(tmp_path):
    root = tmp_path / "one"
    root.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@example.invalid"],
                 ["config", "user.name", "t"], ["commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    with pytest.raises(ToolError, match="HEAD has no parent") as raised:
        nightly_state.choose_known_good(root, None, tmp_path / "state")
    assert "pass --good" in str(raised.value) and "shallow clone" not in str(raised.value)


# ---- the command --------------------------------------------------------------------------------

def run_main(tmp_path, *extra, a=None, b=None):
    bins = tmp_path / "bin"
    args = ["--baseline-bin", str(make_fake(bins, "a", **(a or {}))),
            "--contender-bin", str(make_fake(bins, "b", **(b or {}))),
            "--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state"),
            "--rounds", "3", "--repetitions", "3", *extra]
    return nightly.main(args)


def test_main_writes_everything_and_exits_1_on_a_regression(tmp_path, capsys):
    assert run_main(tmp_path, b={"slow": {"vectorized/cpu/op:sumsq": 1.25}}) == 1
    out = tmp_path / "out"
    for name in ("summary.md", "comparison.json", "baseline.json", "contender.json",
                 "rerun-baseline.json", "rerun-contender.json", "report/index.html",
                 "trend/index.html", "trend/trend.md"):
        assert (out / name).exists(), name
    summary = (out / "summary.md").read_text()
    assert summary.startswith("# gapbench nightly: REGRESSION: 1 benchmark slower")
    assert f"| `{SUMSQ}` | SLOWER |" in summary
    assert "confirmed by the rerun" in summary
    assert "3 rounds of A B B A" in summary
    assert "18 repetitions per side from 6 runs" in summary
    data = json.loads((out / "comparison.json").read_text())
    assert data["confirmed"] == [SUMSQ] and data["exit_status"] == 1
    assert data["final"]["regression"] is True
    history = list((tmp_path / "state" / "history").glob("*.json"))
    assert len(history) == 1
    record = json.loads(history[0].read_text())
    assert record["regression"] is True and record["confirmed"] == [SUMSQ]
    assert set(record["medians"]) == set(BENCHMARKS)
    assert record["medians"][SUMSQ] == pytest.approx(2e-4 * 1.25, rel=0.05)
    # Given executables are no commit: the known-good record is left alone.
    assert not (tmp_path / "state" / nightly_state.KNOWN_GOOD_FILE).exists()
    assert "REGRESSION" in capsys.readouterr().out


def test_main_exit_0_and_a_second_night_extends_the_history(tmp_path):
    assert run_main(tmp_path) == 0
    assert run_main(tmp_path) == 0
    assert len(list((tmp_path / "state" / "history").glob("*.json"))) >= 1
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert summary.startswith("# gapbench nightly: no regression")
    assert not (tmp_path / "out" / "rerun-contender.json").exists()  # the old night's is gone


def test_main_no_state_writes_no_history(tmp_path):
    assert run_main(tmp_path, "--no-state") == 0
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize("args, words", [
    (["--rounds", "2", "--repetitions", "2"], "runs per side"),
    (["--rounds", "0"], "at least 1"),
    (["--alpha", "2"], "--alpha"),
    (["--threshold", "-1"], "--threshold"),
    (["--min-time", "0"], "--min-time"),
    (["--profile", "slow"], "invalid choice"),
    (["--baseline-bin", "/nonexistent"], "go together"),
])
def test_main_bad_arguments_exit_2_with_one_line(tmp_path, capsys, args, words):
    assert nightly.main(["--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ci/nightly: ") and words in err[0]


def test_main_refuses_to_empty_a_foreign_out_folder(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "precious.txt").write_text("keep me")
    assert run_main(tmp_path) == 2
    assert "was not made by ci/nightly" in capsys.readouterr().err
    assert (tmp_path / "out" / "precious.txt").exists()


def test_main_tool_error_is_exit_2(tmp_path, capsys):
    assert run_main(tmp_path, "--filter", "^nothing$") == 2
    assert "matches no benchmark" in capsys.readouterr().err


def test_history_record_is_small_and_named_by_time_and_commit(tmp_path):
    v = nightly_gate.gate(sides(tmp_path, tmp_path / "log"), SPEC, 1, tmp_path / "w", say=quiet)
    from datetime import datetime, timezone
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    tree = TreeState("a" * 40, True)
    record = nightly_state.history_record(v, tree, "b" * 40, SPEC, when)
    path = nightly_state.write_history(tmp_path / "s", record, when, tree)
    assert path.name == f"20260102T030405Z-{'a' * 12}-dirty.json"
    assert record["date"] == "2026-01-02T03:04:05+00:00"
    assert record["machine"] == "fake-machine" and record["good_commit"] == "b" * 40
    assert path.stat().st_size < 4096
    assert re.fullmatch(r"[0-9T]+Z-[0-9a-f]{12}-dirty\.json", path.name)


def test_a_rerun_too_short_to_judge_by_run_is_refused(tmp_path, capsys):
    assert nightly.main(["--out", str(tmp_path / "o"), "--rerun-rounds", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--rerun-rounds 2 gives 4 runs per side" in err[0]


def test_a_failed_night_keeps_the_last_nights_files(tmp_path, capsys):
    assert run_main(tmp_path) == 0
    out = tmp_path / "out"
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert out / "summary.md" in [out / p for p in before]
    assert run_main(tmp_path, "--filter", "^nothing$") == 2  # the night fails in its first run
    assert "matches no benchmark" in capsys.readouterr().err
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "out", "state"]  # no leftovers


def test_a_night_is_swapped_in_whole_and_names_its_files_where_they_end_up(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / nightly.OUT_MARKER).write_text("")
    (tmp_path / "out" / "stale.json").write_text("{}")  # a file the last night had
    assert run_main(tmp_path) == 0
    out = tmp_path / "out"
    assert not (out / "stale.json").exists() and (out / nightly.OUT_MARKER).exists()
    data = json.loads((out / "comparison.json").read_text())
    assert data["final"]["baseline"]["path"] == str(out / "baseline.json")
    assert f"baseline {out / 'baseline.json'}" in (out / "summary.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "out", "state"]


def test_the_summary_shows_html_in_names_and_messages_as_text(tmp_path):
    name = "preprocess/x/cpu/op:<img src=x onerror=alert(1)>`/real_time"
    row = cmp.Row(name, cmp.ERROR, note="contender failed: <script>alert(1)</script>",
                  new_failure=True)
    contender = in_memory([], **{"cpu.model": "<b>CPU</b>"})
    v = nightly_gate.Verdict(nightly_gate.Pass(_comparison([row]), contender, contender), None,
                             _comparison([row]), failures=[name])
    about = {"contender": "abc <i>dirty</i>", "baseline": "def <a href=x>subject</a>",
             "state": {"dir": "s", "origin": "<origin>", "warning": None}}
    text = nightly_summary.night_summary_markdown(v, about, SPEC, 3, ["<em>note</em>"])
    for raw in ("<img", "<script>", "<b>", "<i>", "<a ", "<origin>", "<em>"):
        assert raw not in text.replace(f"``{name}``", "").replace(f"`` {name} ``", ""), raw
    assert "&lt;script&gt;" in text and "&lt;b&gt;CPU&lt;/b&gt;" in text
    assert f"``{name}``" in text  # in a code span, whose fence no backtick of the name ends


@pytest.mark.parametrize("value", ["x", "1.5", ""])
def test_a_count_that_is_no_whole_number_says_so(tmp_path, capsys, value):
    assert nightly.main(["--out", str(tmp_path / "o"), "--rounds", value]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"ci/nightly: argument --rounds: needs a whole number, not {value!r} (see --help)"
