"""Ratios as text, the one home of their formats: a leaf that every stage imports (the
framework's pairs, the comparison's verdict, the diagnosis, the charts)."""

from __future__ import annotations


def fmt_ratio(ratio: float) -> str:
    """"1.3x", "35.2x", "332x": three digits, never an exponent."""
    return f"{ratio:.0f}x" if ratio >= 100 else f"{ratio:.3g}x"


def fmt_ratio_short(ratio: float) -> str:
    """A comparison's ratio: as fmt_ratio from 10 up, two decimals below ("2.50x", "0.71x"), two
    digits below 0.1 ("0.0023x")."""
    if ratio >= 10:
        return fmt_ratio(ratio)
    return f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.2g}x"
