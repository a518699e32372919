"""Tests of the nightly trend: reading the history, the series and table, the charts and pages."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from gapbench_report.trend import command as trend
from tests.fakes import COPY, IMAGE, SUMSQ

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
T0 = datetime(2026, 1, 1, 2, 17, tzinfo=timezone.utc)


def night(folder, day: int, medians: dict, machine="m1", regression=False, commit=None):
    when = T0 + timedelta(days=day)
    record = {"schema": trend.HISTORY_SCHEMA, "date": when.isoformat(), "commit":
              commit or f"{day:040x}", "dirty": False, "machine": machine, "cpu": "Fake CPU",
              "regression": regression, "medians": medians}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{when:%Y%m%dT%H%M%SZ}-{day:012x}-{machine}.json"
    path.write_text(json.dumps(record))
    return path


@pytest.fixture
def history(tmp_path):
    folder = tmp_path / "history"
    for day in range(6):
        medians = {SUMSQ: 2e-4 * (1.2 if day >= 4 else 1.0), IMAGE: 5e-5, COPY: 3e-4}
        if day == 0:
            del medians[IMAGE]  # a benchmark that appeared later
        night(folder, day, medians, regression=day == 4)
    return folder


def test_load_history_orders_by_date(history, tmp_path):
    extra = night(tmp_path / "more", -1, {SUMSQ: 1e-4})
    nights = trend.load_history([history, extra])
    assert len(nights) == 7
    assert nights[0].path == extra
    assert [n.date for n in nights] == sorted(n.date for n in nights)
    assert nights[5].regression and not nights[6].regression


def test_series_and_rows(history):
    nights = trend.load_history([history])
    found = {s.name: s for s in trend.series(nights)}
    assert [x for x, _ in found[IMAGE].points] == [1, 2, 3, 4, 5]
    assert found[SUMSQ].typical == pytest.approx(2e-4)
    rows = {r.name: r for r in trend.trend_rows(found.values())}
    assert rows[SUMSQ].change == pytest.approx(0.2)  # latest vs the median of the nights before
    assert rows[SUMSQ].nights == 6 and rows[SUMSQ].high == pytest.approx(2.4e-4)
    assert rows[COPY].change == pytest.approx(0.0)
    assert [s.name for s in trend.series(nights, "memcpy")] == [COPY]


def test_write_trend_draws_charts_and_pages(history, tmp_path):
    out = tmp_path / "trend"
    index = trend.write_trend(trend.load_history([history]), out)
    assert index == out / "index.html"
    pngs = sorted(out.glob("*.png"))
    assert [p.stem for p in pngs] == ["preprocess", "transfer"]  # a chart per family
    for png in pngs:
        assert png.read_bytes().startswith(PNG_MAGIC) and png.stat().st_size > 1000
        assert "<svg" in png.with_suffix(".svg").read_text()
    page = index.read_text()
    assert page.count("<img src=\"data:image/png;base64,") == 2
    assert SUMSQ in page and "+20.0%" in page
    md = (out / "trend.md").read_text()
    assert "6 nights on 1 machine" in md and "1 called a regression" in md
    assert f"| `{SUMSQ}` | m1 | 6 |" in md
    assert not list(out.glob(".*.tmp"))


def test_more_benchmarks_than_a_panel_holds_and_several_machines(tmp_path):
    folder = tmp_path / "h"
    names = [f"preprocess/vectorized/cpu/op:sumsq/rows:{1000 * k}/cols:100/real_time"
             for k in range(1, 12)]
    for day in range(3):
        night(folder, day, {n: 1e-4 * (1 + 0.01 * day) for n in names}, machine="m1")
        night(folder, day, {names[0]: 2e-4}, machine="m2", commit=f"{day + 100:040x}")
    nights = trend.load_history([folder])
    charts = trend.charts(nights, trend.series(nights))
    assert [len(c.panels) for c in charts] == [2, 1]  # 11 lines: 8 + 3; the other machine
    assert "(m1)" in charts[0].title and "(m2)" in charts[1].title
    trend.write_trend(nights, tmp_path / "out")
    assert len(list((tmp_path / "out").glob("*.png"))) == 2
    trend.write_trend(nights, tmp_path / "last", last=1)
    assert "2 nights on 2 machines" in (tmp_path / "last" / "trend.md").read_text()


@pytest.mark.parametrize("record, words", [
    ("not json", "not a readable history file"),
    (json.dumps({"schema": "other"}), "not a nightly history file"),
    (json.dumps({"schema": trend.HISTORY_SCHEMA, "date": "2026-01-01", "medians": {SUMSQ: -1}}),
     "positive seconds"),
    (json.dumps({"schema": trend.HISTORY_SCHEMA, "medians": {SUMSQ: 1}}), "no valid 'date'"),
    (json.dumps({"schema": trend.HISTORY_SCHEMA, "date": "2026-01-01",
                 "medians": {"Not A Name": 1}}), "does not follow"),
])
def test_bad_history_files_exit_2_with_one_line(tmp_path, capsys, record, words):
    bad = tmp_path / "bad.json"
    bad.write_text(record)
    assert trend.main([str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gapbench-report trend: ") and words in err[0]


def test_main(history, tmp_path, capsys):
    assert trend.main(["trend", str(history), "--out", str(tmp_path / "o"), "--filter",
                       "image"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "o" / "index.html")
    assert trend.main([str(history), "--out", str(tmp_path / "o"), "--filter", "nothing"]) == 2
    assert "no benchmark in the history matches" in capsys.readouterr().err
    assert trend.main([str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert trend.main([str(history), "--out", str(tmp_path / "o"), "--filter", "("]) == 2
    assert trend.main([str(history), "--out", str(tmp_path / "o"), "--last", "0"]) == 2
    (tmp_path / "none").mkdir()
    assert trend.main([str(tmp_path / "none"), "--out", str(tmp_path / "o")]) == 2
    assert "no history files" in capsys.readouterr().err


@pytest.mark.parametrize("args,words", [(["--filter", "["], "--filter is not a valid regex"),
                                        (["--last", "0"], "--last must be at least 1")])
def test_bad_options_exit_2_with_one_line(history, tmp_path, capsys, args, words):
    assert trend.main([str(history), "--out", str(tmp_path / "t"), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and "internal error" not in err
    assert len(err.strip().splitlines()) == 1


def one_error_line(capsys, *args) -> str:
    assert trend.main([*map(str, args)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "internal error" not in err[0], err
    return err[0]


@pytest.mark.parametrize("literal", ["Infinity", "NaN", "1e308", "0"])
def test_a_median_that_is_no_time_is_refused_naming_file_and_benchmark(tmp_path, capsys,
                                                                        literal):
    path = night(tmp_path / "h", 0, {SUMSQ: 1.0})
    path.write_text(path.read_text().replace(": 1.0}", f": {literal}}}"))
    line = one_error_line(capsys, path, "--out", tmp_path / "o")
    assert f"{path}: medians: {SUMSQ}: " in line and "positive seconds" in line
    assert not (tmp_path / "o").exists()


def test_a_date_without_a_time_zone_is_refused_not_compared_with_aware_ones(tmp_path, capsys):
    night(tmp_path / "h", 0, {SUMSQ: 1e-3})
    naive = night(tmp_path / "h", 1, {SUMSQ: 1e-3})
    naive.write_text(naive.read_text().replace("+00:00", ""))
    line = one_error_line(capsys, tmp_path / "h", "--out", tmp_path / "o")
    assert line.startswith(f"gapbench-report trend: {naive}: date ") and "no time zone" in line


def test_a_bad_name_is_refused_naming_the_file(tmp_path, capsys):
    path = night(tmp_path / "h", 0, {"Not A Name": 1e-3})
    line = one_error_line(capsys, path, "--out", tmp_path / "o")
    assert line.startswith(f"gapbench-report trend: {path}: medians: benchmark name 'Not A Name'")


def test_hidden_files_of_the_history_folder_are_not_nights(tmp_path):
    night(tmp_path / "h", 0, {SUMSQ: 1e-3})
    (tmp_path / "h" / ".half-written.json").write_text("{")
    assert len(trend.load_history([tmp_path / "h"])) == 1


def test_trend_md_shows_html_from_names_as_text(tmp_path):
    name = "preprocess/vectorized/cpu/op:<img src=x>/rows:1/real_time"
    path = night(tmp_path / "h", 0, {name: 1e-3})
    path.write_text(path.read_text().replace('"m1"', '"<b>m</b>"'))
    nights = trend.load_history([tmp_path / "h"])
    text = trend.trend_markdown(nights, trend.trend_rows(trend.series(nights)))
    assert f"| `{name}` | &lt;b&gt;m&lt;/b&gt; |" in text
