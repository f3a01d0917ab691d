"""Group-vs-reference evaluation for the task families that are not binary classification.

Binary metrics come from a shared score table (:mod:`metrics_core.binary`). The other
families (multiclass, regression, recommender, clustering, text) compute each metric from
the rows of the group and the rows of its reference. This module is the one mechanism they
share: it turns each :class:`~metrics_core.core.spec.MetricSpec`'s callables into judged
:class:`~metrics_core.core.results.MetricValue` objects with an interval, the fair range
and a state. A family passes its per-window context ``window`` (thresholds, classes,
centres, ... computed once per window) and the engine hands it to every callable:

- group metrics: ``statistic(window, g, r) -> float``, raising
  :class:`~metrics_core.core.undefined.Undefined` with a reason when the value does not
  exist (NaN, never 0); ``count_support(window, g, r) -> float``, the smallest denominator,
  gated by ``min_samples``; ``ci(window, g, r, level, resampling) -> (lo, hi)``, or ``None``
  for the stratified percentile bootstrap (rows resampled within the group and within the
  reference, seeded per comparison). ``g`` and ``r`` are the two sides' rows
  (:data:`~metrics_core.core.types.Data`).
- model-level summaries (all-pairs mean/max, Gini, ...): ``statistic(window, data, pairs)``,
  once per attribute.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from metrics_core.core.results import ModelValue, Report
from metrics_core.core.spec import FairRange, MetricSpec
from metrics_core.core.types import BoolArray, Data, FloatArray, IntArray
from metrics_core.core.undefined import Undefined, or_nan
from metrics_core.engine.adjust import Adjustment, Block, adjusted_intervals
from metrics_core.engine.values import Side, judged_values
from metrics_core.stats.bootstrap import percentile_interval, resamples_for
from metrics_core.stats.judge import DEFAULT_MIN_SAMPLES
from metrics_core.window.groups import Attribute
from metrics_core.window.pairs import GroupPair, label_coverage, pairs_of

__all__ = ["Resampling", "bootstrap_interval", "evaluate_groupwise"]

Statistic = Callable[[Any, Data, Data], float]
Interval = Callable[[Any, Data, Data, float, "Resampling"], tuple[float, float]]


@dataclass(frozen=True)
class Resampling:
    """Bootstrap settings handed to a metric's ``ci``: resamples and the seed of the generator."""

    n_resamples: int
    seed: int

    def count(self, level: float) -> int:
        """Resamples for an interval at ``level``: more when an adjusted level reaches far into a tail."""
        return resamples_for(level, self.n_resamples)


def _subset(data: Data, rows: NDArray[np.bool_] | NDArray[np.intp]) -> dict[str, NDArray[np.generic]]:
    return {k: np.asarray(v)[rows] for k, v in data.items()}


def _value(statistic: Statistic, window: Any, g: Data, r: Data) -> tuple[float, str | None]:
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(statistic(window, g, r))
    except Undefined as exc:
        return math.nan, str(exc)
    if not math.isfinite(value):
        return math.nan, "undefined for these rows (zero denominator)"
    return value, None


def bootstrap_interval(
    statistic: Callable[[Data, Data], float],
    g: Data,
    r: Data,
    *,
    level: float,
    n_resamples: int,
    seed: int,
) -> tuple[float, float]:
    """Percentile interval of ``statistic`` with rows resampled within each side (stratified).

    NaN when a side is empty or fewer than half of the resamples give a finite value.
    """
    n_g = len(next(iter(g.values()))) if g else 0
    n_r = len(next(iter(r.values()))) if r else 0
    if n_g == 0 or n_r == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    stats = np.empty(n_resamples)
    for b in range(n_resamples):
        gi = rng.integers(0, n_g, n_g)
        ri = rng.integers(0, n_r, n_r)
        stats[b] = or_nan(statistic, _subset(g, gi), _subset(r, ri))
    return percentile_interval(stats, level)


