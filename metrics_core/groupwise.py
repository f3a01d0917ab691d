"""Group-vs-reference evaluation for the task families that are not binary classification.

Binary metrics come from a shared score table (:mod:`metrics_core.report`). The other
families (multiclass, regression, recommender, clustering, text) compute each metric from
the rows of the group and the rows of its reference. This module is the one mechanism they
share: it turns "a statistic of (group rows, reference rows)" into judged
:class:`~metrics_core.MetricValue` objects with an interval, the fair range and a state.

A family module declares, per metric, a :class:`GroupMetric`:

- ``statistic(g, r)`` - the value, from two row subsets (dicts of column arrays); it raises
  :class:`Undefined` with a reason when the value does not exist (NaN, never 0);
- ``support(g, r)`` - the smallest denominator, gated by ``min_samples``;
- ``interval(g, r, level)`` - an analytic interval, or ``None`` for the stratified
  bootstrap (rows resampled within the group and within the reference, fixed seed).

Model-level summaries (all-pairs mean/max, Gini, ...) are :class:`ModelMetric` s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core._results import MetricValue, ModelValue, Report
from metrics_core._spec import MetricSpec
from metrics_core.groups import Attribute
from metrics_core.intervals import judge

__all__ = [
    "Data",
    "GroupMetric",
    "GroupPair",
    "ModelMetric",
    "Undefined",
    "evaluate_groupwise",
    "pairs_of",
]

Data = Mapping[str, NDArray[np.generic]]


class Undefined(Exception):
    """Raised by a statistic whose value does not exist for these rows; the message is the reason."""


@dataclass(frozen=True)
class GroupPair:
    """A group and its reference as row masks of one window."""

    attribute: str
    group: str
    reference: str
    group_rows: NDArray[np.bool_]
    reference_rows: NDArray[np.bool_]


@dataclass(frozen=True)
class GroupMetric:
    spec: MetricSpec
    statistic: Callable[[Data, Data], float]
    support: Callable[[Data, Data], float]
    interval: Callable[[Data, Data, float], tuple[float, float]] | None = None


@dataclass(frozen=True)
class ModelMetric:
    """A summary over all groups of one attribute: ``statistic(data, pairs) -> value``."""

    spec: MetricSpec
    statistic: Callable[[Data, Sequence[GroupPair]], float]


def pairs_of(attributes: Sequence[Attribute], n: int) -> list[GroupPair]:
    """Row masks of every comparison of ``attributes`` (reference: named group or rest of the universe)."""
    out = []
    for attr in attributes:
        for c in attr.comparisons:
            g = np.asarray(attr.masks[c.key], dtype=bool)
            if c.reference_key is not None:
                r = np.asarray(attr.masks[c.reference_key], dtype=bool)
            else:
                universe = np.ones(n, dtype=bool)
                for key in c.universe or ():
                    universe = np.asarray(attr.masks[key], dtype=bool)
                r = universe & ~g
            out.append(GroupPair(c.attribute, c.group, c.reference, g, r))
    return out


def _subset(data: Data, rows: NDArray[np.bool_] | NDArray[np.intp]) -> dict[str, NDArray[np.generic]]:
    return {k: np.asarray(v)[rows] for k, v in data.items()}


def _safe(statistic: Callable[[Data, Data], float], g: Data, r: Data) -> tuple[float, str | None]:
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(statistic(g, r))
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
    """Percentile interval of ``statistic`` with rows resampled within each side (stratified)."""
    n_g = len(next(iter(g.values()))) if g else 0
    n_r = len(next(iter(r.values()))) if r else 0
    if n_g == 0 or n_r == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    stats = np.empty(n_resamples)
    for b in range(n_resamples):
        gi = rng.integers(0, n_g, n_g)
        ri = rng.integers(0, n_r, n_r)
        stats[b] = _safe(statistic, _subset(g, gi), _subset(r, ri))[0]
    finite = stats[np.isfinite(stats)]
    if finite.size < n_resamples / 2:
        return math.nan, math.nan
    alpha = (1 - level) / 2
    return float(np.quantile(finite, alpha)), float(np.quantile(finite, 1 - alpha))


def evaluate_groupwise(
    data: Mapping[str, ArrayLike],
    attributes: Sequence[Attribute],
    metrics: Sequence[GroupMetric],
    *,
    model_metrics: Sequence[ModelMetric] = (),
    confidence: float = 0.95,
    fair_ranges: Mapping[str, Sequence[float | None]] | None = None,
    min_samples: float = 30,
    n_resamples: int = 200,
    seed: int = 0,
) -> Report:
    """Judge every metric for every comparison of ``attributes`` on row-aligned ``data``."""
    arrays = {k: np.asarray(v) for k, v in data.items()}
    n = len(next(iter(arrays.values()))) if arrays else 0
    pairs = pairs_of(attributes, n)
    values: list[MetricValue] = []
    for metric in metrics:
        spec = metric.spec
        fmin, fmax = _fair_bounds(spec, fair_ranges)
        for i, pair in enumerate(pairs):
            g, r = _subset(arrays, pair.group_rows), _subset(arrays, pair.reference_rows)
            value, reason = _safe(metric.statistic, g, r)
            support = float(metric.support(g, r))
            lo = hi = math.nan
            if reason is None:
                if metric.interval is not None:
                    lo, hi = metric.interval(g, r, confidence)
                else:
                    lo, hi = bootstrap_interval(
                        metric.statistic, g, r, level=confidence, n_resamples=n_resamples, seed=seed + i
                    )
            state = str(judge(value, lo, hi, fmin, fmax, support=support, min_samples=min_samples))
            values.append(
                MetricValue(
                    attribute=pair.attribute,
                    group=pair.group,
                    reference=pair.reference,
                    metric=spec.name,
                    value=value,
                    ci_lower=lo,
                    ci_upper=hi,
                    fair_min=fmin,
                    fair_max=fmax,
                    state=state,
                    n_group=float(pair.group_rows.sum()),
                    n_reference=float(pair.reference_rows.sum()),
                    support=support,
                    reason=reason,
                )
            )
    model: list[ModelValue] = []
    for mm in model_metrics:
        for attr in attributes:
            attr_pairs = [p for p in pairs if p.attribute == attr.name]
            try:
                with np.errstate(divide="ignore", invalid="ignore"):
                    v = float(mm.statistic(arrays, attr_pairs))
                reason = None if math.isfinite(v) else "undefined for this window"
            except Undefined as exc:
                v, reason = math.nan, str(exc)
            model.append(
                ModelValue(mm.spec.name, v if reason is None else math.nan, attr.name, reason=reason)
            )
    return Report(tuple(values), tuple(model))


def _fair_bounds(
    spec: MetricSpec, overrides: Mapping[str, Sequence[float | None]] | None
) -> tuple[float, float]:
    # imported here: the registry imports the family modules, which import this module
    from metrics_core.registry import resolve_fair_range

    fair_range = resolve_fair_range(spec.name, overrides)
    return (-math.inf, math.inf) if fair_range is None else fair_range.resolve()
