"""Benchmarks and figures in words, for the charts, the tables and the diagnosis: "GPU vectorized
end-to-end preprocess (op sumsq · rows 1M · cols 100)" rather than the benchmark's name."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping

from gapbench_report.core import metrics
from gapbench_report.core.catalogue import PAGEABLE_E2E
from gapbench_report.inputs.results import FP32, MATH_AXIS, Benchmark, Name

UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# The same but a line's end and a tab: what a whole page or summary may hold as it is.
UNPRINTABLE_IN_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _escaped(c: str) -> str:
    if "\udc80" <= c <= "\udcff":  # a byte os.fsdecode could not decode
        return f"\\x{ord(c) - 0xDC00:02x}"
    return c.encode("unicode_escape").decode("ascii")


def printable(text: str) -> str:
    """`text` as one line that any page, terminal or file can hold: the bytes of a file name
    that are not UTF-8 as \\xNN, control characters (ESC, BEL, a line's end) and lone
    surrogates (JSON's "\\ud800") escaped. A fleet node's name, file names and values pass
    through here on their way out."""
    return UNPRINTABLE.sub(lambda m: _escaped(m.group()), text)


def printable_text(text: str) -> str:
    """A whole document (summary.md, index.html) with every control character but its lines'
    ends and tabs escaped as printable() escapes them: an ESC or a BEL in a benchmark's name or
    message reaches no terminal or browser raw. Every writer's output passes through here (or
    printable, for one line)."""
    return UNPRINTABLE_IN_TEXT.sub(lambda m: _escaped(m.group()), text)


def md_cell(text: object) -> str:
    """Text for Markdown (summary.md, trend.md, a CI job summary) on one line: HTML escaped as the
    page escapes it (a benchmark name or an error message is never markup), a pipe escaped (it
    would end a table cell)."""
    return html.escape(str(text), quote=False).replace("|", "\\|").replace("\n", " ")


def md_code(text: object, table: bool = False) -> str:
    """Text as a Markdown code span, shown as written (HTML inside one is inert): fenced by more
    backticks than any run of them inside, so that none ends it early. In a table cell its pipes
    are escaped, as GitHub splits the row before it reads the span."""
    text = str(text).replace("\n", " ")
    if table:
        text = text.replace("|", "\\|")
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def safe_stem(text: str) -> str:
    """A chart's title as a file name: lower case, each run of other characters one dash."""
    return re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-") or "chart"


def fmt_seconds(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def fmt_si(x: float, unit: str = "") -> str:
    """1234567 -> "1.23 M" (decimal prefixes)."""
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}".rstrip()


def pct(x: float) -> str:
    """0.257 -> "26%"."""
    return f"{100 * x:.0f}%"


def mib(n: float) -> str:
    """A byte count in MiB as exactly as it goes: 268435456 -> "256 MiB"."""
    return f"{n / 2**20:g} MiB"


def fmt_bytes(n: float) -> str:
    """4096 -> "4 KiB" (binary prefixes, as the transfer sizes are chosen)."""
    for prefix, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {prefix}"
    return f"{n:.0f} B"


BYTE_AXES = {"bytes": 1, "mib": 2**20}  # axes that are sizes in memory, and their unit


def fmt_axis_value(key: str, value: str) -> str:
    """An axis value for a label: "4 KiB" for sizes in memory, "1M" for large counts."""
    number = metrics.number(value)
    if number is None:
        return printable(value)  # the one part of a name that is free text
    if key in BYTE_AXES:
        return fmt_bytes(number * BYTE_AXES[key])
    return fmt_si(number).replace(" ", "") if number >= 10_000 else f"{number:g}"


def fmt_throughput(b: Benchmark) -> str:
    """The counters that mean throughput, readable: "12.3 GB/s · 4.5 k items/s"."""
    parts = []
    if (v := b.counter("bytes_per_second")) is not None:
        parts.append(fmt_si(v, "B/s"))
    if (v := b.counter("flops")) is not None:
        parts.append(fmt_si(v, "FLOP/s"))
    if (v := b.counter("items_per_second")) is not None:
        parts.append(f"{fmt_si(v)} items/s")
    if (v := b.counter("overhead_share")) is not None:
        parts.append(f"overhead {pct(v)}")
    return " · ".join(parts)


# The label gapbench gives a GPU kernel time it could not hold its stream for
# (fixtures/hold_policy.h): that time includes the host's launches.
UNHELD_LABEL = "unheld: "


def is_unheld(b: Benchmark) -> bool:
    """A GPU kernel time that includes the host's launches (gapbench's label says so)."""
    return b.status == "ok" and UNHELD_LABEL in b.label


def variant_label(variant: str, family: str = "") -> str:
    """"vectorized_e2e" -> "vectorized end-to-end"; with its family, "cudnn end-to-end (pageable
    copies)" where that family's end-to-end copies pageable memory."""
    base = variant[:-4] if variant.endswith("_e2e") else variant
    text = base.replace("_", " ")
    if not variant.endswith("_e2e"):
        return text
    return f"{text} end-to-end" + (" (pageable copies)" if family in PAGEABLE_E2E else "")


def axes_label(axes: Mapping[str, str], keys: Iterable[str] | None = None) -> str:
    """"rows 1M · cols 100"; sizes in bytes speak for themselves ("4 KiB")."""
    keys = list(axes) if keys is None else keys
    return " · ".join(fmt_axis_value(k, axes[k]) if k in BYTE_AXES
                      else f"{k} {fmt_axis_value(k, axes[k])}" for k in keys if k in axes)


def with_threads(name: Name) -> dict[str, str]:
    """The axes, plus Google Benchmark's thread count as one more size-like axis."""
    axes = dict(name.axes)
    if name.threads is not None:
        axes["threads"] = str(name.threads)
    return axes


MATH_WORDS = metrics.MATH_WORDS


def math_words(math: str) -> str:
    """"fp32" -> "float32": a row's arithmetic (Benchmark.math) in a sentence."""
    return MATH_WORDS.get(math, math)


def unnamed_math(b: Benchmark) -> str:
    """The arithmetic of a row whose name does not say it and that is not float32 (a cuDNN
    convolution in its library's default math; a framework's op from a probe before the math
    axis, results.row_math), as a table or a chart's legend says it beside the name: "tf32
    (library default)"; empty for every other row."""
    if MATH_AXIS in b.parsed.axes or b.math == FP32:
        return ""
    return f"{b.math} ({'framework' if b.parsed.family == 'framework' else 'library'} default)"


def with_unnamed_math(sizes: str, b: Benchmark) -> str:
    """A row's sizes in words, for a table, with the math its name leaves unsaid
    (unnamed_math)."""
    math = unnamed_math(b)
    return " · ".join(t for t in (sizes, math and f"math {math}") if t)


def describe(name: Name) -> str:
    """A benchmark in words: "GPU vectorized end-to-end preprocess (op sumsq · rows 1M)"."""
    axes = axes_label(with_threads(name))
    text = f"{name.device.upper()} {variant_label(name.variant, name.family)} {name.family}"
    return f"{text} ({axes})" if axes else text
