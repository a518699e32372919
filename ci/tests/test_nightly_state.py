"""The state the nightly carries from night to night (the known-good commit and the history),
kept by the workflow in the Actions cache, which evicts it after 7 days without use. A night
that finds it lost, new or partial says so at the top of summary.md, in the log and in
comparison.json; it never falls back to HEAD~1 in silence."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gapbench_ci import nightly, nightly_state
from tests.fakes import make_fake


@pytest.fixture
def repo(tmp_path) -> tuple[Path, str, str]:
    """A clean checkout with two commits; returns it, HEAD and HEAD~1."""
    root = tmp_path / "checkout"
    root.mkdir()

    def git(*args):
        return subprocess.run(["git", "-C", str(root), "-c", "user.name=t",
                               "-c", "user.email=t@example.invalid", *args], check=True,
                              capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    for i in (1, 2):
        (root / "CMakeLists.txt").write_text(f"# version {i}\n")
        git("add", "CMakeLists.txt")
        git("commit", "-q", "-m", f"commit {i}")
    return root, git("rev-parse", "HEAD"), git("rev-parse", "HEAD~1")


def fake_build(source: Path, build_dir: Path, *_args) -> Path:
    """build_gapbench without CMake: an identical fake executable for every tree."""
    return make_fake(build_dir, "gapbench")


def night(root: Path, tmp_path: Path, monkeypatch, *extra: str) -> tuple[int, str, dict]:
    """One nightly on `root` with faked builds: its exit status, summary.md and
    comparison.json."""
    monkeypatch.setattr(nightly, "REPO_ROOT", root)
    monkeypatch.setattr(nightly, "build_gapbench", fake_build)
    out = tmp_path / "out"
    status = nightly.main(["--out", str(out), "--state-dir", str(tmp_path / "state"),
                           "--build-root", str(tmp_path / "build"), "--rounds", "3",
                           "--repetitions", "3", *extra])
    return (status, (out / "summary.md").read_text(),
            json.loads((out / "comparison.json").read_text()))


def test_a_lost_state_is_said_at_the_top_of_the_summary_in_the_log_and_in_the_json(
        repo, tmp_path, monkeypatch, capsys):
    root, head, parent = repo
    state = tmp_path / "state"
    status, summary, data = night(root, tmp_path, monkeypatch)
    assert status == 0
    lines = summary.splitlines()
    assert lines[0] == "# gapbench nightly: no regression"
    assert lines[2] == (f"**State lost or new:** no known-good commit and no history were "
                        f"found in {state} (the Actions cache is evicted after 7 days without "
                        f"use); this night compares against HEAD~1 and starts a new history.")
    assert f"known-good: {parent[:12]} commit 1 — HEAD~1 (no known-good recorded)" in summary
    assert data["state"] == {"dir": str(state), "origin": None, "known_good_recorded": False,
                             "history_nights": 0, "warning": lines[2]}
    log = capsys.readouterr().err
    assert f"nightly: State lost or new: no known-good commit and no history were found " \
           f"in {state}" in log
    # The night passed on a clean tree: the next one carries on from it, and says nothing.
    assert (state / nightly_state.KNOWN_GOOD_FILE).read_text().strip() == head
    status, summary, data = night(root, tmp_path, monkeypatch)
    assert status == 0
    assert summary.splitlines()[2].startswith("- this build:")  # nothing above the facts
    assert "last good night" in summary
    assert data["state"]["warning"] is None
    assert data["state"]["known_good_recorded"] and data["state"]["history_nights"] == 1
    assert "State lost" not in capsys.readouterr().err


def test_history_without_a_known_good_is_said_apart_from_a_lost_state(repo, tmp_path,
                                                                     monkeypatch):
    root, _, _ = repo
    history = tmp_path / "state" / nightly_state.HISTORY_DIR
    history.mkdir(parents=True)
    (history / "20260101T021700Z-0123456789ab.json").write_text("{}")
    _, summary, data = night(root, tmp_path, monkeypatch)
    assert summary.splitlines()[2].startswith(
        f"**No known-good commit:** {tmp_path / 'state'} holds a history of 1 night but no "
        "known-good")
    assert summary.splitlines()[2].endswith("this night compares against HEAD~1.")
    assert data["state"]["history_nights"] == 1 and not data["state"]["known_good_recorded"]


def test_the_workflow_says_where_the_state_came_from(repo, tmp_path, monkeypatch):
    root, _, _ = repo
    origin = "the Actions cache had no nightly state (evicted after 7 days without use)"
    _, summary, data = night(root, tmp_path, monkeypatch, "--state-origin", origin)
    assert summary.splitlines()[2].startswith("**State lost or new:**")
    assert f"({origin}); this night compares" in summary
    assert f"- state ({tmp_path / 'state'}): {origin}" in summary
    assert data["state"]["origin"] == origin


def test_given_good_still_says_that_a_new_history_starts(repo, tmp_path, monkeypatch):
    root, _, parent = repo
    _, summary, _ = night(root, tmp_path, monkeypatch, "--good", parent)
    assert summary.splitlines()[2].startswith("**State lost or new:**")
    assert summary.splitlines()[2].endswith("; this night starts a new history.")
    assert "HEAD~1" not in summary


FOUND_NOTHING = nightly_state.StateFound(known_good=False, nights=0)
FOUND_HISTORY = nightly_state.StateFound(known_good=False, nights=3)
FOUND_GOOD = nightly_state.StateFound(known_good=True, nights=0)
FOUND_ALL = nightly_state.StateFound(known_good=True, nights=3)


@pytest.mark.parametrize("found, fell_back, keeps_history, expected", [
    (FOUND_NOTHING, True, True, "**State lost or new:** no known-good commit and no history "
     "were found in S (the Actions cache is evicted after 7 days without use); this night "
     "compares against HEAD~1 and starts a new history."),
    (FOUND_NOTHING, True, False, "**State lost or new:** no known-good commit and no history "
     "were found in S (the Actions cache is evicted after 7 days without use); this night "
     "compares against HEAD~1."),  # --no-state
    (FOUND_NOTHING, False, True, "**State lost or new:** no known-good commit and no history "
     "were found in S (the Actions cache is evicted after 7 days without use); this night "
     "starts a new history."),  # --good, or given executables
    (FOUND_HISTORY, True, True, "**No known-good commit:** S holds a history of 3 nights but "
     "no known-good (no night has passed on a clean tree since it began, or the file was "
     "lost); this night compares against HEAD~1."),
    (FOUND_ALL, True, True, "**Known-good commit unusable:** S/known-good names no commit of "
     "this clone (a rewritten history?); this night compares against HEAD~1."),
    (FOUND_GOOD, False, True, "**History lost:** S holds a known-good commit but no history "
     "(the Actions cache is evicted after 7 days without use); this night starts a new "
     "history."),
    (FOUND_ALL, False, True, None),
    (FOUND_HISTORY, False, True, None),  # --good with a history: nothing is missing
    (FOUND_NOTHING, False, False, None),  # --good --no-state: nothing is needed
])
def test_state_warning(found, fell_back, keeps_history, expected):
    assert nightly_state.state_warning(found, Path("S"), fell_back, keeps_history) == expected


def test_read_state(tmp_path):
    assert nightly_state.read_state(tmp_path / "none") == FOUND_NOTHING
    (tmp_path / nightly_state.HISTORY_DIR).mkdir()
    for name in ("a.json", "b.json", ".c.json.1.tmp"):
        (tmp_path / nightly_state.HISTORY_DIR / name).write_text("{}")
    (tmp_path / nightly_state.KNOWN_GOOD_FILE).write_text("f" * 40)
    assert nightly_state.read_state(tmp_path) == nightly_state.StateFound(known_good=True, nights=2)
