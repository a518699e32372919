"""explain --against's writers: a Comparison as Markdown (what the command prints, and
explain.md), as a page (explain.html) and as JSON (--json). They print it and compute nothing."""

from __future__ import annotations

from pathlib import Path

from gapbench_report.core.formats import fmt_ratio_short
from gapbench_report.explain.against import Comparison, MatchedOp, Part
from gapbench_report.explain.prices import ms
from gapbench_report.explain.writer import esc, md_cell, steps_line
from gapbench_report.writers.html import page

PART_HEADERS = ("part", "here, a step", "there, a step", "ratio", "spread", "differs",
                "put down to")
OP_HEADERS = ("op", "kind", "here, a step", "there, a step", "calls here", "calls there")


def _ratio(part: Part) -> str:
    return fmt_ratio_short(part.ratio) if part.ratio is not None else "none there"


def _spread(spread) -> str:
    (a, b), (c, d) = spread
    return f"{ms(max(a, 0.0))}-{ms(b)} here, {ms(max(c, 0.0))}-{ms(d)} there"


def _part_cells(p: Part) -> list[str]:
    return [p.words, ms(p.here), ms(p.there), _ratio(p), _spread(p.spread),
            "yes" if p.differs else "no",
            p.why.text if p.why else ""]


def _op_cells(o: MatchedOp) -> list[str]:
    name = f"{o.name} (there {o.there_name}, by {o.matched_by})" if o.matched_by else o.name
    return [name, o.kind, ms(o.here), ms(o.there), f"{o.count_here:g}", f"{o.count_there:g}"]


def _sides(c: Comparison) -> list[tuple[str, str]]:
    """Each side's line: its file, steps, and the results its ceilings came from."""
    out = []
    for side, p in (("here", c.here), ("there", c.there)):
        results = c.ceilings_of.get(side)
        out.append((side, f"{Path(p.path).name}: {steps_line(p)} Ceilings: "
                          + (f"gapbench's results {results}." if results else
                             "none given (--results / --against-results).")))
    return out


def _only(ops: list[MatchedOp], side: str) -> str:
    shown = ", ".join(f"{o.name} ({ms(o.here if side == 'here' else o.there)})" for o in ops[:6])
    more = f" and {len(ops) - 6} more" if len(ops) > 6 else ""
    return f"Ops {side} only: {shown}{more}." if ops else f"No op {side} only."


def markdown(c: Comparison) -> str:
    lines = ["# gapbench-report explain --against", "", f"**{md_cell(c.verdict)}**", ""]
    lines += [f"- {side}: {md_cell(text)}" for side, text in _sides(c)]
    lines += ["- A part differs when its time step by step here and there do not overlap (its "
              "spread), by more than 2% of the longer step; the step itself: "
              f"{_spread(c.spread)}.", "",
              "## The step, part by part", "",
              "| " + " | ".join(PART_HEADERS) + " |", "|---" * len(PART_HEADERS) + "|"]
    lines += ["| " + " | ".join(md_cell(x) for x in _part_cells(p)) + " |" for p in c.parts]
    lines += ["", "## The ops, matched by name (the largest differences)", "",
              "| " + " | ".join(OP_HEADERS) + " |", "|---" * len(OP_HEADERS) + "|"]
    lines += ["| " + " | ".join(md_cell(x) for x in _op_cells(o)) + " |" for o in c.ops]
    lines += ["", md_cell(_only(c.added, "here")), "", md_cell(_only(c.removed, "there"))]
    return "\n".join(lines).rstrip() + "\n"


def _table(headers, rows) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(x)}</td>" for x in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_page(c: Comparison) -> str:
    body = ["<h1>gapbench-report explain --against</h1>",
            f'<p class="verdict">{esc(c.verdict)}</p>',
            *[f'<p class="meta">{esc(side)}: {esc(text)}</p>' for side, text in _sides(c)],
            "<h2>The step, part by part</h2>",
            _table(PART_HEADERS, [_part_cells(p) for p in c.parts]),
            "<h2>The ops, matched by name</h2>",
            _table(OP_HEADERS, [_op_cells(o) for o in c.ops]),
            f"<p>{esc(_only(c.added, 'here'))}</p>", f"<p>{esc(_only(c.removed, 'there'))}</p>"]
    return page("gapbench explain --against", body)


def _s(x: float | None) -> float | None:
    return None if x is None else round(x, 9)


def _side_json(p, results: str | None) -> dict:
    return {"path": p.path, "host_name": p.host_name, "gpus": p.gpus, "has_device": p.has_device,
            "steps": p.steps, "step_marked": p.step_marked, "step_seconds": _s(p.step_seconds),
            "step_lengths_seconds": [_s(x) for x in p.step_lengths], "stack": p.stack,
            "results": results}


def _op_json(o: MatchedOp) -> dict:
    return {"name": o.name, "there_name": o.there_name or o.name, "matched_by": o.matched_by
            or "name", "kind": o.kind, "here_seconds": _s(o.here),
            "there_seconds": _s(o.there), "calls_here": _s(o.count_here),
            "calls_there": _s(o.count_there)}


def as_json(c: Comparison) -> dict:
    return {
        "framework": c.here.framework, "verdict": c.verdict,
        "here": _side_json(c.here, c.ceilings_of.get("here")),
        "there": _side_json(c.there, c.ceilings_of.get("there")),
        "step_ratio": _s(c.step_ratio),
        "parts": [{"part": p.key, "words": p.words, "here_seconds": _s(p.here),
                   "there_seconds": _s(p.there), "ratio": _s(p.ratio),
                   "spread_seconds": {"here": [_s(x) for x in p.spread[0]],
                                      "there": [_s(x) for x in p.spread[1]]},
                   "differs": p.differs,
                   "put_down_to": None if p.why is None else {
                       "kind": p.why.kind, "text": p.why.text, "explains": _s(p.why.explains)}}
                  for p in c.parts],
        "ops": [_op_json(o) for o in c.ops],
        "here_only": [_op_json(o) for o in c.added],
        "there_only": [_op_json(o) for o in c.removed]}
