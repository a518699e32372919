"""Tests of the gate proof on fake executables (the real one runs on real builds: ci/gate-proof):
the phases, the tallies, the requirements and the files it writes."""

from __future__ import annotations

import json

import pytest
from gapbench_report.compare import command as cmp

from gapbench_ci import gate_proof, nightly_gate
from tests.fakes import COPY, IMAGE, LOOP, SUMSQ, make_fake


def fakes(tmp_path, **inject_spec):
    normal = make_fake(tmp_path / "bin", "normal")
    inject_spec.setdefault("injected", "^preprocess/vectorized/")
    inject = make_fake(tmp_path / "bin", "inject", **inject_spec)
    return ["--normal-bin", str(normal), "--inject-bin", str(inject)]


def run(tmp_path, *extra, **inject_spec):
    return gate_proof.main([*fakes(tmp_path, **inject_spec), "--filter", ".",
                            "--injected", "^preprocess/vectorized/",
                            "--aa-comparisons", "8", "--trials", "2", "--improvement-trials", "1",
                            "--rounds", "3", "--repetitions", "3", "--out", str(tmp_path / "out"),
                            *extra])


def test_the_proof_passes_on_a_gate_that_works(tmp_path, capsys):
    assert run(tmp_path) == 0
    result = json.loads((tmp_path / "out" / "gate-proof.json").read_text())
    assert result["passed"] and not result["reduced"]
    assert result["injected"] == sorted([SUMSQ, IMAGE])
    aa = result["aa"]
    assert aa["trials"] == 2 and aa["comparisons"] == 8  # 4 benchmarks a trial
    assert aa["confirmed_regressions"] == 0 and aa["passed"]
    assert 0 <= aa["busy_share_measured"] <= 1
    assert result["slowdown_10"]["detection_rate"] == 1.0
    assert result["slowdown_10"]["per_benchmark"] == {IMAGE: 2, SUMSQ: 2}
    assert result["slowdown_10"]["other_confirmed"] == {}
    # The fake slows the injected benchmarks by exactly the fraction (and adds noise).
    assert all(abs(c - 0.10) < 0.05 for c in result["slowdown_10"]["median_change"].values())
    assert result["slowdown_5"]["trials"] == 2  # 5% sits on the threshold: its rate varies
    assert result["improvement"]["faster"] == {IMAGE: 1, SUMSQ: 1}
    assert result["improvement"]["regressions_called"] == 0
    md = (tmp_path / "out" / "gate-proof.md").read_text()
    assert "every requirement met" in md and "| 10% slower | 2 |" in md
    assert md in capsys.readouterr().out
    assert not (tmp_path / "out" / "work").exists()  # the runs are cleaned up


def test_the_proof_fails_when_a_control_moves_too(tmp_path):
    # A hook that also slows the memcpy down: "only the injected" is violated.
    assert gate_proof.main([*fakes(tmp_path, injected="^(preprocess/vectorized|transfer/memcpy)/"),
                            "--filter", ".",
                            "--aa-comparisons", "4", "--trials", "1", "--improvement-trials",
                            "1", "--rounds", "3", "--repetitions", "3", "--injected",
                            "^preprocess/vectorized/", "--out", str(tmp_path / "out")]) == 1
    result = json.loads((tmp_path / "out" / "gate-proof.json").read_text())
    assert result["slowdown_10"]["other_confirmed"] == {COPY: 1}
    assert not result["slowdown_10"]["passed"] and not result["passed"]
    assert result["improvement"]["passed"]  # roles swapped, the slow memcpy is the baseline's


def test_tally_counts_trials_flags_and_detection():
    injected = {SUMSQ, IMAGE}

    def verdict(confirmed, flagged, faster=()):
        rows = [cmp.Row(n, cmp.SLOWER if n in confirmed else
                        cmp.FASTER if n in faster else cmp.SAME)
                for n in (SUMSQ, IMAGE, LOOP, COPY)]
        final = cmp.Comparison("b", "c", "m", "m", 0.05, 0.01, False, False, None, rows)
        first = nightly_gate.Pass(final, None, None)
        return nightly_gate.Verdict(first, None, final, list(flagged), list(confirmed))
    t = gate_proof.Tally()
    t.add(verdict([SUMSQ, IMAGE], [SUMSQ, IMAGE, LOOP]), injected)
    t.add(verdict([SUMSQ], [SUMSQ]), injected)  # one injected missed: not detected
    t.add(verdict([SUMSQ, IMAGE, COPY], [SUMSQ, IMAGE, COPY], faster=[LOOP]), injected)
    assert (t.trials, t.comparisons, t.first_pass_flags) == (3, 12, 7)
    assert t.detected_trials == 2 and t.detection_rate == pytest.approx(2 / 3)
    assert t.false_confirmed(injected) == {COPY: 1}
    assert t.faster == {LOOP: 1} and t.regressions_called == 3


def test_reduced_and_bad_settings(tmp_path, capsys):
    parser = gate_proof._parser()
    s = gate_proof.settings(parser.parse_args(["--reduced"]))
    assert (s.aa_comparisons, s.trials, s.improvement_trials, s.reduced) == (20, 4, 1, True)
    for args, words in ((["--trials", "0"], "--trials"), (["--min-time", "0"], "--min-time"),
                        (["--busy-share", "2"], "--busy-share"), (["--filter", "("], "regex"),
                        (["--rounds", "2", "--repetitions", "2"], "too few runs")):
        assert gate_proof.main([*fakes(tmp_path), *args]) == 2
        assert words in capsys.readouterr().err
    # --injected must pick some, not all, of the benchmarks.
    assert gate_proof.main([*fakes(tmp_path), "--filter", ".", "--injected", "nothing"]) == 2
    assert "must match some but not all" in capsys.readouterr().err


def test_busy_loop_spins_and_stops(tmp_path):
    report = tmp_path / "busy.txt"
    process = gate_proof.busy_loop(1.0, 1, report)
    import time
    time.sleep(1.5)
    gate_proof.stop(process)
    assert process.returncode is not None
    assert gate_proof.busy_measured(tmp_path / "missing.txt") is None


def test_injection_trials_compare_the_inject_build_with_itself(tmp_path):
    # The inject build's code layout makes the memcpy 20% slower than the normal build's: that
    # is not the hook, and it must not be blamed on it (both sides run the inject build).
    assert run(tmp_path, slow={"memcpy": 1.2}) == 0
    result = json.loads((tmp_path / "out" / "gate-proof.json").read_text())
    assert result["slowdown_10"]["other_confirmed"] == {}
