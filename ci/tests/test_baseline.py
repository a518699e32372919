"""Tests of the baseline capture: the spread rule, the refusals (nothing written), the
provenance, the README table, on a fake executable."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest
from gapbench_report.cli.kit import ToolError
from gapbench_report.inputs.results import load_results

from gapbench_ci import baseline, baseline_folder
from gapbench_ci.runner import RunSpec, run_gapbench
from tests.fakes import BENCHMARKS, COPY, IMAGE, SUMSQ, invocations, make_fake
from tests.synthetic import in_memory, runs, skipped

GPU = "preprocess/vectorized/gpu/op:sumsq/rows:10000/cols:100/manual_time"


def test_spread_is_the_interquartile_range_over_the_median():
    assert baseline_folder.spread((1.0, 2.0, 3.0, 4.0, 5.0)) == pytest.approx((4 - 2) / 3)
    assert baseline_folder.spread((5.0,) * 10) == 0
    # One stray repetition of ten moves the quartiles little; the cv a lot.
    stray = (100.0, 101, 99, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 300)
    assert baseline_folder.spread(stray) < 0.02
    assert baseline_folder.coefficient_of_variation(stray) > 0.5


def _results(**benchmarks):
    entries = []
    for name, spec in benchmarks.items():
        entries += skipped(name, spec) if isinstance(spec, str) else runs(name, spec)
    return in_memory(entries)


def test_check_run_accepts_a_quiet_run_and_summarizes_it():
    quiet = [1e-4 * (1 + 0.001 * k) for k in range(10)]
    summary = baseline_folder.check_run(_results(**{SUMSQ: quiet, IMAGE: quiet[::-1],
                                             GPU: "no CUDA device"}))
    assert summary["timed"] == 2 and summary["skipped"] == 1
    assert summary["worst_spread"] < 0.01 and summary["limit"] == baseline_folder.SPREAD_LIMIT


def test_check_run_names_the_noisy_benchmarks():
    quiet = [1e-4] * 5 + [1.001e-4] * 5
    noisy = [1e-4, 3e-4, 1e-4, 3.2e-4, 1.1e-4, 0.9e-4, 2.9e-4, 1e-4, 3e-4, 3.1e-4]
    assert baseline_folder.spread(tuple(noisy)) > baseline_folder.SPREAD_LIMIT
    with pytest.raises(baseline_folder.Refused) as refused:
        baseline_folder.check_run(_results(**{SUMSQ: quiet, IMAGE: noisy}))
    text = str(refused.value)
    assert "1 of 2 benchmarks spread too wide" in text
    assert IMAGE in text and SUMSQ not in text
    assert "cv" in text and "10 repetitions" in text


def test_check_run_refuses_failures_and_empty_runs():
    failed = in_memory(runs(SUMSQ, [1e-4] * 5) + [{
        **runs(IMAGE, [1e-4])[0], "error_occurred": True, "error_message": "validation failed"}])
    with pytest.raises(baseline_folder.Refused, match="1 benchmark\\(s\\) failed"):
        baseline_folder.check_run(failed)
    with pytest.raises(baseline_folder.Refused, match="nothing was timed"):
        baseline_folder.check_run(_results(**{GPU: "no CUDA device"}))


# ---- README --------------------------------------------------------------------------------

PROV = {"machine": {"cpu.model": "AMD EPYC", "cpu.cores": "2", "machine.id": "abc"},
        "gapbench_commit": "0123456789abcdef", "gapbench_dirty": False, "profile": "full",
        "repetitions": 10, "filter": "^(peak|preprocess)/", "min_time_s": None,
        "spread": {"worst_spread": 0.034}, "captured_at": "2026-01-02T03:04:05+00:00",
        "command": "ci/baseline cpu-2core --filter '^(peak|preprocess)/'"}


def test_readme_row_names_machine_time_commit_and_command():
    row = baseline_folder.readme_row("cpu-2core", PROV)
    assert row.startswith("| [`cpu-2core`](cpu-2core.json) | AMD EPYC; 2 cores; no usable GPU; "
                          "machine.id abc | 2026-01-02 03:04:05+00:00 | `0123456789ab` |")
    assert "widest spread 3.4%" in row
    assert "filter `^(peak\\|preprocess)/`" in row  # pipes escaped for the table
    assert row.count(" | ") == 5
    dirty = baseline_folder.readme_row("x", {**PROV, "gapbench_dirty": True})
    assert "(uncommitted changes)" in dirty


def test_update_readme_creates_adds_replaces_and_keeps_the_rest():
    text = baseline_folder.update_readme("", "b", "| [`b`](b.json) | one |")
    assert text.startswith("# Baselines") and "| [`b`](b.json) | one |" in text
    text = baseline_folder.update_readme(text, "a", "| [`a`](a.json) | two |")
    text = baseline_folder.update_readme(text, "b", "| [`b`](b.json) | three |")
    table = text.split(baseline_folder.README_BEGIN)[1].split(baseline_folder.README_END)[0]
    table = table.splitlines()
    assert [line for line in table if line.startswith("| [")] == [
        "| [`a`](a.json) | two |", "| [`b`](b.json) | three |"]
    assert "| one |" not in text
    # A README written by hand keeps its text, and gets the table at the end.
    text = baseline_folder.update_readme("# Mine\n\nnotes\n", "a", "| [`a`](a.json) | x |")
    assert text.startswith("# Mine\n\nnotes\n") and "| [`a`](a.json) | x |" in text


# ---- the command on a fake executable ------------------------------------------------------------

def capture(tmp_path, *extra, **spec):
    log = tmp_path / "log.jsonl"
    exe = make_fake(tmp_path / "bin", "gapbench", log=str(log), **spec)
    out = tmp_path / "baselines"
    code = baseline.main(["cpu-test", "--binary", str(exe), "--out-dir", str(out), *extra])
    return code, out, log


def test_capture_writes_the_baseline_with_provenance(tmp_path, capsys):
    code, out, log = capture(tmp_path, "--filter", "^preprocess/", "--repetitions", "6",
                             facts={"cublas.version_loaded": "13.1.0"})
    assert code == 0, capsys.readouterr().err
    target = out / "cpu-test.json"
    assert capsys.readouterr().out.strip() == str(target)
    results = load_results(target)  # compare and render read it as any results file
    assert set(results.benchmarks()) == {n for n in BENCHMARKS if n.startswith("preprocess/")}
    assert all(len(b.samples) == 6 for b in results.benchmarks().values())
    prov = json.loads(target.read_text())["provenance"]
    assert prov["name"] == "cpu-test" and prov["profile"] == "full"
    assert prov["repetitions"] == 6 and prov["random_interleaving"] is True
    assert prov["filter"] == "^preprocess/"
    assert prov["machine"]["machine.id"] == "fake-machine"  # gapbench doctor --json
    assert prov["machine_findings"] == ["a fake finding"]
    assert prov["libraries"] == {"openblas.version": "0.3.21", "onednn.version": "2.6.3",
                                 "cuda.runtime_version": "13.0", "cublas.version_loaded": "13.1.0"}
    assert prov["command"].startswith("ci/baseline cpu-test --binary ")
    assert prov["captured_at"].endswith("+00:00")
    assert "gapbench_commit" in prov and isinstance(prov["gapbench_dirty"], bool)
    run = next(c["args"] for c in invocations(log) if c["args"][:1] != ["doctor"])
    assert "--profile=full" in run and "--benchmark_enable_random_interleaving=true" in run
    assert "--benchmark_repetitions=6" in run
    readme = (out / "README.md").read_text()
    assert "| [`cpu-test`](cpu-test.json) | Fake CPU; 2 cores; no usable GPU; machine.id " \
           "fake-machine |" in readme
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "cpu-test.json"]


def test_a_second_capture_replaces_its_row(tmp_path):
    assert capture(tmp_path)[0] == 0
    code, out, _ = capture(tmp_path, "--repetitions", "7")
    assert code == 0
    readme = (out / "README.md").read_text()
    assert readme.count("[`cpu-test`]") == 1 and "7 repetitions" in readme


def test_a_noisy_run_is_refused_and_nothing_is_written(tmp_path, capsys):
    code, out, _ = capture(tmp_path, noisy={"memcpy": 2.0})
    assert code == 1
    err = capsys.readouterr().err
    assert "refused, nothing written" in err and COPY in err and SUMSQ not in err
    assert list(out.iterdir()) == []  # no baseline, no README row, no run file left


def test_the_spread_limit_can_be_set(tmp_path, capsys):
    # A spread of about 7% passes the default limit and is refused under a limit of 2%.
    assert capture(tmp_path, noisy={"memcpy": 0.05})[0] == 0
    code, out, _ = capture(tmp_path, "--spread-limit", "0.02", noisy={"memcpy": 0.05})
    assert code == 1 and "above 2%" in capsys.readouterr().err
    prov = json.loads((out / "cpu-test.json").read_text())["provenance"]  # the first capture's
    assert prov["spread"]["limit"] == baseline_folder.SPREAD_LIMIT
    for bad in ("0", "1.5", "nan"):
        assert capture(tmp_path, "--spread-limit", bad)[0] == 2


def test_a_failed_benchmark_is_refused(tmp_path, capsys):
    code, out, _ = capture(tmp_path, fail=["image"])
    assert code == 1
    assert "failed" in capsys.readouterr().err and not (out / "cpu-test.json").exists()


def test_a_test_inject_build_is_refused(tmp_path, capsys):
    code, out, log = capture(tmp_path, facts={"gapbench.test_inject_fraction": "0.000000"})
    assert code == 1 and "GAPBENCH_TEST_INJECT" in capsys.readouterr().err
    assert [c["args"][:1] for c in invocations(log)] == [["doctor"]]  # never ran


def test_require_gpu_stops_before_the_run(tmp_path, capsys):
    code, out, log = capture(tmp_path, "--require-gpu")
    assert code == 2
    assert "cannot use the GPU here: no NVIDIA driver (fake)" in capsys.readouterr().err
    assert len(invocations(log)) == 1
    code, out, _ = capture(tmp_path / "gpu", "--require-gpu", facts={"gpu.status": "ok",
                                                                      "gpu.name": "Tesla T4"})
    assert code == 0
    assert "Tesla T4" in (out / "README.md").read_text()


@pytest.mark.parametrize("args, words", [
    (["bad/name"], "name 'bad/name'"),
    (["ok", "-x"], "unrecognized"),
    (["ok", "--repetitions", "4"], "at least 5"),
    (["ok", "--min-time", "0"], "--min-time"),
    (["ok", "--binary", "/nonexistent/gapbench"], "no such executable"),
])
def test_bad_arguments_exit_2(tmp_path, capsys, args, words):
    assert baseline.main([*args, "--out-dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]
    assert not (tmp_path / "o").exists()


# ---- what is committed under results/baselines ---------------------------------------------------

def test_committed_baselines_are_listed_and_carry_their_provenance():
    folder = Path(__file__).resolve().parents[2] / "results" / "baselines"
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert baseline_folder.README_BEGIN in readme and baseline_folder.README_END in readme
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        prov = data["provenance"]
        assert prov["name"] == path.stem, path
        assert prov["command"].startswith("ci/baseline "), path
        if "baseline" in prov:  # a framework side, kept beside its baseline: the same machine
            side = json.loads((folder / f"{prov['baseline']}.json").read_text(encoding="utf-8"))
            assert data["context"]["machine.id"] == side["context"]["machine.id"], path
            assert data["context"]["framework.name"] and prov["adopted"], path
            assert f"[`{path.stem}`]({path.name})" in readme, path
            load_results(path)
            continue
        if prov.get("adopted"):  # measured elsewhere: what each file gave, and how it was made
            assert prov["how"] and prov["files"], path
            rows = len(load_results(path).benchmarks())
            assert sum(f["benchmarks"] for f in prov["files"]) == rows, path
        else:
            assert prov["profile"] == "full" and prov["random_interleaving"] is True, path
            assert prov["repetitions"] >= 5, path
        assert prov["machine"]["machine.id"] == data["context"]["machine.id"], path
        assert prov["gapbench_commit"] and prov["captured_at"], path
        assert f"[`{path.stem}`]({path.name})" in readme, f"{path.name} has no README row"
        results = load_results(path)
        baseline_folder.check_run(results, prov["spread"]["limit"])  # the rule it was made by


def test_a_second_capture_into_the_folder_at_once_is_refused_in_one_line(tmp_path, capsys):
    """Two captures of one name shared the run file: one removed the other's, which then
    failed with "exited with status 0" and gapbench's last line of output."""
    out = tmp_path / "baselines"
    out.mkdir()
    held = os.open(out, os.O_RDONLY)  # the first capture, still running
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        code, _, log = capture(tmp_path)
    finally:
        os.close(held)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ci/baseline: another ci/baseline is capturing into {out} now; run this one "
                   "when it has finished (two at once would disturb each other's timings)"]
    assert [c["args"][:1] for c in invocations(log)] == [["doctor"]]  # never ran
    assert list(out.iterdir()) == []
    assert capture(tmp_path)[0] == 0  # once the first has finished


