"""The nightly's git steps in a checkout that belongs to another user, as in the CPU job's
container (steps run as root, the checkout is the runner user's): git 2.35.2 and later refuse it
("detected dubious ownership") until the workflow marks it safe. Without that step the nightly
must fail with one line that names the cause and the fix, never blame a shallow clone; with it,
every git step works. And the workflow has that step, before the nightly, in each job."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from gapbench_report.cli.kit import ToolError

from gapbench_ci import nightly, nightly_state, runner
from gapbench_ci.runner import DubiousOwnership, NotACommit
from tests.fakes import make_fake

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "nightly.yml"
NOBODY = 65534
# The workflow's step, word for word ($GITHUB_WORKSPACE is the checkout).
SAFE_STEP = 'git config --global --add safe.directory "$GITHUB_WORKSPACE"'

needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="needs root: the test gives its repository to another user (chown), so that git "
           "sees the ownership the CPU job's container sees")


def git_in(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def throwaway_git_config(tmp_path, monkeypatch) -> Path:
    """An empty global git config for this test only (never the real ~/.gitconfig), and no
    system config or sudo user that could mark a repository safe behind the test's back."""
    config = tmp_path / "gitconfig"
    config.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("SUDO_UID", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_DIR",
                 "GIT_WORK_TREE", runner.SOURCE_COMMIT_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    return config


@pytest.fixture
def foreign_repo(tmp_path, throwaway_git_config) -> tuple[Path, str, str]:
    """A repository with two commits that belongs to `nobody`; returns it, HEAD and HEAD~1."""
    root = tmp_path / "checkout"
    root.mkdir()
    git_in(root, "init", "-q")
    for i in (1, 2):
        (root / "CMakeLists.txt").write_text(f"# version {i}\n")
        git_in(root, "add", "CMakeLists.txt")
        git_in(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid",
               "commit", "-q", "-m", f"commit {i}")
    head, parent = git_in(root, "rev-parse", "HEAD"), git_in(root, "rev-parse", "HEAD~1")
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(root)], check=True)
    return root, head, parent


def mark_safe(root: Path) -> None:
    """The workflow's step, with $GITHUB_WORKSPACE set to the checkout."""
    subprocess.run(["bash", "-c", SAFE_STEP], check=True,
                   env={**os.environ, "GITHUB_WORKSPACE": str(root)})


def assert_names_ownership(error: BaseException, root: Path) -> None:
    message = str(error)
    assert "\n" not in message
    assert "dubious ownership" in message
    assert f"git config --global --add safe.directory {root}" in message
    assert "shallow clone" not in message and "fetch-depth" not in message


def fake_build(source: Path, build_dir: Path, *_args) -> Path:
    """build_gapbench without CMake: an identical fake executable for every tree."""
    assert (source / "CMakeLists.txt").exists()  # the exported tree (or the checkout)
    return make_fake(build_dir, "gapbench")


def run_nightly(root: Path, tmp_path: Path, monkeypatch) -> int:
    monkeypatch.setattr(nightly, "REPO_ROOT", root)
    monkeypatch.setattr(nightly, "build_gapbench", fake_build)
    return nightly.main(["--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state"),
                         "--build-root", str(tmp_path / "build"), "--rounds", "3",
                         "--repetitions", "3"])


@needs_root
def test_git_steps_in_a_foreign_checkout_fail_with_one_line_naming_dubious_ownership(
        foreign_repo, tmp_path):
    root, head, _ = foreign_repo
    # The check this test relies on: git itself refuses the repository.
    refused = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                             capture_output=True, text=True)
    assert refused.returncode != 0 and "dubious ownership" in refused.stderr
    with pytest.raises(DubiousOwnership) as raised:
        runner.tree_state(root)  # not "no checkout here"
    assert_names_ownership(raised.value, root)
    for ref in ("HEAD", "HEAD~1", head):
        with pytest.raises(DubiousOwnership) as raised:
            runner.resolve_commit(root, ref)
        assert_names_ownership(raised.value, root)
    with pytest.raises(DubiousOwnership) as raised:
        # no fall-back, no "shallow"
        nightly_state.choose_known_good(root, None, tmp_path / "state")
    assert_names_ownership(raised.value, root)
    with pytest.raises(DubiousOwnership) as raised:
        runner.export_commit(root, head, tmp_path / "export")
    assert_names_ownership(raised.value, root)
    with pytest.raises(DubiousOwnership) as raised:
        runner.git(root, "log", "-1", "--format=%s", head)
    assert_names_ownership(raised.value, root)


