"""One run as the report reads it, built once: its files (gapbench's own first: the machine's
context is theirs, a framework file's is the framework's view), every benchmark once, and the
framework's rows beside the libraries' (framework.pairs). render's model and rules (render/model.py,
diagnose/rules.py) and explain's prices all read this one Run; none works these out again."""

from __future__ import annotations

from dataclasses import dataclass

from gapbench_report.core import framework
from gapbench_report.inputs.results import Benchmark, Results, merged_benchmarks


@dataclass(frozen=True)
class Run:
    """One run: the machine's context and every benchmark of its files, once each."""

    context: dict
    benchmarks: list[Benchmark]
    files: tuple[Results, ...] = ()  # each family's file, for what is per file (its ceilings)
    pairs: tuple[framework.Pair, ...] = ()  # each framework row with its library twin

    @classmethod
    def of(cls, runs: list[Results]) -> Run:
        files = framework.library_first(runs)
        benchmarks = merged_benchmarks(files)
        pairs = framework.pairs(benchmarks, framework.framework_contexts(files))
        return cls(files[0].context if files else {}, benchmarks, tuple(files), tuple(pairs))

    @property
    def framework_files(self) -> list[Results]:
        return [r for r in self.files if framework.is_framework_file(r)]

    @property
    def library_files(self) -> list[Results]:
        return [r for r in self.files if not framework.is_framework_file(r)]

    def file_of(self, b: Benchmark) -> Results | None:
        """The file whose entry of `b` the run reads (the first that has its name, as
        merged_benchmarks keeps it): where its stability figures say how its run went."""
        return next((r for r in self.files if b.name in r.benchmarks()), None)
