"""When a bias began: a change point on the affected group's counts, with its uncertainty.

A window judged in violation says *that* a group is treated unfairly, not *since when*: a 1-day window
crosses its fair range hours after the change, and the first evaluation in violation is when the
service noticed, not when the model changed. The onset is estimated instead from the rows:

- the search span, ``[start, end)``, is cut at every ``step`` (the panes' size: an hour by default);
- at each cut ``t`` the metric is computed, by the engine, on the rows before it, ``[start, t)``, and
  on the rows after it, ``[t, end)`` - the group's and its reference's counts on either side;
- the change is where the two sides differ most surely: the cut maximising
  ``W(t) = (after - before)^2 / (se_before^2 + se_after^2)``, each side's standard error read from its
  unadjusted interval (``(upper - lower) / 2z``). For a shift in the mean of normal observations
  ``W(t) / 2`` is the log likelihood ratio of a change at ``t`` against none (Hinkley 1970; the
  binary-segmentation statistic of Scott & Knott 1974), so
- its uncertainty is the likelihood's: with a flat prior over the cuts, ``P(t) ~ exp(W(t) / 2)``, and the
  interval is the smallest run of cuts around the estimate holding ``level`` of it.

A change found at the first or last cut may lie beyond the span: ``bounded`` says so. No cut with both
sides judged (each side at least ``min_samples``, both values defined) gives no onset: ``None``.

Pure: the values at the cuts in, the onset out; :meth:`monitor.evaluation.evaluator.Evaluator.cuts`
reads and computes them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from metrics_core import MetricValue
from monitor.core.text import number
from monitor.core.times import format_duration

__all__ = ["Cut", "Onset", "change_point", "onset_text"]


@dataclass(frozen=True)
class Cut:
    """One candidate change: the metric on the rows before ``at`` and on the rows from ``at`` on."""

    at: datetime
    before: MetricValue
    after: MetricValue


@dataclass(frozen=True)
class Onset:
    """The estimated start of a change, and the interval of cuts holding ``level`` of its likelihood."""

    at: datetime
    earliest: datetime
    latest: datetime
    level: float
    before: float  # the metric before the change and after it
    after: float
    bounded: bool  # the estimate is the first or last cut: the change may lie beyond the span searched
    step: timedelta = timedelta(0)  # the cuts' spacing: no estimate is finer
    metric: str = ""  # what the cuts compared

    @property
    def bounds(self) -> tuple[datetime, datetime]:
        """Where the change lies at ``level``: the interval's cuts widened by a step on either side
        (a change between two cuts is placed at one of them)."""
        return self.earliest - self.step, self.latest + self.step

    @property
    def uncertainty(self) -> timedelta:
        """What "± 1 h" says: how far the bounds reach from the estimate, on the farther side."""
        low, high = self.bounds
        return max(self.at - low, high - self.at)


def change_point(cuts: Sequence[Cut], *, z: float, level: float = 0.95) -> Onset | None:
    """The most likely change among ``cuts`` (in time order), its interval at ``level``; ``z``: the
    normal quantile of the cuts' intervals (their level's)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1 (exclusive), got {level}")
    stats = np.array([_statistic(c, z) for c in cuts], dtype=np.float64)
    judged = np.isfinite(stats)
    if not judged.any():
        return None
    log_likelihood = np.where(judged, stats / 2, -np.inf)
    weights = np.exp(log_likelihood - log_likelihood.max())
    weights /= weights.sum()
    best = int(np.argmax(weights))
    lo = hi = best
    held = weights[best]
    while held < level and (lo > 0 or hi < len(cuts) - 1):  # grow towards the heavier neighbour
        left = weights[lo - 1] if lo > 0 else -1.0
        right = weights[hi + 1] if hi < len(cuts) - 1 else -1.0
        if left >= right:
            lo -= 1
            held += left
        else:
            hi += 1
            held += right
    first, last = int(np.flatnonzero(judged)[0]), int(np.flatnonzero(judged)[-1])
    return Onset(
        at=cuts[best].at,
        earliest=cuts[lo].at,
        latest=cuts[hi].at,
        level=level,
        before=cuts[best].before.value,
        after=cuts[best].after.value,
        bounded=best in (first, last),
    )


def _statistic(cut: Cut, z: float) -> float:
    """``(after - before)^2 / (se_before^2 + se_after^2)``; NaN where a side is not judged."""
    sides = (cut.before, cut.after)
    if any(v.state == "insufficient_data" or not math.isfinite(v.value) for v in sides):
        return math.nan
    variance = sum(((v.ci_upper - v.ci_lower) / (2 * z)) ** 2 for v in sides)
    if not math.isfinite(variance) or variance <= 0:
        return math.nan
    return (cut.after.value - cut.before.value) ** 2 / variance


def onset_text(onset: Onset) -> str:
    """The onset in words: ``about 2026-03-02 00:00 UTC ± 1h``, and what the estimate rests on.

    >>> from datetime import UTC
    >>> t = datetime(2026, 3, 2, tzinfo=UTC)
    >>> onset_text(Onset(t, t, t, 0.95, 0.99, 0.67, False, timedelta(hours=1), "disparate_impact"))
    'about 2026-03-02 00:00 UTC ± 1h (its disparate_impact changed from 0.99 to 0.67; a change point in the log, 95% between 2026-03-01 23:00 and 2026-03-02 01:00)'
    """
    earlier = " or earlier" if onset.bounded and onset.at == onset.earliest else ""
    low, high = onset.bounds
    return (
        f"about {onset.at.strftime(_MINUTE)} UTC ± {format_duration(onset.uncertainty)}{earlier} "
        f"(its {onset.metric or 'value'} changed from {number(onset.before)} to {number(onset.after)}; "
        f"a change point in the log, {number(100 * onset.level)}% between {low.strftime(_MINUTE)} and "
        f"{high.strftime('%H:%M' if high.date() == low.date() else _MINUTE)})"
    )


_MINUTE = "%Y-%m-%d %H:%M"