@needs_root
def test_the_nightly_command_in_a_foreign_checkout_exits_2_with_the_fix(
        foreign_repo, tmp_path, monkeypatch, capsys):
    root, _, _ = foreign_repo
    assert run_nightly(root, tmp_path, monkeypatch) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ci/nightly: git refuses ")
    assert_names_ownership(err[0], root)


@needs_root
def test_the_workflows_safe_directory_step_makes_every_git_step_work(
        foreign_repo, throwaway_git_config, tmp_path, monkeypatch):
    root, head, parent = foreign_repo
    mark_safe(root)
    assert f"directory = {root}" in throwaway_git_config.read_text()  # only the throwaway
    assert runner.tree_state(root) == runner.TreeState(head, False)
    assert runner.resolve_commit(root, "HEAD~1") == parent
    good = nightly_state.choose_known_good(root, None, tmp_path / "state")
    assert good.commit == parent and good.fell_back
    runner.export_commit(root, parent, tmp_path / "export")
    assert (tmp_path / "export" / "CMakeLists.txt").read_text() == "# version 1\n"
    assert runner.git(root, "log", "-1", "--format=%s", parent) == "commit 1"
    # The whole command, builds faked: it exports HEAD~1, passes, and records HEAD as good.
    assert run_nightly(root, tmp_path, monkeypatch) == 0
    assert (tmp_path / "build" / f"src-{parent[:12]}" / "CMakeLists.txt").exists()
    assert (tmp_path / "state" / nightly_state.KNOWN_GOOD_FILE).read_text().strip() == head
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert f"known-good: {parent[:12]} commit 1" in summary


def test_the_old_unsafe_repository_message_is_recognised_too(tmp_path):
    # Git 2.35.2 to 2.35.x worded the refusal differently.
    stderr = ("fatal: unsafe repository ('/w/gapbench' is owned by someone else)\n"
              "To add an exception for this directory, call:\n\n"
              "\tgit config --global --add safe.directory /w/gapbench\n")
    with pytest.raises(DubiousOwnership) as raised:
        runner._refused_for_ownership(tmp_path, stderr)
    assert_names_ownership(raised.value, Path("/w/gapbench"))


def test_shallow_clone_is_named_only_when_the_clone_is_shallow(tmp_path, throwaway_git_config):
    full = tmp_path / "full"
    full.mkdir()
    git_in(full, "init", "-q")
    for i in (1, 2):
        git_in(full, "-c", "user.name=t", "-c", "user.email=t@example.invalid",
               "commit", "-q", "--allow-empty", "-m", f"c{i}")
    with pytest.raises(NotACommit) as raised:
        runner.resolve_commit(full, "no-such-ref")
    assert "shallow clone" not in str(raised.value)
    shallow = tmp_path / "shallow"
    git_in(tmp_path, "clone", "-q", "--depth", "1", f"file://{full}", str(shallow))
    with pytest.raises(NotACommit, match="a shallow clone .*fetch-depth: 0"):
        runner.resolve_commit(shallow, "HEAD~1")
    with pytest.raises(ToolError, match="HEAD~1 is not in this shallow clone"):
        nightly_state.choose_known_good(shallow, None, tmp_path / "state")
    # Not a checkout at all: git's own words, no shallow clone, and no fall-back to HEAD~1.
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(ToolError) as raised:
        nightly_state.choose_known_good(plain, None, tmp_path / "state")
    assert "not a git repository" in str(raised.value)
    assert not isinstance(raised.value, NotACommit)
    assert "shallow clone" not in str(raised.value)


# ---- the workflow's step ------------------------------------------------------------------------

def job_steps(job: str) -> list[str]:
    """The steps of one job of the workflow, as text, in order."""
    body = WORKFLOW.read_text(encoding="utf-8").split("\njobs:\n", 1)[1]
    parts = re.split(r"^  ([a-z0-9_-]+):\n", body, flags=re.M)[1:]
    text = dict(zip(parts[::2], parts[1::2]))[job]
    return re.split(r"^      - ", text.split("    steps:\n", 1)[1], flags=re.M)[1:]


@pytest.mark.parametrize("job", ["cpu", "gpu"])
def test_the_workflow_marks_the_checkout_safe_before_the_nightly_runs(job):
    steps = job_steps(job)
    checkout = next(i for i, s in enumerate(steps) if s.startswith("uses: actions/checkout@"))
    safe = next(i for i, s in enumerate(steps) if SAFE_STEP in s)
    gate = next(i for i, s in enumerate(steps) if 'ci/nightly "${args[@]}"' in s)
    assert checkout < safe < gate
    assert re.search(r"^ *run: " + re.escape(SAFE_STEP) + r"\n *shell: bash$", steps[safe], re.M)
