"""When a bias began: a change point on the affected group's counts, with its uncertainty.

A window judged in violation says *that* a group is treated unfairly, not *since when*: a 1-day window
crosses its fair range hours after the change, and the first evaluation in violation is when the
service noticed, not when the model changed. The onset is estimated instead from the rows:

- the search span is cut into bins of ``step`` (the panes' size: an hour by default); the metric can be
  computed, by the engine, on the rows of any run of bins (:class:`Segments`);
- a *change* in ``[lo, hi)`` is the cut ``t`` where the metric on ``[lo, t)`` and on ``[t, hi)`` differ
  most surely: the cut maximising ``W(t) = (after - before)^2 / (se_before^2 + se_after^2)``, each
  side's standard error read from its unadjusted interval (``(upper - lower) / 2z``). For a shift in
  the mean of normal observations ``W(t) / 2`` is the log likelihood ratio of a change at ``t`` against
  none (Hinkley 1970);
- ``W`` is divided by the metric's *dispersion* between bins - how much more it varies from hour to
  hour than its sampling error says (a daily cycle, bursty traffic), Pearson's statistic around the
  change, never below 1 - so that a cycle is not read as a change;
- only a change in the incident's direction counts (towards the side of the fair range the value left
  by), and only if it is surely one: ``max W`` at least :data:`CRITICAL`, the 95% point of ``max W`` over
  up to 96 cuts of rows without any change (simulated: ``max`` over the cuts of a squared standardized
  Brownian bridge; Andrews 1993 tabulates 8.85 for the central 70% of a span). A bias that began before
  the span, with no change inside it, has no onset: none is claimed;
- the search is repeated on the rows before the change found (binary segmentation, Vostrikova 1981)
  while a change in the same direction is found there: a step gives one change, a gradual drift a
  few, and the onset is the earliest - "a gradual change in 3 steps from 09:00 to 17:00";
- its uncertainty is the likelihood's: with a flat prior over the cuts, ``P(t) ~ exp(W(t) / 2)``, and the
  interval is the smallest run of cuts around the estimate holding ``level`` of it, widened by a step
  on either side (a change between two cuts is placed at one of them).

A change at the first judged cut of the span may have begun earlier; ``beyond`` says so. Pure: values
in, onset out; :meth:`monitor.evaluation.evaluator.Evaluator.segments` reads the span and computes them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

import numpy as np

from metrics_core import MetricValue
from monitor.core.text import number
from monitor.core.times import format_duration

__all__ = ["CRITICAL", "Cut", "Onset", "Segments", "change_point", "dispersion", "onset", "onset_text"]

#: The 95% point of max W over up to 96 cuts when nothing changed (``tests/monitor/test_onset.py``
#: simulates it: 9.31 at 96 cuts, 8.68 at 48, 8.08 at 24): a smaller maximum is no change.
CRITICAL = 9.5


@dataclass(frozen=True)
class Cut:
    """One candidate change: the metric on the rows before ``at`` and on the rows from ``at`` on."""

    at: datetime
    before: MetricValue
    after: MetricValue


@dataclass(frozen=True)
class Segments:
    """A span cut into bins: ``times`` their edges (one more than bins), ``value(i, j)`` the metric on
    the rows of bins ``i`` to ``j - 1`` (``None``: not computed)."""

    times: Sequence[datetime]
    value: Callable[[int, int], MetricValue | None]
    metric: str = ""


@dataclass(frozen=True)
class Onset:
    """The estimated start of a change, and the interval of cuts holding ``level`` of its likelihood."""

    at: datetime
    earliest: datetime
    latest: datetime
    level: float
    before: float  # the metric before the change and after it (after its last step)
    after: float
    beyond: Literal["", "before"] = ""  # "before": found at the span's first cut, it may have begun earlier
    step: timedelta = timedelta(0)  # the cuts' spacing: no estimate is finer
    metric: str = ""  # what the cuts compared
    steps: int = 1  # a gradual change: how many steps the search found
    until: datetime | None = None  # ... and when the last one was

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


def onset(
    segments: Segments,
    *,
    z: float,
    level: float = 0.95,
    direction: int = 0,
    critical: float = CRITICAL,
    most_steps: int = 8,
    cancelled: Callable[[], bool] = lambda: False,
) -> Onset | None:
    """The earliest change in ``segments`` in ``direction`` (+1: the metric rose, -1: it fell, 0:
    either), by binary segmentation towards the span's start; ``None``: no sure change, or
    ``cancelled()`` became true (checked before each computation)."""
    times, n = segments.times, len(segments.times) - 1

    def search(hi: int) -> tuple[Onset, int] | None:
        cuts = [
            (k, before, after)
            for k in range(1, hi)
            if not cancelled()
            and (before := segments.value(0, k)) is not None
            and (after := segments.value(k, hi)) is not None
        ]
        if cancelled():
            return None
        candidates = [Cut(times[k], b, a) for k, b, a in cuts]
        best = change_point(candidates, z=z, level=level, direction=direction)
        if best is None:
            return None
        at = next(k for k, _, _ in cuts if times[k] == best.at)
        scale = dispersion(segments, hi, at, best, z=z)
        found = change_point(
            candidates, z=z, level=level, direction=direction, critical=critical, dispersion=scale
        )
        return None if found is None else (found, next(k for k, _, _ in cuts if times[k] == found.at))

    last = search(n)
    if last is None:
        return None
    first, steps = last, 1
    while steps < most_steps and (earlier := search(first[1])) is not None:
        first, steps = earlier, steps + 1
    found = first[0]
    return dataclasses.replace(
        found,
        after=last[0].after,
        step=times[1] - times[0] if n > 0 else timedelta(0),
        metric=segments.metric,
        steps=steps,
        until=last[0].at if steps > 1 else None,
    )


def change_point(
    cuts: Sequence[Cut],
    *,
    z: float,
    level: float = 0.95,
    direction: int = 0,
    critical: float = 0.0,
    dispersion: float = 1.0,
) -> Onset | None:
    """The most likely change among ``cuts`` (in time order), its interval at ``level``; ``z``: the
    normal quantile of the cuts' intervals (their level's). Only changes in ``direction`` (its sign;
    0: either) count, and none whose ``W / dispersion`` stays below ``critical``."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1 (exclusive), got {level}")
    stats = np.array([_statistic(c, z) for c in cuts], dtype=np.float64) / dispersion
    if direction:
        turned = np.array(
            [
                math.copysign(1.0, c.after.value - c.before.value) != math.copysign(1.0, direction)
                for c in cuts
            ],
            dtype=bool,
        )
        stats[turned] = np.nan
    judged = np.isfinite(stats)
    if not judged.any() or float(np.nanmax(stats)) < critical:
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
    first = int(np.flatnonzero(judged)[0])
    return Onset(
        at=cuts[best].at,
        earliest=cuts[lo].at,
        latest=cuts[hi].at,
        level=level,
        before=cuts[best].before.value,
        after=cuts[best].after.value,
        beyond="before" if best == first else "",
    )


