"""Regression bias metrics: holisticai's, for a group against its reference.

Data: ``y_score`` (the prediction, finite floats) and ``y_true`` (the target, NaN where it has
not arrived). Orientation (``metrics.md`` section 1): difference = f(G) - f(R), ratio =
f(G) / f(R); holisticai's code gives the same numbers with ``group_a = G, group_b = R``.

*Success* at quantile ``q`` means a prediction >= ``np.quantile(window, q)``, the q-quantile
(linear interpolation) of every prediction in the window, as holisticai's
``slice_arrays_by_quantile`` does on the sample it is given. Because Prometheus family names
are fixed, the quantile metrics come at a fixed set of levels (:data:`QUANTILES`), one
metric name per level: ``regression_disparate_impact_q80`` and so on (holisticai's own
batch report uses the same three levels for disparate impact).

Departures from holisticai's code (each in ``docs/families/regression.md``): the
no-disparate-impact level returns the quantile, not a score; the maximum statistical parity
and the statistical parity AUC are exact instead of sampled at 150 quantiles; the z-score
difference uses the usual pooled standard deviation (``ddof=1``); undefined values are NaN
with a reason; label metrics use the labeled rows only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core import _regression_kernels as k
from metrics_core._family import check_rows, label_coverage, select_specs, side_masks
from metrics_core._regression_kernels import NO_DI_GRID
from metrics_core._regression_specs import QUANTILES, SPECS
from metrics_core._results import Report
from metrics_core._validation import as_scores
from metrics_core.groups import Attribute
from metrics_core.groupwise import Data, GroupMetric, Undefined, bootstrap_interval, evaluate_groupwise
from metrics_core.intervals import basic_interval, katz_log_interval, newcombe_interval, normal_interval

__all__ = [
    "DEFAULT_NO_DI_BOUNDS",
    "INPUTS",
    "NO_DI_GRID",
    "QUANTILES",
    "SPECS",
    "evaluate",
    "regression_average_score_difference",
    "regression_average_score_ratio",
    "regression_correlation_difference",
    "regression_disparate_impact",
    "regression_mae_ratio",
    "regression_max_statistical_parity",
    "regression_no_disparate_impact_level",
    "regression_rmse_ratio",
    "regression_statistical_parity",
    "regression_statistical_parity_auc",
    "regression_zscore_difference",
]

FloatArray = NDArray[np.float64]

#: The data keys the family reads: predictions and (optional) targets.
INPUTS: tuple[str, ...] = ("y_score", "y_true")
#: The disparate-impact range the no-disparate-impact level searches for (closed).
DEFAULT_NO_DI_BOUNDS: tuple[float, float] = (0.8, 1.25)


def _targets(y_true: ArrayLike, n: int) -> FloatArray:
    arr = np.asarray(y_true)
    if arr.dtype == object:
        arr = np.array([np.nan if v is None else v for v in arr.tolist()], dtype=np.float64)
    if arr.shape != (n,):
        raise ValueError(f"y_true has shape {arr.shape}, expected ({n},) like y_score")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"y_true must be numeric (NaN for a target not yet known), got dtype {arr.dtype}")
    out = arr.astype(np.float64, copy=False)
    if np.isinf(out).any():
        raise ValueError("y_true has infinite values")
    return out


def _window(
    y_score: ArrayLike, y_true: ArrayLike | None, group: ArrayLike, reference: ArrayLike | None
) -> tuple[FloatArray, Data, Data]:
    s = as_scores(y_score, "y_score")
    data: dict[str, NDArray[np.generic]] = {"y_score": s}
    if y_true is not None:
        data["y_true"] = _targets(y_true, s.shape[0])
    g, r = side_masks(group, reference, s.shape[0])
    return s, {key: v[g] for key, v in data.items()}, {key: v[r] for key, v in data.items()}


def _value(fn: Callable[[], float]) -> float:
    try:
        return float(fn())
    except Undefined:
        return math.nan


def regression_disparate_impact(
    y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None, *, q: float = 0.8
) -> float:
    """Ratio of the shares of the group and of its reference above the window's q-quantile.

    .. math:: DI_q = \\frac{P(\\hat y \\ge Q(q) \\mid G)}{P(\\hat y \\ge Q(q) \\mid R)}

    ``Q`` is the quantile function of all of ``y_score``; ``reference`` defaults to the rows
    outside ``group``. NaN when no reference row succeeds. holisticai's docstring example:

    >>> y = [0.8, 0.9, 0.2, 0.1, 0.7, 0.9, 0.8, 0.6, 0.3, 0.5]
    >>> regression_disparate_impact(y, [1, 1, 1, 1, 0, 0, 0, 0, 0, 0], q=0.7)
    1.5
    """
    s, g, r = _window(y_score, None, group, reference)
    return _value(lambda: k.disparate_impact(g, r, float(np.quantile(s, q)), q))


def regression_statistical_parity(
    y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None, *, q: float = 0.5
) -> float:
    """Difference of the shares above the window's q-quantile, ``SR_G - SR_R``.

    >>> y = [0.8, 0.9, 0.2, 0.1, 0.7, 0.9, 0.8, 0.6, 0.3, 0.5]
    >>> round(regression_statistical_parity(y, [1, 1, 1, 1, 0, 0, 0, 0, 0, 0], q=0.7), 6)
    0.166667
    """
    s, g, r = _window(y_score, None, group, reference)
    return _value(lambda: k.statistical_parity(g, r, float(np.quantile(s, q))))


def regression_no_disparate_impact_level(
    y_score: ArrayLike,
    group: ArrayLike,
    reference: ArrayLike | None = None,
    *,
    bounds: tuple[float, float] = DEFAULT_NO_DI_BOUNDS,
) -> float:
    """The highest quantile level q (1.00, 0.99, ..., 0.00) at which DI_q is within ``bounds``.

    .. math:: NoDI = \\max \\{ q \\in \\{1, 0.99, \\dots, 0\\} : b_0 \\le DI_q \\le b_1 \\}

    1 means no disparate impact even when only the top predictions succeed; at q = 0 every
    row succeeds and DI = 1. holisticai scans the same way but returns the score ``Q(q)``.

    >>> y = [0.8, 0.9, 0.2, 0.1, 0.7, 0.9, 0.8, 0.6, 0.3, 0.5]
    >>> regression_no_disparate_impact_level(y, [1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    0.55
    """
    s, g, r = _window(y_score, None, group, reference)
    lo, hi = _check_bounds(bounds)
    return _value(lambda: k.no_disparate_impact_level(g, r, np.quantile(s, NO_DI_GRID), NO_DI_GRID, (lo, hi)))


def regression_average_score_difference(
    y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """``mean(ŷ | G) - mean(ŷ | R)``.

    >>> y = [0.8, 0.9, 0.2, 0.1, 0.7, 0.9, 0.8, 0.6, 0.3, 0.5]
    >>> round(regression_average_score_difference(y, [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]), 6)
    -0.133333
    """
    _, g, r = _window(y_score, None, group, reference)
    return _value(lambda: k.average_score_difference(g, r))


def regression_average_score_ratio(
    y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """``mean(ŷ | G) / mean(ŷ | R)``; NaN unless the means are non-negative and the reference's positive.

    >>> y = [0.8, 0.9, 0.2, 0.1, 0.7, 0.9, 0.8, 0.6, 0.3, 0.5]
    >>> round(regression_average_score_ratio(y, [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]), 6)
    0.789474
    """
    _, g, r = _window(y_score, None, group, reference)
    return _value(lambda: k.average_score_ratio(g, r))


def regression_zscore_difference(
    y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """Difference of means over the pooled standard deviation (Cohen's d of the predictions).

    .. math:: Z = \\frac{\\bar y_G - \\bar y_R}{\\sqrt{(SS_G + SS_R) / (n_G + n_R - 2)}}

    >>> round(regression_zscore_difference([1.0, 2.0, 3.0, 2.0, 3.0, 4.0], [1, 1, 1, 0, 0, 0]), 6)
    -1.0
    """
    _, g, r = _window(y_score, None, group, reference)
    return _value(lambda: k.zscore_difference(g, r))


def regression_max_statistical_parity(
    y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """Largest selection-rate gap over all thresholds: ``max_t |P(ŷ >= t | G) - P(ŷ >= t | R)|``.

    This is the two-sample Kolmogorov-Smirnov statistic of the two sides' predictions.

    >>> round(regression_max_statistical_parity([1.0, 2.0, 3.0, 2.0, 3.0, 4.0], [1, 1, 1, 0, 0, 0]), 6)
    0.333333
    """
    _, g, r = _window(y_score, None, group, reference)
    return _value(lambda: k.max_statistical_parity(g, r))


def regression_statistical_parity_auc(
    y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """Area under the absolute statistical parity against the window's quantile level.

    .. math:: SPAUC = \\int_0^1 \\left| SR_G(Q(q)) - SR_R(Q(q)) \\right| dq

    computed exactly (holisticai samples the curve at 150 levels).

    >>> round(regression_statistical_parity_auc([1.0, 2.0, 3.0, 2.0, 3.0, 4.0], [1, 1, 1, 0, 0, 0]), 6)
    0.333333
    """
    s, g, r = _window(y_score, None, group, reference)
    return _value(lambda: k.statistical_parity_auc(g, r, np.sort(s)))


def regression_rmse_ratio(
    y_true: ArrayLike, y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """``RMSE_G / RMSE_R`` on the rows with a target (NaN targets are skipped).

    >>> regression_rmse_ratio([1.0, 2.0, 1.0, 2.0], [3.0, 2.0, 2.0, 2.0], [1, 1, 0, 0])
    2.0
    """
    _, g, r = _window(y_score, y_true, group, reference)
    return _value(lambda: k.error_ratio(g, r, 2))


def regression_mae_ratio(
    y_true: ArrayLike, y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """``MAE_G / MAE_R`` on the rows with a target.

    >>> regression_mae_ratio([1.0, 2.0, 1.0, 2.0], [3.0, 2.0, 2.0, 2.0], [1, 1, 0, 0])
    2.0
    """
    _, g, r = _window(y_score, y_true, group, reference)
    return _value(lambda: k.error_ratio(g, r, 1))


def regression_correlation_difference(
    y_true: ArrayLike, y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """Pearson correlation of prediction and target in the group minus that in the reference.

    >>> regression_correlation_difference([1.0, 2.0, 3.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 3.0, 2.0, 1.0],
    ...                                   [1, 1, 1, 0, 0, 0])
    2.0
    """
    _, g, r = _window(y_score, y_true, group, reference)
    return _value(lambda: k.correlation_difference(g, r))


# --- the evaluator -------------------------------------------------------------------

Statistic = Callable[[Data, Data], float]
Interval = Callable[[Data, Data, float], tuple[float, float]]


def _check_bounds(bounds: Sequence[float]) -> tuple[float, float]:
    lo, hi = (float(b) for b in bounds)
    if not lo <= hi:
        raise ValueError(f"no-disparate-impact bounds must be (low, high) with low <= high, got {bounds!r}")
    return lo, hi


def _sides_support(g: Data, r: Data) -> float:
    return float(min(k.scores(g).size, k.scores(r).size))


def _labeled_support(g: Data, r: Data) -> float:
    if "y_true" not in g:
        return 0.0
    return float(
        min(
            int((~np.isnan(g["y_true"].astype(float))).sum()),
            int((~np.isnan(r["y_true"].astype(float))).sum()),
        )
    )


def _count_interval(method: Callable[..., tuple[Any, Any]], threshold: float) -> Interval:
    def interval(g: Data, r: Data, level: float) -> tuple[float, float]:
        lo, hi = method(*k.success_counts(g, r, threshold), level=level)
        return float(lo), float(hi)

    return interval


def _welch(g: Data, r: Data, level: float) -> tuple[float, float]:
    lo, hi = normal_interval(
        k.average_score_difference(g, r), k.average_score_difference_variance(g, r), level=level
    )
    return float(lo), float(hi)


def _basic_bootstrap(statistic: Statistic, n_resamples: int, seed: int) -> Interval:
    """Row bootstrap (stratified, as the evaluator's) with the basic interval, for unsigned gaps."""

    def interval(g: Data, r: Data, level: float) -> tuple[float, float]:
        value = statistic(g, r)
        lo, hi = bootstrap_interval(statistic, g, r, level=level, n_resamples=n_resamples, seed=seed)
        return basic_interval(value, lo, hi)

    return interval


def _no_interval(g: Data, r: Data, level: float) -> tuple[float, float]:
    return math.nan, math.nan


def _statistics(
    scores: FloatArray, bounds: tuple[float, float], n_resamples: int, seed: int
) -> dict[str, tuple[Statistic, Interval | None]]:
    """Each metric's statistic and analytic interval (None: bootstrap), bound to the window."""
    if scores.size:
        thresholds = np.quantile(scores, QUANTILES)
        grid_thresholds = np.quantile(scores, NO_DI_GRID)
    else:
        thresholds, grid_thresholds = np.full(len(QUANTILES), np.nan), np.full(NO_DI_GRID.size, np.nan)
    window_sorted = np.sort(scores)
    out: dict[str, tuple[Statistic, Interval | None]] = {}
    for q, t in zip(QUANTILES, thresholds.tolist(), strict=True):
        level = round(q * 100)
        out[f"regression_disparate_impact_q{level}"] = (
            partial(k.disparate_impact, threshold=t, q=q),
            _count_interval(katz_log_interval, t),
        )
        out[f"regression_statistical_parity_q{level}"] = (
            partial(k.statistical_parity, threshold=t),
            _count_interval(newcombe_interval, t),
        )
    out["regression_no_disparate_impact_level"] = (
        partial(k.no_disparate_impact_level, thresholds=grid_thresholds, grid=NO_DI_GRID, bounds=bounds),
        _no_interval,
    )
    out["regression_average_score_difference"] = (k.average_score_difference, _welch)
    out["regression_average_score_ratio"] = (k.average_score_ratio, None)
    out["regression_zscore_difference"] = (k.zscore_difference, None)
    # unsigned gaps are biased upward (two samples of one distribution still differ): the basic
    # interval moves against that bias where the percentile interval would double it
    out["regression_max_statistical_parity"] = (
        k.max_statistical_parity,
        _basic_bootstrap(k.max_statistical_parity, n_resamples, seed),
    )

    def sp_auc(g: Data, r: Data) -> float:
        return k.statistical_parity_auc(g, r, window_sorted)

    out["regression_statistical_parity_auc"] = (sp_auc, _basic_bootstrap(sp_auc, n_resamples, seed))
    out["regression_rmse_ratio"] = (lambda g, r: k.error_ratio(g, r, 2), None)
    out["regression_mae_ratio"] = (lambda g, r: k.error_ratio(g, r, 1), None)
    out["regression_correlation_difference"] = (k.correlation_difference, None)
    return out


def evaluate(
    data: Mapping[str, ArrayLike],
    attributes: Sequence[Attribute],
    *,
    metrics: Sequence[str] | None = None,
    confidence: float = 0.95,
    fair_ranges: Mapping[str, Sequence[float | None]] | None = None,
    min_samples: float = 30,
    n_resamples: int = 200,
    seed: int = 0,
    **options: Any,
) -> Report:
    """Regression metrics of every group of ``attributes`` against its reference.

    ``data["y_score"]``: predictions (finite floats); optional ``data["y_true"]``: targets,
    NaN where not yet known. Option ``no_disparate_impact_bounds`` (default (0.8, 1.25)).

    >>> from metrics_core.groups import categorical_attribute
    >>> sex = categorical_attribute("sex", list("ffffmmmmmm"), reference="m")
    >>> y = [0.8, 0.9, 0.2, 0.1, 0.7, 0.9, 0.8, 0.6, 0.3, 0.5]
    >>> report = evaluate({"y_score": y}, [sex], metrics=["regression_disparate_impact_q80"], min_samples=1)
    >>> v = report.get("regression_disparate_impact_q80", "f")
    >>> v.value, v.reference
    (1.5, 'm')
    """
    bounds = _check_bounds(options.pop("no_disparate_impact_bounds", DEFAULT_NO_DI_BOUNDS))
    if options:
        raise TypeError(f"unknown regression option(s): {', '.join(sorted(options))}")
    if data.get("y_score") is None:
        raise ValueError("regression data needs 'y_score' (the predictions)")
    available = [key for key in INPUTS if data.get(key) is not None]
    specs = select_specs(SPECS, metrics, available, "regression")
    scores = as_scores(data["y_score"], "y_score")
    arrays: dict[str, NDArray[np.generic]] = {"y_score": scores}
    if "y_true" in available:
        arrays["y_true"] = _targets(data["y_true"], scores.shape[0])
    check_rows(arrays, attributes)
    statistics = _statistics(scores, bounds, n_resamples, seed)
    group_metrics = []
    for spec in specs:
        statistic, interval = statistics[spec.name]
        support = _labeled_support if "y_true" in spec.requires else _sides_support
        group_metrics.append(GroupMetric(spec, statistic, support, interval))
    report = evaluate_groupwise(
        arrays,
        attributes,
        group_metrics,
        confidence=confidence,
        fair_ranges=fair_ranges,
        min_samples=min_samples,
        n_resamples=n_resamples,
        seed=seed,
    )
    if "y_true" in arrays:
        report = replace(report, label_coverage=label_coverage(attributes, ~np.isnan(arrays["y_true"])))
    return report