def test_a_run_whose_results_file_vanished_says_so(tmp_path):
    exe = tmp_path / "gapbench"
    exe.write_text("#!/bin/sh\necho '***WARNING*** Library was built as DEBUG' >&2\n")
    exe.chmod(0o755)  # as if another process had removed its file: exit 0, no file
    with pytest.raises(ToolError, match=r"exited with status 0 but .*run\.json is not there: "
                                        "something else removed it$"):
        run_gapbench(exe, RunSpec(), tmp_path / "run.json")


# ---- adopting results measured elsewhere ---------------------------------------------------------

PEAK = "peak/sgemm/gpu/n:4096/manual_time"
CONV = "conv/cudnn/gpu/n:1/c:1/hw:28/k:1/r:3/stride:1/pad:0/manual_time"
LSTM = "lstm/cudnn/gpu/scope:seq/batch:64/input:50/hidden:64/steps:100/manual_time"
HOW = "GPU variants only, on a lent GPU."


def adopt(tmp_path, *files, extra=()):
    out = tmp_path / "baselines"
    code = baseline.main(["gpu-x", "--adopt", *map(str, files), "--commit", "42634e8",
                          "--how", HOW, *extra, "--out-dir", str(out)])
    return code, out


def test_adopt_merges_the_files_keeping_a_shared_name_once(tmp_path, capsys):
    from tests.synthetic import write  # noqa: PLC0415
    quiet = [1e-4, 1.01e-4, 0.99e-4]
    full = write(tmp_path / "key-full.json", runs(PEAK, [2e-3] * 3) + runs(LSTM, [1e-3] * 3),
                 **{"gapbench.profile": "full", "date": "2026-11-26T14:32:03+00:00"})
    conv = write(tmp_path / "conv.json", runs(PEAK, [9e-3] * 5) + runs(CONV, quiet),
                 date="2026-11-26T14:26:53+00:00")
    lstm = write(tmp_path / "lstm.json", runs(PEAK, [9e-3] * 5) + runs(LSTM, [5e-3] * 5),
                 date="2026-11-26T14:27:31+00:00")
    probe = write(tmp_path / "framework-torch.json", runs(
        "framework/torch/gpu/op:lstm/scope:seq/batch:64/input:50/hidden:64/steps:100", quiet),
        **{"framework.name": "torch", "framework.version": "2.11.0"})
    code, out = adopt(tmp_path, full, conv, lstm, probe)
    assert code == 0, capsys.readouterr().err
    target = out / "gpu-x.json"
    results = load_results(target)
    assert set(results.benchmarks()) == {PEAK, CONV, LSTM}
    # A name in several files comes from the first file given: the full-size run's.
    assert results.benchmarks()[PEAK].samples == (2e-3,) * 3
    assert results.benchmarks()[LSTM].samples == (1e-3,) * 3
    data = json.loads(target.read_text())
    assert data["context"]["gapbench.profile"] == "full+quick"
    prov = data["provenance"]
    assert prov["adopted"] is True and prov["how"] == HOW and prov["gapbench_commit"] == "42634e8"
    assert prov["gapbench_commit_source"].startswith("stated by the adopter")
    assert prov["captured_at"] == "2026-11-26T14:26:53+00:00"  # the earliest file's run
    assert [(f["file"], f["benchmarks"], f["already_in_an_earlier_file"])
            for f in prov["files"]] == [("key-full.json", 2, 0), ("conv.json", 1, 1),
                                        ("lstm.json", 0, 2)]
    assert prov["machine"]["machine.id"] == "test-machine"
    assert "gapbench.profile" not in prov["machine"]  # the run's, not the machine's
    side = out / "gpu-x.framework-torch.json"
    assert load_results(side).context["framework.name"] == "torch"
    assert json.loads(side.read_text())["provenance"]["baseline"] == "gpu-x"
    readme = (out / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| [`gpu-x`]"))
    assert f"adopted: {HOW}" in row and "`42634e8`" in row
    assert "[`gpu-x.framework-torch`](gpu-x.framework-torch.json)" in row
    assert row.endswith("--commit 42634e8 --how TEXT` |")
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "gpu-x.framework-torch.json",
                                                     "gpu-x.json"]


