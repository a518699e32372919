"""The lib_threads cases of a framework whose intra-op threads are fixed once it has started
(TensorFlow's: docs/probe.md says why): a child process per thread count, the framework set to
that count before its first op, its cases run there as the parent runs its own (run.CaseRunner)
and their entries sent back.

    python -m gapbench_probe.threads_child < request.json > entries.json

The request: the framework's name, the count, the profile, the seed and the cases (index, op,
axes); the reply: {"entries": {name: [entry, ...]}}. A child that fails, hangs or answers
nonsense makes each of its cases an error entry saying so; the others still run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gapbench_probe.gbjson import SKIP_PREFIX, error_entries
from gapbench_probe.plan import Case, Profile

DEVICE = "cpu"  # the threads family's device
CHILD_TIMEOUT_S = 600  # per child: the framework's start and its cases, seconds in quick
COMMAND = [sys.executable, "-m", "gapbench_probe.threads_child"]
PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # where the child imports gapbench_probe from


def request_of(framework: str, count: int, profile: Profile, seed: int,
               cases: list[tuple[int, Case]]) -> dict:
    return {"framework": framework, "lib_threads": count, "seed": seed,
            "profile": [profile.name, profile.repetitions, profile.min_time],
            "cases": [[index, case.op, [list(a) for a in case.axes]] for index, case in cases]}


def spawn(request: dict) -> str:
    """The child's reply to `request`, its standard output; OSError or SubprocessError where it
    could not be run or failed (its last line of stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH"))
                                        if p)
    done = subprocess.run(COMMAND, input=json.dumps(request), capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT_S, env=env, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise subprocess.SubprocessError(last)
    return done.stdout


class Children:
    """The parent's side: the child of a count runs at the first case of that count, for every
    case of it, and each case then takes its entries."""

    def __init__(self, framework: str, profile: Profile, seed: int,
                 cases: list[tuple[int, Case]]):
        self.framework, self.profile, self.seed = framework, profile, seed
        self.by_count: dict[int, list[tuple[int, Case]]] = {}
        for index, case in cases:
            self.by_count.setdefault(case.lib_threads, []).append((index, case))
        self.replies: dict[str, list[dict]] = {}

    def entries(self, case: Case, name: str, index: int) -> list[dict]:
        count = case.lib_threads
        if name not in self.replies and count in self.by_count:
            self.replies.update(self.run_child(count, self.by_count.pop(count)))
        found = self.replies.pop(name, None)
        if not found:
            return self.failed([(index, case)], count, "its reply has no entries for it")[name]
        return found

    def run_child(self, count: int, cases: list[tuple[int, Case]]) -> dict[str, list[dict]]:
        try:
            reply = json.loads(spawn(request_of(self.framework, count, self.profile, self.seed,
                                                cases)))["entries"]
            if not isinstance(reply, dict):
                raise TypeError("its reply's entries are no mapping")
            return reply
        except subprocess.TimeoutExpired:
            return self.failed(cases, count, f"it ran past {CHILD_TIMEOUT_S} s")
        except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError) as e:
            return self.failed(cases, count, " ".join(str(e).split()) or type(e).__name__)

    def failed(self, cases: list[tuple[int, Case]], count: int, why: str
               ) -> dict[str, list[dict]]:
        message = f"the child process on lib_threads:{count} failed: {why}"
        return {name: error_entries(name, index, self.profile.repetitions, message)
                for name, index, _ in named(self.framework, cases)}


def named(framework: str, cases: list[tuple[int, Case]]) -> list[tuple[str, int, Case]]:
    return [(case.name(framework, DEVICE), index, case) for index, case in cases]


def answer(request: dict) -> dict:
    """The child's side: the framework opened and set to the count before its first op, then
    each case, as the parent would have run it."""
    from gapbench_probe.frameworks import ADAPTERS, Unavailable
    from gapbench_probe.run import CaseRunner

    adapter = ADAPTERS[request["framework"]]
    profile, seed, count = Profile(*request["profile"]), int(request["seed"]), \
        int(request["lib_threads"])
    cases = [(int(index), Case(op, tuple(tuple(a) for a in axes), (DEVICE,)))
             for index, op, axes in request["cases"]]
    try:
        opened = adapter.open()
        opened.set_intra_op_threads(count)  # for the whole process, before any op
    except Unavailable as e:
        return {"entries": {name: error_entries(name, index, profile.repetitions,
                                                SKIP_PREFIX + str(e))
                            for name, index, _ in named(adapter.name, cases)}}
    runner = CaseRunner(opened, profile, seed)
    return {"entries": {name: runner.entries(case, DEVICE, name, index)
                        for name, index, case in named(adapter.name, cases)}}


def main() -> int:
    # The reply has standard output to itself: whatever the framework prints goes to stderr.
    reply = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    try:
        json.dump(answer(json.load(sys.stdin)), reply)
    except (ValueError, KeyError, TypeError) as e:
        print(f"threads_child: bad request: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    finally:
        reply.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
