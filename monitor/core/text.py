"""Numbers and fair ranges as people read them, spelt one way on every surface: alert annotations,
the generated rules, the live view, the report and the terminal.

>>> fair_range_text(0.8, 1.25), fair_range_text(0.83, math.inf), fair_range_text(-math.inf, 0.1)
('[0.8, 1.25]', 'at least 0.83', 'at most 0.1')
>>> fair_range_text(-math.inf, math.inf), fair_range_text(math.nan, 1.0)
('none (informational)', 'undefined')
"""

from __future__ import annotations

import math

from metrics_core import MetricValue

__all__ = ["fair_range_text", "number", "state_reason", "state_text"]


def number(x: float, digits: int = 3, *, nan: str = "-") -> str:
    """``x`` to ``digits`` significant digits (whole numbers from ``10^digits`` on, with thousands
    separators); ``nan`` for NaN, ``∞`` for infinities.

    >>> number(0.68312), number(1234.5), number(0.000012345), number(0.0), number(-math.inf)
    ('0.683', '1,234', '1.23e-05', '0', '-∞')
    """
    if math.isnan(x):
        return nan
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x == 0:
        return "0"
    if abs(x) >= 10**digits:
        return f"{x:,.0f}"
    text = f"{x:.{digits}g}"
    return text if "e" not in text else f"{x:.{max(0, digits - 1)}e}"


def fair_range_text(low: float, high: float) -> str:
    """A resolved fair range: ``[0.8, 1.25]``, ``at least 0.83``, ``at most 0.1``, ``none
    (informational)`` when both sides are unbounded, ``undefined`` when a bound is NaN (a range
    relative to an overall AUC that could not be computed)."""
    if math.isnan(low) or math.isnan(high):
        return "undefined"
    if math.isinf(low) and math.isinf(high):
        return "none (informational)"
    if math.isinf(low):
        return f"at most {number(high)}"
    if math.isinf(high):
        return f"at least {number(low)}"
    return f"[{number(low)}, {number(high)}]"


def state_reason(value: MetricValue, min_samples: float) -> str:
    """Why a value is not judged ``ok`` or ``violation``, in words: its own reason (a NaN value
    carries why it is undefined), or its support against ``min_samples`` (a defined value is
    ``insufficient_data`` when the smallest denominator it depends on is below it); ``""`` for a
    judged value."""
    if value.reason:
        return value.reason
    if value.state == "insufficient_data" and math.isfinite(value.support):
        return f"support {number(value.support, 6)} < min_samples {number(min_samples, 6)}"
    if value.state == "inconclusive":
        return "the interval crosses a fair bound"
    return ""


def state_text(value: MetricValue, min_samples: float) -> str:
    """A value's state, with the reason where it is ``insufficient_data`` (never left out)."""
    reason = state_reason(value, min_samples) if value.state == "insufficient_data" else ""
    return f"{value.state} ({reason})" if reason else value.state
