"""The onset of a change (monitor.evaluation.onset): the cut where the metric on either side differs
most surely, and its likelihood interval.

References: a slow, independent binomial likelihood-ratio scan over the same hourly counts (its two
rates per side fitted by maximum likelihood, Hinkley 1970), and hand-built cuts.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from scipy.stats import norm

from metrics_core import MetricValue
from monitor.evaluation.onset import CRITICAL, Cut, Onset, Segments, change_point, onset, onset_text

T0 = datetime(2026, 3, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
Z = float(norm.ppf(0.975))


def _rate(k: float, n: float) -> MetricValue:
    """A selection rate with its Wald interval: what a side of a cut holds."""
    p = k / n
    half = Z * math.sqrt(p * (1 - p) / n)
    return MetricValue("race", "Black", "White", "selection_rate", p, p - half, p + half, 0, 1, "ok", n, n, n)


def _binomial_scan(k: np.ndarray, n: np.ndarray) -> int:
    """The index of the most likely single change in hourly binomial counts: a slow loop over every
    split, each side's rate at its maximum likelihood."""

    def loglik(kk: float, nn: float) -> float:
        p = kk / nn
        return sum(x * math.log(q) for x, q in ((kk, p), (nn - kk, 1 - p)) if x > 0)

    best, where = -math.inf, -1
    for i in range(1, len(k)):
        ll = loglik(k[:i].sum(), n[:i].sum()) + loglik(k[i:].sum(), n[i:].sum())
        if ll > best:
            best, where = ll, i
    return where


@pytest.mark.parametrize("seed", range(5))
def test_the_change_is_where_a_binomial_likelihood_scan_puts_it(seed: int) -> None:
    rng = np.random.default_rng(seed)
    hours, onset = 48, int(rng.integers(10, 38))
    n = rng.poisson(250, hours).astype(float)
    p = np.where(np.arange(hours) < onset, 0.59, 0.45)
    k = rng.binomial(n.astype(int), p).astype(float)
    cuts = [
        Cut(T0 + i * HOUR, _rate(k[:i].sum(), n[:i].sum()), _rate(k[i:].sum(), n[i:].sum()))
        for i in range(1, hours)
    ]
    found = change_point(cuts, z=Z)
    assert found is not None
    assert found.at == T0 + _binomial_scan(k, n) * HOUR
    assert abs(found.at - (T0 + onset * HOUR)) <= 2 * HOUR
    assert found.earliest <= found.at <= found.latest and found.beyond == ""


def test_its_interval_holds_the_level_of_the_likelihood_and_is_wider_for_a_fainter_change() -> None:
    rng = np.random.default_rng(7)
    hours, onset = 48, 24
    n = np.full(hours, 100.0)
    widths = []
    for drop in (0.2, 0.05):
        k = rng.binomial(100, np.where(np.arange(hours) < onset, 0.6, 0.6 - drop)).astype(float)
        cuts = [
            Cut(T0 + i * HOUR, _rate(k[:i].sum(), n[:i].sum()), _rate(k[i:].sum(), n[i:].sum()))
            for i in range(1, hours)
        ]
        found = change_point(cuts, z=Z)
        assert found is not None
        # by hand: exp(W/2) over the cuts, normalised; the interval's cuts hold at least 95% of it
        w = np.array([(c.after.value - c.before.value) ** 2 for c in cuts]) / np.array(
            [
                ((c.before.ci_upper - c.before.ci_lower) / (2 * Z)) ** 2
                + ((c.after.ci_upper - c.after.ci_lower) / (2 * Z)) ** 2
                for c in cuts
            ]
        )
        posterior = np.exp(w / 2 - (w / 2).max())
        posterior /= posterior.sum()
        inside = [found.earliest <= c.at <= found.latest for c in cuts]
        assert posterior[inside].sum() >= 0.95
        assert cuts[int(np.argmax(posterior))].at == found.at
        widths.append(found.latest - found.earliest)
    assert widths[1] > widths[0]  # a fainter change is placed less surely


def test_no_judged_cut_is_no_onset_and_a_change_at_the_edge_is_bounded() -> None:
    undefined = MetricValue(
        "a", "g", "r", "m", math.nan, math.nan, math.nan, 0, 1, "insufficient_data", 0, 0, 0
    )
    assert change_point([Cut(T0, undefined, undefined)], z=Z) is None
    # the rate differs only across the first cut: the change may be before the span
    cuts = [
        Cut(T0 + i * HOUR, _rate(k, n), _rate(6000, 10000))
        for i, (k, n) in enumerate([(20, 100), (110, 200), (175, 300), (236, 400)], start=1)
    ]
    edge = change_point(cuts, z=Z)
    assert edge is not None and edge.at == T0 + HOUR and edge.beyond == "before"


