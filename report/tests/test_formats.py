"""Ratios as text: one home (core/formats.py) for the two ways the report prints a ratio."""

from __future__ import annotations

from gapbench_report.core.formats import fmt_ratio, fmt_ratio_short


def test_a_ratio_has_three_digits_and_no_exponent():
    assert [fmt_ratio(r) for r in (332.4, 35.24, 1.234, 0.713, 0.00232)] == [
        "332x", "35.2x", "1.23x", "0.713x", "0.00232x"]


def test_a_comparisons_ratio_has_two_decimals_below_ten():
    assert [fmt_ratio_short(r) for r in (1143, 431.2, 20.0, 2.5, 0.713, 0.00232)] == [
        "1143x", "431x", "20x", "2.50x", "0.71x", "0.0023x"]