#: Runs a dispersion is estimated from, at least: fewer leave the sampling error's own scale (1).
_FEW_BINS = 6
_RUNS = (1, 2, 4, 6, 12)  # bins per run: a cycle shows over hours more than within one


def dispersion(segments: Segments, hi: int, at: int, change: Onset, *, z: float) -> float:
    """How much more the metric varies between runs of bins than its sampling error says, around the
    one change ``change`` at bin ``at`` of bins ``0 .. hi - 1``: Pearson's statistic
    ``sum ((v - fit) / se)^2 / (runs - 2)`` over runs of 1, 2, 4, 6 and 12 bins that do not straddle the
    change (at least :data:`_FEW_BINS` of them), the largest, and never below 1 (McCullagh & Nelder
    1989, 4.5). A daily cycle or bursty traffic varies more than independent rows would, and over
    hours more than within one; ``W``, a statistic of sums over many bins, is divided by it so that a
    cycle is not read as a change (a review measured 27-88% false onsets over cycles without it)."""
    worst = 1.0
    for length in _RUNS:
        residuals = []
        for b in range(0, hi - length + 1, length):
            if b < at < b + length:
                continue  # straddles the change: its fitted value is neither side's
            v = segments.value(b, b + length)
            if v is None or v.state == "insufficient_data" or not math.isfinite(v.value):
                continue
            se = (v.ci_upper - v.ci_lower) / (2 * z)
            if math.isfinite(se) and se > 0:
                residuals.append((v.value - (change.before if b < at else change.after)) / se)
        if len(residuals) >= _FEW_BINS:
            worst = max(worst, float(np.sum(np.square(residuals))) / (len(residuals) - 2))
    return worst


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
    >>> onset_text(Onset(t, t, t, 0.95, 0.99, 0.67, step=timedelta(hours=1), metric="disparate_impact"))
    'about 2026-03-02 00:00 UTC ± 1h (its disparate_impact changed from 0.99 to 0.67; a change point in the log, 95% between 2026-03-01 23:00 and 2026-03-02 01:00)'
    """
    earlier = " or earlier" if onset.beyond == "before" else ""
    low, high = onset.bounds
    changed = f"its {onset.metric or 'value'} changed from {number(onset.before)} to {number(onset.after)}"
    where = f"{number(100 * onset.level)}% between {low.strftime(_MINUTE)} and {_short(high, low)}"
    if onset.steps > 1 and onset.until is not None:  # a drift starts before it is first sure
        return (
            f"gradually, from about {onset.at.strftime(_MINUTE)} UTC or earlier ({changed} in {onset.steps} "
            f"steps until {_short(onset.until, onset.at)}; its first sure step {where}, and a drift begins "
            "before it is sure)"
        )
    return (
        f"about {onset.at.strftime(_MINUTE)} UTC ± {format_duration(onset.uncertainty)}{earlier} "
        f"({changed}; a change point in the log, {where})"
    )


def _short(t: datetime, since: datetime) -> str:
    return t.strftime("%H:%M" if t.date() == since.date() else _MINUTE)


_MINUTE = "%Y-%m-%d %H:%M"