def evaluate_groupwise(
    window: Any,
    data: Data,
    attributes: Sequence[Attribute],
    specs: Sequence[MetricSpec],
    *,
    fair_ranges: Mapping[str, FairRange | None],
    confidence: float = 0.95,
    min_samples: float = DEFAULT_MIN_SAMPLES,
    n_resamples: int = 200,
    seed: int = 0,
    labeled: BoolArray | None = None,
    adjust: Adjustment = "none",
    family_size: int | None = None,
    weight: FloatArray | None = None,
) -> Report:
    """Judge every spec for every comparison of ``attributes`` on row-aligned ``data``.

    ``fair_ranges`` holds each spec's range, already resolved (see
    :func:`metrics_core.engine.select.fair_ranges_of`); ``labeled`` marks the rows that
    carry a label, for the report's label coverage; ``adjust`` and ``family_size`` the
    multiplicity adjustment of the alerting values (:mod:`metrics_core.engine.adjust`);
    ``weight`` the rows each entry stands for (counted data: group sizes and coverage count them).
    """
    arrays = {k: np.asarray(v) for k, v in data.items()}
    n = len(next(iter(arrays.values()))) if arrays else 0
    pairs = pairs_of(attributes, n)
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    sides = [
        Side(
            p.attribute, p.group, p.reference, float(w[p.group_rows].sum()), float(w[p.reference_rows].sum())
        )
        for p in pairs
    ]
    rows = [(_subset(arrays, p.group_rows), _subset(arrays, p.reference_rows)) for p in pairs]
    group_specs = [s for s in specs if s.level == "group"]
    parts = {
        s.name: _Part(s, window, rows, fair_ranges[s.name], Resampling(n_resamples, seed), min_samples)
        for s in group_specs
    }
    alerting = [parts[s.name] for s in group_specs if not parts[s.name].informational]
    adjusted = adjusted_intervals(
        [part.block() for part in alerting], confidence=confidence, adjust=adjust, family_size=family_size
    )
    bounds = {part.spec.name: interval for part, interval in zip(alerting, adjusted, strict=True)}
    values = []
    for spec in group_specs:
        part = parts[spec.name]
        lo, hi = bounds.get(spec.name) or part.interval(confidence)
        values += judged_values(
            spec.name,
            sides,
            part.estimate,
            lo,
            hi,
            part.support,
            part.reasons,
            fair_min=part.fair_min,
            fair_max=part.fair_max,
            min_samples=min_samples,
        )
    model = [
        _model_value(spec, window, arrays, attr.name, [p for p in pairs if p.attribute == attr.name])
        for spec in specs
        if spec.level == "model"
        for attr in attributes
    ]
    coverage = {} if labeled is None else label_coverage(attributes, labeled, weight)
    return Report(tuple(values), tuple(model), coverage)


class _Part:
    """One group metric for every comparison: estimates, reasons and supports, intervals at any level."""

    def __init__(
        self,
        spec: MetricSpec,
        window: Any,
        rows: Sequence[tuple[Data, Data]],
        fair_range: FairRange | None,
        resampling: Resampling,
        min_samples: float,
    ) -> None:
        assert spec.count_support is not None, f"{spec.name}: a group metric needs count_support"
        self.spec, self.window, self.rows, self.resampling = spec, window, rows, resampling
        self.min_samples = min_samples
        self.informational = fair_range is None
        self.fair_min, self.fair_max = (-math.inf, math.inf) if fair_range is None else fair_range.resolve()
        n = len(rows)
        self.estimate, self.support = np.full(n, math.nan), np.full(n, math.nan)
        self.reasons: list[str | None] = []
        for i, (g, r) in enumerate(rows):
            self.estimate[i], reason = _value(spec.statistic, window, g, r)
            self.reasons.append(reason)
            self.support[i] = float(spec.count_support(window, g, r))

    def interval(self, level: float, which: IntArray | None = None) -> tuple[FloatArray, FloatArray]:
        """Intervals of the comparisons ``which`` (all by default) at ``level``; NaN where undefined."""
        indices = range(len(self.rows)) if which is None else [int(i) for i in which]
        lo, hi = np.full(len(indices), math.nan), np.full(len(indices), math.nan)
        for k, i in enumerate(indices):
            if self.reasons[i] is not None:
                continue
            g, r = self.rows[i]
            if self.spec.ci is not None:
                lo[k], hi[k] = self.spec.ci(self.window, g, r, level, self.resampling)
            else:  # the default: a percentile bootstrap, seeded per comparison
                seeded = Resampling(self.resampling.n_resamples, self.resampling.seed + i)
                lo[k], hi[k] = _percentile_bootstrap(self.spec, self.window, g, r, level, seeded)
        return lo, hi

    def outside(self, lo: FloatArray, hi: FloatArray, which: IntArray | None = None) -> BoolArray:
        estimate = self.estimate if which is None else self.estimate[which]
        support = self.support if which is None else self.support[which]
        judgeable = ~np.isnan(estimate) & (support >= self.min_samples)
        out: BoolArray = judgeable & ((hi < self.fair_min) | (lo > self.fair_max))
        return out

    def block(self) -> Block:
        return Block(len(self.rows), self.interval, self.outside)


def _percentile_bootstrap(
    spec: MetricSpec, window: Any, g: Data, r: Data, level: float, resampling: Resampling
) -> tuple[float, float]:
    def bound(g_: Data, r_: Data) -> float:
        return float(spec.statistic(window, g_, r_))

    return bootstrap_interval(
        bound, g, r, level=level, n_resamples=resampling.count(level), seed=resampling.seed
    )


def _model_value(
    spec: MetricSpec, window: Any, data: Data, attribute: str, pairs: Sequence[GroupPair]
) -> ModelValue:
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(spec.statistic(window, data, pairs))
        reason = None if math.isfinite(value) else "undefined for this window"
    except Undefined as exc:
        value, reason = math.nan, str(exc)
    return ModelValue(spec.name, value if reason is None else math.nan, attribute, reason=reason)
