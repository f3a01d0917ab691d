"""Evaluate the binary metrics for every comparison of a window, with intervals and states.

:func:`evaluate` is the library's main entry: a :class:`~metrics_core.ScoreTable` and the
comparisons (group vs reference) in, a :class:`~metrics_core.Report` out. A model that logs
classes instead of scores is evaluated from a table whose "scores" are its predicted classes
(``has_scores=False``): the threshold metrics are the same, the ranking metrics are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from metrics_core.binary.rates import Favorable
from metrics_core.binary.specs import SPECS
from metrics_core.binary.window import BinaryWindow
from metrics_core.core.results import Comparison, MetricValue, ModelValue, Report
from metrics_core.core.spec import FairRange, MetricSpec
from metrics_core.core.types import BoolArray, FloatArray, IntArray
from metrics_core.engine.adjust import Adjustment, Block, adjusted_intervals
from metrics_core.engine.select import FairRangeOverrides, fair_ranges_of, select_specs
from metrics_core.engine.values import judged_values
from metrics_core.stats.contrasts import Method
from metrics_core.stats.judge import DEFAULT_MIN_SAMPLES
from metrics_core.window.tables import NEG, POS, ScoreTable

__all__ = ["DEFAULT_MIN_SAMPLES", "INPUTS", "evaluate"]

#: The data a binary model logs: predictions (or scores, thresholded), labels, scores.
INPUTS: tuple[str, ...] = ("y_pred", "y_true", "y_score")
_FAMILY = "binary"


def evaluate(
    table: ScoreTable,
    comparisons: Sequence[Comparison],
    *,
    metrics: Iterable[str] | None = None,
    threshold: float = 0.5,
    has_scores: bool = True,
    confidence: float = 0.95,
    fair_ranges: FairRangeOverrides | None = None,
    min_samples: float = DEFAULT_MIN_SAMPLES,
    power: float = -5.0,
    n_resamples: int = 400,
    seed: int = 0,
    adjust: Adjustment = "none",
    family_size: int | None = None,
    method: Method = "fixed",
    anchors: Mapping[str, float] | None = None,
    favorable: Favorable = "positive",
) -> Report:
    """Compute, bound and judge every requested metric for every comparison.

    Parameters
    ----------
    table : ScoreTable
        The window's sufficient statistics.
    comparisons : sequence of Comparison
        Group vs reference pairs; their keys name groups of ``table``.
    metrics : iterable of str, optional
        Registry names (aliases accepted); default: every metric computable from the
        inputs (``has_scores``).
    threshold : float
        ŷ = 1 iff score >= threshold.
    has_scores : bool
        False when the table's scores are predicted classes: ranking metrics are skipped.
    confidence : float
        Two-sided level of every interval.
    fair_ranges : mapping of metric name to (min, max), optional
        Absolute overrides of the registry's default fair ranges (``None`` = open end).
    min_samples : float
        A value whose smallest denominator is below this is ``insufficient_data``.
    power : float
        Exponent of the Jigsaw power means.
    n_resamples, seed : int
        Bootstrap settings for metrics without an analytic interval (none of the binary ones today).
    adjust : {"none", "bonferroni", "holm"}
        Multiplicity adjustment of the alerting values' intervals (:mod:`metrics_core.engine.adjust`);
        informational values keep ``confidence``.
    family_size : int, optional
        The number of alerting values the adjustment covers (default: those of this call).
    method : {"fixed", "anytime"}
        ``"anytime"``: the count-based metrics' intervals are confidence sequences, valid however
        often the same growing stream is judged (:mod:`metrics_core.stats.sequences`); the AUC
        family and the standardized mean difference keep their fixed-sample intervals.
    anchors : mapping, optional
        The model-level values fair ranges are relative to (``overall_auc``), when the table is not
        the whole window (a comparison judged on its own rows); default: this table's.
    favorable : {"positive", "negative"}
        Which prediction is the good outcome (:data:`~metrics_core.binary.rates.Favorable`): the
        selection family compares the rates of the favourable prediction. The error rates and the
        AUCs are of the positive label, whatever it means.

    Examples
    --------
    >>> t = ScoreTable.from_arrays([0.9, 0.8, 0.3, 0.7, 0.2, 0.1], [1, 0, 0, 1, 1, 0],
    ...                            {"g": [True, True, True, False, False, False]})
    >>> r = evaluate(t, [Comparison("identity", "g", "g")], metrics=["statistical_parity_difference"],
    ...              min_samples=1)
    >>> v = r.get("statistical_parity_difference", "g")
    >>> round(v.value, 4), v.state
    (0.3333, 'inconclusive')
    """
    specs = select_specs(SPECS, metrics, available=INPUTS, family=_FAMILY)
    if not has_scores:
        specs = [s for s in specs if "y_score" not in s.requires]
    ranges = fair_ranges_of(SPECS, fair_ranges, family=_FAMILY)
    window = BinaryWindow(
        table,
        comparisons,
        threshold=threshold,
        level=confidence,
        power=power,
        n_resamples=n_resamples,
        seed=seed,
        method=method,
        favorable=favorable,
    )
    # Model-level values a fair range is relative to (the overall AUC) anchor the group metrics'
    # ranges: they are computed first, and reported whenever their inputs are there.
    model: list[ModelValue] = [v for s in _anchors(has_scores) for v in s.statistic(window, {}, ())]
    # ``anchors``: another table's (a comparison judged on its own rows takes its window's)
    anchor_values = dict(anchors) if anchors is not None else {v.metric: v.value for v in model}

    group_specs = [s for s in specs if s.level == "group"]
    parts = {s.name: _Part(s, window, ranges[s.name], anchor_values, min_samples) for s in group_specs}
    alerting = [parts[s.name] for s in group_specs if not parts[s.name].informational]
    intervals = adjusted_intervals(
        [part.block() for part in alerting], confidence=confidence, adjust=adjust, family_size=family_size
    )
    bounds = {part.spec.name: interval for part, interval in zip(alerting, intervals, strict=True)}
    values: list[MetricValue] = []
    by_metric: dict[str, list[MetricValue]] = {}
    for spec in group_specs:
        part = parts[spec.name]
        lower, upper = bounds.get(spec.name) or part.interval(confidence)
        rows = judged_values(
            spec.name,
            window.sides,
            part.estimate,
            lower,
            upper,
            part.support,
            part.reasons,
            fair_min=part.fair_min,
            fair_max=part.fair_max,
            min_samples=min_samples,
        )
        by_metric[spec.name] = rows
        values.extend(rows)

    attributes = list(dict.fromkeys(v.attribute for rows in by_metric.values() for v in rows))
    chosen = set(specs)
    for spec in SPECS:  # summaries in the family's order, whatever order they were asked for
        if spec in chosen and spec.level == "model" and not _is_anchor(spec):
            model.extend(spec.statistic(window, by_metric, attributes))
    coverage = {p.comparison.key: _coverage(p.cells[0]) for p in window.pairs}
    return Report(tuple(values), tuple(model), coverage)


class _Part:
    """One group metric's estimates and supports for every comparison, with its intervals at any level."""

    def __init__(
        self,
        spec: MetricSpec,
        window: BinaryWindow,
        fair_range: FairRange | None,
        anchors: Mapping[str, float],
        min_samples: float,
    ) -> None:
        assert spec.ci is not None and spec.count_support is not None, f"{spec.name}: incomplete spec"
        self.spec, self.window, self.min_samples = spec, window, min_samples
        self.informational = fair_range is None
        self.fair_min, self.fair_max = _bounds(fair_range, anchors)
        self.estimate: FloatArray = spec.statistic(window)
        self.support, self.reasons = spec.count_support(window)

    def interval(self, level: float, rows: IntArray | None = None) -> tuple[FloatArray, FloatArray]:
        assert self.spec.ci is not None
        lo, hi = self.spec.ci(self.window.at_level(level), self.estimate)
        return (lo, hi) if rows is None else (lo[rows], hi[rows])

    def outside(self, lo: FloatArray, hi: FloatArray, rows: IntArray | None = None) -> BoolArray:
        estimate, support = (
            (self.estimate, self.support) if rows is None else (self.estimate[rows], self.support[rows])
        )
        judgeable = ~np.isnan(estimate) & (support >= self.min_samples)
        out: BoolArray = judgeable & ((hi < self.fair_min) | (lo > self.fair_max))
        return out

    def block(self) -> Block:
        return Block(len(self.estimate), self.interval, self.outside)


def _is_anchor(spec: MetricSpec) -> bool:
    return spec.level == "model" and any(
        s.fair_range is not None and s.fair_range.relative_to == spec.name for s in SPECS
    )


def _anchors(has_scores: bool) -> list[MetricSpec]:
    return [s for s in SPECS if _is_anchor(s) and (has_scores or "y_score" not in s.requires)]


def _bounds(fair_range: FairRange | None, anchors: Mapping[str, float]) -> tuple[float, float]:
    return (-math.inf, math.inf) if fair_range is None else fair_range.resolve(anchors)


def _coverage(group_cells: FloatArray) -> float:
    total = group_cells.sum()
    return float(group_cells[..., [NEG, POS]].sum() / total) if total > 0 else math.nan