def test_adopt_refuses_two_machines_a_failure_and_missing_words(tmp_path, capsys):
    from tests.synthetic import write  # noqa: PLC0415
    a = write(tmp_path / "a.json", runs(CONV, [1e-4] * 3))
    b = write(tmp_path / "b.json", runs(LSTM, [1e-4] * 3), **{"machine.id": "other"})
    code, out = adopt(tmp_path, a, b)
    assert code == 1 and "2 machines (other, test-machine)" in capsys.readouterr().err
    assert not (out / "gpu-x.json").exists()
    bad = write(tmp_path / "bad.json", runs(CONV, [1e-4] * 3) + [
        {**runs(LSTM, [1e-4])[0], "error_occurred": True, "error_message": "validation failed"}])
    code, out = adopt(tmp_path, bad)
    assert code == 1 and "1 benchmark(s) failed" in capsys.readouterr().err
    assert not out.exists() or list(out.iterdir()) == []  # not even the staging file
    assert baseline.main(["gpu-x", "--adopt", str(a), "--how", HOW]) == 2
    assert "--adopt needs --commit" in capsys.readouterr().err
    assert baseline.main(["gpu-x", "--adopt", str(a), "--commit", "42634e8"]) == 2
    assert "--adopt needs --how" in capsys.readouterr().err
    assert baseline.main(["gpu-x", "--commit", "42634e8"]) == 2
    assert "go with --adopt" in capsys.readouterr().err