def test_the_onset_reads_as_a_time_with_its_uncertainty() -> None:
    t = datetime(2026, 3, 2, 1, tzinfo=UTC)
    onset = Onset(t, t - HOUR, t + 2 * HOUR, 0.95, 0.99, 0.67, step=HOUR, metric="disparate_impact")
    assert onset.bounds == (t - 2 * HOUR, t + 3 * HOUR)  # the interval's cuts, a step wider each side
    assert onset.uncertainty == 3 * HOUR  # the farther side
    assert onset_text(onset).startswith(
        "about 2026-03-02 01:00 UTC ± 3h (its disparate_impact changed from 0.99 to 0.67"
    )
    assert onset_text(onset).endswith("95% between 2026-03-01 23:00 and 2026-03-02 04:00)")
    assert Onset(t, t, t, 0.95, 1, 0.5, step=HOUR).uncertainty == HOUR  # never finer than the cuts


def _segments(k: np.ndarray, n: np.ndarray) -> Segments:
    """Hourly binomial counts as segments: the rate of any run of hours, with its Wald interval."""
    times = [T0 + i * HOUR for i in range(len(k) + 1)]
    return Segments(times, lambda i, j: _rate(k[i:j].sum(), n[i:j].sum()), "selection_rate")


def test_the_critical_value_is_the_95_percent_point_of_max_w_without_a_change() -> None:
    """CRITICAL by simulation: max over 95 cuts of W for 96 hours of normal noise (its 95% point is
    about 9.3; the constant is rounded up)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20_000, 96))
    c, k = np.cumsum(x, axis=1), np.arange(1, 96)
    before, after = c[:, :-1] / k, (c[:, -1:] - c[:, :-1]) / (96 - k)
    w = (after - before) ** 2 / (1 / k + 1 / (96 - k))
    point = float(np.quantile(w.max(axis=1), 0.95))
    assert 9.0 < point < CRITICAL


def test_no_change_claims_no_onset_in_about_95_percent_of_spans() -> None:
    """Rows without any change (a bias older than the span looks like this): an onset is claimed in
    at most about 5% of 300 spans, in either direction."""
    rng = np.random.default_rng(3)
    claimed = 0
    for _ in range(300):
        n = rng.poisson(250, 72).astype(float)
        k = rng.binomial(n.astype(int), 0.4).astype(float)
        claimed += onset(_segments(k, n), z=Z, direction=-1) is not None
    assert claimed / 300 <= 0.06


def test_only_a_change_in_the_incidents_direction_counts() -> None:
    n = np.full(48, 250.0)
    k = np.where(np.arange(48) < 24, 0.4, 0.55) * n  # the rate rose
    assert onset(_segments(k, n), z=Z, direction=-1) is None  # the incident is of a fall
    rose = onset(_segments(k, n), z=Z, direction=1)
    assert rose is not None and rose.at == T0 + 24 * HOUR and rose.steps == 1


def test_a_gradual_drift_starts_at_its_first_step_not_its_middle() -> None:
    """A review: a linear fall from hour 24 to 48 was placed at 35h with an interval excluding its
    start. Binary segmentation finds the steps and the onset is the earliest."""
    rng = np.random.default_rng(11)
    hours = np.arange(72)
    rate = 0.59 - 0.19 * np.clip((hours - 24) / 24, 0, 1)
    n = rng.poisson(250, 72).astype(float)
    k = rng.binomial(n.astype(int), rate).astype(float)
    found = onset(_segments(k, n), z=Z, direction=-1)
    assert found is not None and found.steps > 1 and found.until is not None
    single = change_point(
        [
            Cut(T0 + i * HOUR, _rate(k[:i].sum(), n[:i].sum()), _rate(k[i:].sum(), n[i:].sum()))
            for i in range(1, 72)
        ],
        z=Z,
        direction=-1,
    )
    assert single is not None and found.at < single.at  # earlier than the one-step estimate
    assert abs(found.at - (T0 + 24 * HOUR)) <= 6 * HOUR
    said = onset_text(found)
    assert (
        said.startswith(f"gradually, from about {found.at:%Y-%m-%d %H:%M} UTC or earlier (")
        and " steps until " in said
    )


def test_a_daily_cycle_is_not_read_as_a_change() -> None:
    """A review: a group's rate that follows a daily cycle (no change at all) was given an onset in
    27-88% of spans - hourly bins vary more than their sampling error says. With W divided by the
    bins' dispersion, in about 5% or fewer."""
    rng = np.random.default_rng(5)
    hours = np.arange(72)
    claimed = 0
    for _ in range(100):
        n = rng.poisson(1000, 72).astype(float)
        k = rng.binomial(n.astype(int), 0.40 + 0.02 * np.sin(2 * np.pi * hours / 24)).astype(float)
        claimed += onset(_segments(k, n), z=Z, direction=-1) is not None
    assert claimed <= 6


def test_a_cancelled_search_stops_between_two_computations() -> None:
    """Closing the service stops a running estimate (its sources are about to close): the search checks
    before each computation and gives up."""
    n = np.full(48, 250.0)
    k = np.where(np.arange(48) < 24, 0.59, 0.40) * n
    computed: list[tuple[int, int]] = []
    base = _segments(k, n)

    def value(i: int, j: int) -> MetricValue | None:
        computed.append((i, j))
        return base.value(i, j)

    stop = [False]
    runs = Segments(base.times, value, base.metric)
    assert onset(runs, z=Z, direction=-1) is not None
    done = len(computed)
    computed.clear()
    stop[0] = True
    assert onset(runs, z=Z, direction=-1, cancelled=lambda: stop[0]) is None and len(computed) < done
