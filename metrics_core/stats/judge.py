"""The four states of a monitored value against its fair range (``metrics.md`` section 5)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["DEFAULT_MIN_SAMPLES", "STATES", "State", "judge"]

State = Literal["ok", "inconclusive", "violation", "insufficient_data"]
#: The states of a judged value, in the order of their numeric code in Prometheus.
STATES: tuple[State, ...] = ("ok", "inconclusive", "violation", "insufficient_data")
#: The smallest denominator a judged value needs (every evaluator's and the service's default).
#: Below 100 the intervals' tails drift from their nominal 2.5% (docs/alerts.md).
DEFAULT_MIN_SAMPLES = 100


def judge(
    value: ArrayLike,
    ci_lower: ArrayLike,
    ci_upper: ArrayLike,
    fair_min: ArrayLike,
    fair_max: ArrayLike,
    *,
    support: ArrayLike,
    min_samples: float,
) -> NDArray[np.str_]:
    """State of each value against its fair range ``[fair_min, fair_max]``.

    - ``insufficient_data``: NaN value, or ``support`` (the smallest denominator the value
      depends on) below ``min_samples``;
    - ``ok``: the value is inside the fair range;
    - ``inconclusive``: outside, but the interval still reaches the fair range (or there is
      no interval);
    - ``violation``: the whole interval lies outside the fair range.

    A metric without a fair range (informational) is ``ok`` whenever it is defined.

    >>> judge([0.5, 0.7, 0.9, np.nan], [0.4, 0.55, 0.85, np.nan], [0.6, 0.85, 0.95, np.nan],
    ...       0.8, 1.25, support=[500, 500, 500, 500], min_samples=100).tolist()
    ['violation', 'inconclusive', 'ok', 'insufficient_data']
    """
    v, lo, hi, fmin, fmax, sup = np.broadcast_arrays(
        *(np.asarray(a, dtype=float) for a in (value, ci_lower, ci_upper, fair_min, fair_max, support))
    )
    fmin = np.where(np.isnan(fmin), -np.inf, fmin)
    fmax = np.where(np.isnan(fmax), np.inf, fmax)
    inside = (v >= fmin) & (v <= fmax)
    interval_known = ~(np.isnan(lo) | np.isnan(hi))
    interval_outside = interval_known & ((hi < fmin) | (lo > fmax))
    state = np.where(inside, "ok", np.where(interval_outside, "violation", "inconclusive"))
    insufficient = np.isnan(v) | ~(sup >= min_samples)
    return np.where(insufficient, "insufficient_data", state)
