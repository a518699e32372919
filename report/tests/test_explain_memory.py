"""explain's memory guard keeps its promise: a trace costs at most MEMORY_PER_TRACE_BYTE bytes of
peak memory per byte of its JSON, over the fixed cost of the interpreter and the libraries.

Measured on the worst trace for it: host ops in fewer bytes than torch.profiler writes for any
op (bench_explain.tiny_trace), the most events, so the most rows HolisticTraceAnalysis holds, per
MiB. 30 MiB of them here, in a
fresh process whose own peak resident memory is read; the same bytes-to-memory ratio holds at
explain's 300 MiB limit (docs/explain.md gives both). HTA 0.5 spent a fifth of its peak on boxing
every cell of the event table row by row: without traces._stream_numbers_by_column this fails.
"""

from __future__ import annotations

import gzip

import pytest

from gapbench_report.explain import command as explain
from gapbench_report.inputs import traces
from measure.bench_explain import peak_of_explain, tiny_trace

MIB = 2**20


@pytest.fixture
def hta():
    """HolisticTraceAnalysis, of the explain extra (the tests that parse skip without it)."""
    pytest.importorskip("ijson")
    return pytest.importorskip("hta")


def test_a_trace_of_tiny_events_stays_within_the_promised_memory(hta, tmp_path):
    small = tmp_path / "small.pt.trace.json"
    tiny_trace(0.05, small)
    fixed, _, _ = peak_of_explain(small, timeout=300)  # the interpreter, pandas, HTA
    path = tmp_path / "tiny.pt.trace.json"
    size, events = tiny_trace(30, path)
    assert 29 * MIB < size <= 30 * MIB and events > 250_000
    peak, _, answer = peak_of_explain(path, timeout=600)
    assert answer["traces"][0]["steps"] == 10  # read whole
    allowed = fixed + traces.MEMORY_PER_TRACE_BYTE * size
    assert peak <= allowed, (f"peak {peak / MIB:.0f} MiB over {allowed / MIB:.0f} MiB: fixed "
                             f"{fixed / MIB:.0f} MiB + {traces.MEMORY_PER_TRACE_BYTE} x "
                             f"{size / MIB:.0f} MiB ({(peak - fixed) / size:.1f} per byte)")


@pytest.mark.parametrize("values", [
    [0, 7, -1, 7],
    [7.0, 3.0, float("nan")],
    ["7", "0", "not a stream", "7.5"],
    [7, "7", "x", -1],
])
def test_stream_numbers_are_the_ones_hta_makes(hta, values):
    """The column-wise conversion gives what HTA 0.5's row-wise one gives."""
    import pandas as pd
    from hta.common import trace_parser

    frame = pd.DataFrame({"stream": pd.Series(values, dtype=object), "other": range(len(values))})
    expected = [traces.stream_number(v) for v in values]
    row_wise = trace_parser.normalize_gpu_stream_numbers
    with traces._stream_numbers_by_column():
        assert trace_parser.normalize_gpu_stream_numbers is not row_wise  # HTA 0.5's replaced
        column_wise = frame.copy()
        trace_parser.normalize_gpu_stream_numbers(column_wise)
    assert list(column_wise["stream"]) == expected
    hta_own = frame.copy()
    trace_parser.normalize_gpu_stream_numbers(hta_own)
    assert list(hta_own["stream"]) == expected


# ---- the guard -------------------------------------------------------------------------------

def one_line(capsys, *argv) -> str:
    assert explain.main([*map(str, argv)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    return err


def test_a_gzip_that_unpacks_past_the_limit_is_refused_as_soon_as_it_has(tmp_path, capsys):
    """64 MiB of JSON in a few KiB of gzip, against a limit of 1 MiB: refused after 2 MiB are
    unpacked (a small file can unpack to any size), not after all of it."""
    bomb = tmp_path / "bomb.pt.trace.json.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as f:
        f.write(b'{"traceEvents": [')
        for _ in range(64):
            f.write(b" " * MIB)
        f.write(b"]}")
    assert bomb.stat().st_size < MIB
    err = one_line(capsys, bomb, "--max-trace-mib", "1")
    assert "bomb.pt.trace.json.gz: at least 2 MiB of trace is over explain's limit of 1 MiB " \
           f"(held in memory, up to {traces.MEMORY_PER_TRACE_BYTE}x its size)" in err


@pytest.mark.parametrize("limit", ["nan", "inf", "0", "-5"])
def test_a_limit_that_is_no_limit_is_refused(tmp_path, capsys, limit):
    """NaN compares false with every size: it would have let any trace through."""
    trace = tmp_path / "t.pt.trace.json"
    tiny_trace(0.01, trace)
    err = one_line(capsys, trace, "--max-trace-mib", limit)
    assert err.endswith(f"--max-trace-mib must be a positive number of MiB, not {limit}\n")
