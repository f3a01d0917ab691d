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

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core.core.types import Data, FloatArray
from metrics_core.core.undefined import or_nan
from metrics_core.core.validation import as_scores
from metrics_core.regression import kernels as k
from metrics_core.regression.kernels import DEFAULT_NO_DI_BOUNDS, NO_DI_GRID
from metrics_core.window.pairs import side_masks

__all__ = [
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


def _window(
    y_score: ArrayLike, y_true: ArrayLike | None, group: ArrayLike, reference: ArrayLike | None
) -> tuple[FloatArray, Data, Data]:
    s = as_scores(y_score, "y_score")
    data: dict[str, NDArray[np.generic]] = {"y_score": s}
    if y_true is not None:
        data["y_true"] = k.as_targets(y_true, s.shape[0])
    g, r = side_masks(group, reference, s.shape[0])
    return s, {key: v[g] for key, v in data.items()}, {key: v[r] for key, v in data.items()}


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
    return or_nan(lambda: k.disparate_impact(g, r, float(np.quantile(s, q)), q))


def regression_statistical_parity(
    y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None, *, q: float = 0.5
) -> float:
    """Difference of the shares above the window's q-quantile, ``SR_G - SR_R``.

    >>> y = [0.8, 0.9, 0.2, 0.1, 0.7, 0.9, 0.8, 0.6, 0.3, 0.5]
    >>> round(regression_statistical_parity(y, [1, 1, 1, 1, 0, 0, 0, 0, 0, 0], q=0.7), 6)
    0.166667
    """
    s, g, r = _window(y_score, None, group, reference)
    return or_nan(lambda: k.statistical_parity(g, r, float(np.quantile(s, q))))


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
    lo, hi = k.check_no_di_bounds(bounds)
    return or_nan(lambda: k.no_disparate_impact_level(g, r, np.quantile(s, NO_DI_GRID), NO_DI_GRID, (lo, hi)))


def regression_average_score_difference(
    y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """``mean(ŷ | G) - mean(ŷ | R)``.

    >>> y = [0.8, 0.9, 0.2, 0.1, 0.7, 0.9, 0.8, 0.6, 0.3, 0.5]
    >>> round(regression_average_score_difference(y, [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]), 6)
    -0.133333
    """
    _, g, r = _window(y_score, None, group, reference)
    return or_nan(lambda: k.average_score_difference(g, r))


def regression_average_score_ratio(
    y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """``mean(ŷ | G) / mean(ŷ | R)``; NaN unless the means are non-negative and the reference's positive.

    >>> y = [0.8, 0.9, 0.2, 0.1, 0.7, 0.9, 0.8, 0.6, 0.3, 0.5]
    >>> round(regression_average_score_ratio(y, [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]), 6)
    0.789474
    """
    _, g, r = _window(y_score, None, group, reference)
    return or_nan(lambda: k.average_score_ratio(g, r))


def regression_zscore_difference(
    y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """Difference of means over the pooled standard deviation (Cohen's d of the predictions).

    .. math:: Z = \\frac{\\bar y_G - \\bar y_R}{\\sqrt{(SS_G + SS_R) / (n_G + n_R - 2)}}

    >>> round(regression_zscore_difference([1.0, 2.0, 3.0, 2.0, 3.0, 4.0], [1, 1, 1, 0, 0, 0]), 6)
    -1.0
    """
    _, g, r = _window(y_score, None, group, reference)
    return or_nan(lambda: k.zscore_difference(g, r))


def regression_max_statistical_parity(
    y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """Largest selection-rate gap over all thresholds: ``max_t |P(ŷ >= t | G) - P(ŷ >= t | R)|``.

    This is the two-sample Kolmogorov-Smirnov statistic of the two sides' predictions.

    >>> round(regression_max_statistical_parity([1.0, 2.0, 3.0, 2.0, 3.0, 4.0], [1, 1, 1, 0, 0, 0]), 6)
    0.333333
    """
    _, g, r = _window(y_score, None, group, reference)
    return or_nan(lambda: k.max_statistical_parity(g, r))


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
    return or_nan(lambda: k.statistical_parity_auc(g, r, np.sort(s)))


def regression_rmse_ratio(
    y_true: ArrayLike, y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """``RMSE_G / RMSE_R`` on the rows with a target (NaN targets are skipped).

    >>> regression_rmse_ratio([1.0, 2.0, 1.0, 2.0], [3.0, 2.0, 2.0, 2.0], [1, 1, 0, 0])
    2.0
    """
    _, g, r = _window(y_score, y_true, group, reference)
    return or_nan(lambda: k.error_ratio(g, r, 2))


def regression_mae_ratio(
    y_true: ArrayLike, y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """``MAE_G / MAE_R`` on the rows with a target.

    >>> regression_mae_ratio([1.0, 2.0, 1.0, 2.0], [3.0, 2.0, 2.0, 2.0], [1, 1, 0, 0])
    2.0
    """
    _, g, r = _window(y_score, y_true, group, reference)
    return or_nan(lambda: k.error_ratio(g, r, 1))


def regression_correlation_difference(
    y_true: ArrayLike, y_score: ArrayLike, group: ArrayLike, reference: ArrayLike | None = None
) -> float:
    """Pearson correlation of prediction and target in the group minus that in the reference.

    >>> regression_correlation_difference([1.0, 2.0, 3.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 3.0, 2.0, 1.0],
    ...                                   [1, 1, 1, 0, 0, 0])
    2.0
    """
    _, g, r = _window(y_score, y_true, group, reference)
    return or_nan(lambda: k.correlation_difference(g, r))
