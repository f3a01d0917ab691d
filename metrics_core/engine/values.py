"""Judged values: arrays of estimates, intervals and supports turned into :class:`MetricValue` rows.

Both evaluators (the binary score-table one and the group/reference one) end here, so a
value is judged and reported the same way whatever computed it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from metrics_core.core.results import MetricValue
from metrics_core.core.types import FloatArray
from metrics_core.stats.judge import judge

__all__ = ["Side", "judged_values"]


@dataclass(frozen=True)
class Side:
    """Who a value compares: the group and its reference, with their sizes."""

    attribute: str
    group: str
    reference: str
    n_group: float
    n_reference: float


def judged_values(
    metric: str,
    sides: Sequence[Side],
    estimate: FloatArray,
    lower: FloatArray,
    upper: FloatArray,
    support: FloatArray,
    reasons: Sequence[str | None],
    *,
    fair_min: float,
    fair_max: float,
    min_samples: float,
) -> list[MetricValue]:
    """One :class:`MetricValue` per comparison; a reason is kept only where the value is NaN.

    >>> v, = judged_values("disparate_impact", [Side("race", "b", "a", 50, 60)], np.array([0.5]),
    ...                    np.array([0.3]), np.array([0.7]), np.array([50.0]), [None],
    ...                    fair_min=0.8, fair_max=1.25, min_samples=30)
    >>> v.state, v.reason
    ('violation', None)
    """
    states = judge(estimate, lower, upper, fair_min, fair_max, support=support, min_samples=min_samples)
    return [
        MetricValue(
            attribute=side.attribute,
            group=side.group,
            reference=side.reference,
            metric=metric,
            value=float(estimate[i]),
            ci_lower=float(lower[i]),
            ci_upper=float(upper[i]),
            fair_min=fair_min,
            fair_max=fair_max,
            state=str(states[i]),
            n_group=float(side.n_group),
            n_reference=float(side.n_reference),
            support=float(support[i]),
            reason=(reasons[i] or None) if np.isnan(estimate[i]) else None,
        )
        for i, side in enumerate(sides)
    ]
