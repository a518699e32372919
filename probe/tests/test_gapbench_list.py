"""gapbench's list as the probe keeps it: parsed into parts, and checked against a gapbench
(here a stand-in printing the committed list, or a changed one) naming every line that differs.
ctest probe.shapes_match_gapbench runs the same check against the built gapbench."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gapbench_probe import gapbench_list
from gapbench_probe.gapbench_list import Listed, main, parse, sections

COMMITTED = sections(gapbench_list.COMMITTED.read_text(encoding="utf-8"))


def fake_gapbench(tmp_path: Path, lists: dict[str, list[str]]) -> str:
    """An executable that answers `--profile=P --benchmark_list_tests` with lists[P]."""
    script = tmp_path / "gapbench"
    script.write_text(f"#!{sys.executable}\nimport sys\nlists = {lists!r}\n"
                      "print(*lists[sys.argv[1].split('=')[1]], sep='\\n')\n")
    script.chmod(0o755)
    return str(script)


def test_a_name_in_its_parts():
    assert parse("conv/cudnn/gpu/n:1/c:1/hw:28/math:fp16/manual_time") == Listed(
        "conv", "cudnn", "gpu", (("n", "1"), ("c", "1"), ("hw", "28"), ("math", "fp16")))
    assert parse("transfer/memcpy/cpu/bytes:4096/real_time").axes == (("bytes", "4096"),)
    # Google Benchmark's own parts after the timing are not axes.
    assert parse("peak/memcpy/cpu/mib:256/real_time/threads:2").axes == (("mib", "256"),)


def test_names_that_follow_the_machine_are_not_kept(tmp_path, capsys):
    """peak/'s CPU names carry the machine's cores and cache: a 64-core box lists others than
    CI's 2 cores, and the check must pass on both. Its GPU names (the GEMM sizes) are kept."""
    committed = {p: [*names, "peak/memcpy/cpu/mib:256/real_time/threads:2"]
                 for p, names in COMMITTED.items()}
    elsewhere = {p: [*names, "peak/memcpy/cpu/mib:1024/real_time/threads:64"]
                 for p, names in COMMITTED.items()}
    assert not [n for names in COMMITTED.values() for n in names
                if n.startswith("peak/") and "/cpu/" in n]
    assert "peak/gemm/gpu/n:8192/math:fp16/manual_time" in COMMITTED["full"]
    assert main(["--check", fake_gapbench(tmp_path, elsewhere)]) == 0
    assert gapbench_list.differences(
        gapbench_list.from_gapbench(fake_gapbench(tmp_path, committed)),
        gapbench_list.from_gapbench(fake_gapbench(tmp_path, elsewhere))) == []


def test_the_committed_list_has_both_profiles_and_every_family_the_probe_reads():
    assert set(COMMITTED) == {"quick", "full"}
    for names in COMMITTED.values():
        assert {"preprocess", "conv", "lstm", "transfer", "pipeline", "overhead"} <= {
            parse(n).family for n in names}


def test_the_same_list_passes(tmp_path, capsys):
    assert main(["--check", fake_gapbench(tmp_path, COMMITTED)]) == 0
    assert "matches" in capsys.readouterr().out


def test_a_changed_list_fails_naming_each_difference(tmp_path, capsys):
    changed = {**COMMITTED, "full": [n.replace("hidden:64/", "hidden:65/")
                                     for n in COMMITTED["full"]]}
    assert main(["--check", fake_gapbench(tmp_path, changed)]) == 1
    err = capsys.readouterr().err
    assert ("--profile=full: gapbench lists lstm/blas/cpu/scope:step/batch:64/input:50/"
            "hidden:65/steps:100/real_time, the file does not") in err
    assert ("--profile=full: the file lists lstm/blas/cpu/scope:step/batch:64/input:50/"
            "hidden:64/steps:100/real_time, gapbench does not") in err
    assert "--profile=quick" not in err and "--regenerate" in err


def test_a_reordered_list_fails(tmp_path, capsys):
    reordered = {**COMMITTED, "quick": COMMITTED["quick"][::-1]}
    assert main(["--check", fake_gapbench(tmp_path, reordered)]) == 1
    assert "--profile=quick: the same names in another order" in capsys.readouterr().err


def test_regenerate_writes_what_gapbench_lists(tmp_path, monkeypatch):
    path = tmp_path / "gapbench_benchmarks.txt"
    monkeypatch.setattr(gapbench_list, "COMMITTED", path)
    lists = {"quick": ["conv/b/cpu/n:1/real_time"], "full": ["conv/b/cpu/n:2/real_time"]}
    assert main(["--regenerate", fake_gapbench(tmp_path, lists)]) == 0
    assert sections(path.read_text()) == lists


@pytest.mark.parametrize("argv", [["--check"], ["--check", "/no/such/gapbench"],
                                  ["--check", "/bin/false"], ["--frobnicate", "/bin/true"]])
def test_bad_input_is_one_line_and_exit_2(argv, capsys):
    assert main(argv) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_probe_reads_each_name_as_the_report_does():
    """The row-name grammar has one home, the report's NAME_PATTERN; the probe's split-based
    reading of gapbench's list (parse) is held to it on every committed name."""
    results = pytest.importorskip("gapbench_report.inputs.results")
    names = [n for profile in COMMITTED.values() for n in profile]
    assert len(names) > 100
    for name in names:
        theirs, ours = results.parse_name(name), parse(name)
        assert (ours.family, ours.variant, ours.device, dict(ours.axes)) == (
            theirs.family, theirs.variant, theirs.device, theirs.axes), name
