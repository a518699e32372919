"""The night's summary.md (for a CI job summary) and comparison.json, from the gate's verdict
(docs/regressions.md#nightly).
"""

from __future__ import annotations

from gapbench_report.compare import command as cmp
from gapbench_report.core.labels import md_cell, md_code

from gapbench_ci.nightly_gate import RERUN_FACTOR, Verdict, samples_per_side
from gapbench_ci.runner import RunSpec


def headline(v: Verdict) -> str:
    if v.regression:
        parts = []
        if v.confirmed:
            parts.append(f"{len(v.confirmed)} benchmark{'s' if len(v.confirmed) != 1 else ''} "
                         "slower")
        if v.failures:
            parts.append(f"{len(v.failures)} new failure{'s' if len(v.failures) != 1 else ''}")
        return "REGRESSION: " + ", ".join(parts)
    return "no regression"


def night_summary_markdown(v: Verdict, about: dict, spec: RunSpec, rounds: int,
                           notes: list[str]) -> str:
    c = v.final
    per_side = samples_per_side(spec, rounds)
    state = about.get("state") or {}
    context = v.first.contender.context
    lines = [f"# gapbench nightly: {headline(v)}", "",
             f"- this build: {md_cell(about['contender'])}",
             f"- known-good: {md_cell(about['baseline'])}",
             f"- machine: {md_cell(context.get('cpu.model', '?'))} · "
             f"{md_cell(context.get('gpu.name') or 'no usable GPU')} · "
             f"machine.id {md_cell(c.contender_machine)}",
             f"- runs: profile {spec.profile}, filter {md_code(spec.filter)}, {rounds} round"
             f"{'s' if rounds != 1 else ''} of A B B A (A = known-good), random interleaving, "
             f"{per_side} repetitions per side from {2 * rounds} runs",
             f"- rule: SLOWER when the one-sided Mann-Whitney U test on the runs' medians gives "
             f"p < {c.alpha:g} and "
             f"the median is at least {c.threshold:.0%} slower — in the first pass and again in "
             f"a rerun of only the flagged benchmarks (fresh rounds, {RERUN_FACTOR} times as many)",
             f"- first pass: {len(c.rows)} benchmark{'s' if len(c.rows) != 1 else ''}, "
             f"{len(v.flagged)} flagged SLOWER; "
             f"confirmed by the rerun: {len(v.confirmed)}"]
    if state.get("warning"):  # right under the headline: a lost state must not go unseen
        lines[2:2] = [md_cell(state["warning"]), ""]
    if state.get("origin"):
        lines.append(f"- state ({md_cell(state['dir'])}): {md_cell(state['origin'])}")
    if v.failures:
        lines.append(f"- failed in this build but not in the known-good: "
                     f"{', '.join(md_code(n) for n in v.failures)}")
    lines += [f"- note: {md_cell(n)}" for n in notes]
    lines += ["", cmp.format_markdown(c)]
    return "\n".join(lines) + "\n"


def comparison_json(v: Verdict, about: dict, spec: RunSpec, rounds: int) -> dict:
    return {"headline": headline(v), "regression": v.regression, "exit_status": v.exit_code,
            "baseline": about["baseline"], "contender": about["contender"],
            "profile": spec.profile, "filter": spec.filter, "rounds": rounds,
            "samples_per_side": samples_per_side(spec, rounds), "flagged": v.flagged,
            "confirmed": v.confirmed, "failures": v.failures,
            "final": cmp.to_json(v.final), "first": cmp.to_json(v.first.comparison),
            "rerun": cmp.to_json(v.rerun.comparison) if v.rerun else None,
            "state": about.get("state")}
