"""The regression metrics (see :mod:`metrics_core.regression.metrics`): facts beside computation.

Each statistic reads the window's constants from a :class:`RegressionWindow` (the
quantile thresholds of the window's predictions) and the two sides' rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from metrics_core.core.spec import FairRange, Input, IntervalMethod, MetricSpec
from metrics_core.core.types import Data, FloatArray
from metrics_core.engine.cells import Cells, cell_bootstrap
from metrics_core.engine.groupwise import Resampling
from metrics_core.regression import kernels as k
from metrics_core.regression.kernels import NO_DI_GRID, QUANTILES
from metrics_core.stats.contrasts import Contrast, Method, contrast_interval
from metrics_core.stats.intervals import normal_interval
from metrics_core.stats.moments import (
    cohens_d_interval,
    correlation_difference_interval,
    fieller_interval,
    mean_and_variance,
)

__all__ = ["SPECS", "RegressionWindow"]

_RATIO = FairRange(0.8, 1.25)
_HOLISTIC = "holisticai documentation (fair area)"
_SYMMETRIC = (
    "1.25 = 1/0.8 keeps the range symmetric under swapping G and R (holisticai documentation: [0.8, 1.2])"
)
_S: frozenset[Input] = frozenset({"y_score"})
_ST: frozenset[Input] = frozenset({"y_score", "y_true"})

Statistic = Callable[["RegressionWindow", Data, Data], float]
Interval = Callable[["RegressionWindow", Data, Data, float, Resampling], tuple[float, float]]


@dataclass(frozen=True)
class RegressionWindow:
    """Constants of one window's predictions: the quantile thresholds, computed once."""

    sorted_scores: FloatArray
    thresholds: dict[float, float]  # quantile level -> threshold (NaN for an empty window)
    grid_thresholds: FloatArray  # thresholds of NO_DI_GRID
    no_di_bounds: tuple[float, float]
    method: Method = "fixed"  # the count-based intervals: fixed-sample, or anytime-valid sequences
    cell_starts: FloatArray = field(default_factory=lambda: np.zeros(0))  # the rank statistics' cells
    exact_cells: bool = True  # each cell is one prediction (else a bin between window quantiles)
    cell_reach: FloatArray = field(default_factory=lambda: np.zeros(0))  # quantile level each start reaches

    @classmethod
    def of(
        cls, scores: FloatArray, no_di_bounds: tuple[float, float], method: Method = "fixed"
    ) -> RegressionWindow:
        if scores.size:
            thresholds = np.quantile(scores, QUANTILES)
            grid = np.quantile(scores, NO_DI_GRID)
        else:
            thresholds, grid = np.full(len(QUANTILES), np.nan), np.full(NO_DI_GRID.size, np.nan)
        by_level = dict(zip(QUANTILES, thresholds.tolist(), strict=True))
        ordered = np.sort(scores)
        starts, exact = k.cell_starts(ordered)
        reach = k.quantile_reach(starts, ordered)
        return cls(ordered, by_level, grid, no_di_bounds, method, starts, exact, reach)

    def cells(self, g: Data, r: Data, statistic: Callable[[FloatArray, FloatArray], float]) -> Cells:
        return Cells(
            k.cell_counts(k.scores(g), self.cell_starts),
            k.cell_counts(k.scores(r), self.cell_starts),
            statistic,
        )


def _rows(w: RegressionWindow, g: Data, r: Data) -> float:
    return float(min(k.scores(g).size, k.scores(r).size))


def _labeled_rows(w: RegressionWindow, g: Data, r: Data) -> float:
    if "y_true" not in g:
        return 0.0
    return float(min(int((~np.isnan(np.asarray(d["y_true"], dtype=float))).sum()) for d in (g, r)))


def _counts_ci(contrast: Contrast, q: float) -> Interval:
    """An interval of the success counts above the window's q-quantile (a difference or a ratio of rates)."""

    def ci(
        w: RegressionWindow, g: Data, r: Data, level: float, resampling: Resampling
    ) -> tuple[float, float]:
        counts = k.success_counts(g, r, w.thresholds[q])
        lo, hi = contrast_interval(contrast, w.method, *counts, level=level)
        return float(lo), float(hi)

    return ci


def _fieller(values: Callable[[Data], FloatArray], *, root: bool = False) -> Interval:
    """Fieller's interval of the ratio of the two sides' means of ``values`` (of its square root)."""

    def ci(
        w: RegressionWindow, g: Data, r: Data, level: float, resampling: Resampling
    ) -> tuple[float, float]:
        m_g, v_g, _ = mean_and_variance(values(g))
        m_r, v_r, _ = mean_and_variance(values(r))
        lo, hi = fieller_interval(m_g, v_g, m_r, v_r, level=level, lower_bound=0.0)
        return (math.sqrt(lo), math.sqrt(hi)) if root else (lo, hi)

    return ci


def _cohens_d(
    w: RegressionWindow, g: Data, r: Data, level: float, resampling: Resampling
) -> tuple[float, float]:
    return cohens_d_interval(k.zscore_difference(g, r), k.scores(g).size, k.scores(r).size, level=level)


def _zou(w: RegressionWindow, g: Data, r: Data, level: float, resampling: Resampling) -> tuple[float, float]:
    return correlation_difference_interval(*k.correlations(g, r), level=level)


def _max_gap_cells(w: RegressionWindow, g: Data, r: Data) -> Cells:
    cells = w.cells(g, r, k.max_statistical_parity_of_counts)
    if w.exact_cells:
        return cells
    slack = k.max_gap_slack(cells.group, cells.reference)
    return replace(cells, estimate=k.max_statistical_parity(g, r), slack=slack)


def _area_cells(w: RegressionWindow, g: Data, r: Data) -> Cells:
    def statistic(c_g: FloatArray, c_r: FloatArray) -> float:
        return k.statistical_parity_auc_of_counts(c_g, c_r, w.cell_reach)

    cells = w.cells(g, r, statistic)
    if w.exact_cells:
        return cells
    widths = np.diff(np.append(w.cell_reach, 1.0))
    slack = k.area_slack(cells.group, cells.reference, widths)
    return replace(cells, estimate=_sp_auc(w, g, r), slack=slack)


def _welch(
    w: RegressionWindow, g: Data, r: Data, level: float, resampling: Resampling
) -> tuple[float, float]:
    lo, hi = normal_interval(
        k.average_score_difference(g, r), k.average_score_difference_variance(g, r), level=level
    )
    return float(lo), float(hi)


def _no_interval(
    w: RegressionWindow, g: Data, r: Data, level: float, resampling: Resampling
) -> tuple[float, float]:
    return math.nan, math.nan


def _spec(
    statistic: Statistic,
    *,
    name: str,
    requires: frozenset[Input],
    ideal: float | None,
    fair_range: FairRange | None,
    source: str,
    interval: IntervalMethod,
    meaning: str,
    formula: str,
    ci: Interval | None = None,
) -> MetricSpec:
    labeled = "y_true" in requires
    return MetricSpec(
        name=name,
        family="regression",
        requires=requires,
        ideal=ideal,
        fair_range=fair_range,
        source=source,
        meaning=meaning,
        formula=formula,
        interval=interval,
        support=("labeled group rows", "labeled reference rows")
        if labeled
        else ("group rows", "reference rows"),
        statistic=statistic,
        ci=ci,
        count_support=_labeled_rows if labeled else _rows,
    )


def _quantile_specs(q: float) -> list[MetricSpec]:
    level = round(q * 100)
    sr = f"SR = P(ŷ >= Q({q:g})), Q = quantile function of the window's predictions"

    def disparate_impact(w: RegressionWindow, g: Data, r: Data) -> float:
        return k.disparate_impact(g, r, threshold=w.thresholds[q], q=q)

    def statistical_parity(w: RegressionWindow, g: Data, r: Data) -> float:
        return k.statistical_parity(g, r, threshold=w.thresholds[q])

    return [
        _spec(
            disparate_impact,
            name=f"regression_disparate_impact_q{level}",
            requires=_S,
            ideal=1.0,
            fair_range=_RATIO,
            source=f"four-fifths rule (US EEOC Uniform Guidelines, 1978); {_SYMMETRIC}",
            interval="scas",
            meaning=f"below 1: the group's predictions reach the window's {q:g}-quantile less often than its reference's",
            formula=f"SR_G / SR_R, {sr}",
            ci=_counts_ci("ratio", q),
        ),
        _spec(
            statistical_parity,
            name=f"regression_statistical_parity_q{level}",
            requires=_S,
            ideal=0.0,
            fair_range=FairRange(-0.1, 0.1),
            source="holisticai documentation (fair area of statistical parity)",
            interval="scas",
            meaning=f"negative: the group's predictions reach the window's {q:g}-quantile less often than its reference's",
            formula=f"SR_G - SR_R, {sr}",
            ci=_counts_ci("difference", q),
        ),
    ]


def _no_di_level(w: RegressionWindow, g: Data, r: Data) -> float:
    return k.no_disparate_impact_level(g, r, w.grid_thresholds, NO_DI_GRID, w.no_di_bounds)


def _sp_auc(w: RegressionWindow, g: Data, r: Data) -> float:
    return k.statistical_parity_auc(g, r, w.sorted_scores)


def _rows_of(kernel: Callable[[Data, Data], float]) -> Statistic:
    """A kernel of the two sides' rows that needs no window constant."""

    def statistic(w: RegressionWindow, g: Data, r: Data) -> float:
        return kernel(g, r)

    return statistic


#: Registry entries of the family (all group level).
SPECS: list[MetricSpec] = [
    *(spec for q in QUANTILES for spec in _quantile_specs(q)),
    _spec(
        _no_di_level,
        name="regression_no_disparate_impact_level",
        requires=_S,
        ideal=1.0,
        fair_range=None,
        source="informational (metrics.md section 4)",
        interval="none",
        meaning="the highest quantile level at which the group's disparate impact is within [0.8, 1.25]; "
        "1: none even for the top predictions",
        formula="max {q in 1.00, 0.99, ..., 0.00 : 0.8 <= SR_G(Q(q)) / SR_R(Q(q)) <= 1.25}",
        ci=_no_interval,
    ),
    _spec(
        _rows_of(k.average_score_difference),
        name="regression_average_score_difference",
        requires=_S,
        ideal=0.0,
        fair_range=None,
        source="informational by default: holisticai's documentation gives [-0.1, 0.1], which presumes scores on "
        "a unit scale (its code: 'scale is relative to task'); configure a range in the prediction's units",
        interval="normal",
        meaning="negative: the group's mean prediction is below its reference's",
        formula="mean(ŷ | G) - mean(ŷ | R)",
        ci=_welch,
    ),
    _spec(
        _rows_of(k.average_score_ratio),
        name="regression_average_score_ratio",
        requires=_S,
        ideal=1.0,
        fair_range=_RATIO,
        source=_HOLISTIC,
        interval="fieller",
        meaning="below 1: the group's mean prediction is below its reference's (defined for non-negative predictions)",
        formula="mean(ŷ | G) / mean(ŷ | R)",
        ci=_fieller(k.scores),
    ),
    _spec(
        _rows_of(k.zscore_difference),
        name="regression_zscore_difference",
        requires=_S,
        ideal=0.0,
        fair_range=FairRange(-0.2, 0.2),
        source="Cohen (1988): 0.2 is a small effect; the statistic is Cohen's d of the predictions "
        "(holisticai documentation: [-0.1, 0.1])",
        interval="normal",
        meaning="negative: the group's predictions are lower, in pooled standard deviations",
        formula="(mean_G - mean_R) / sqrt((SS_G + SS_R) / (n_G + n_R - 2))",
        ci=_cohens_d,
    ),
    # unsigned gaps are biased upward (two samples of one distribution still differ): the basic
    # interval moves against that bias where the percentile interval would double it
    _spec(
        _rows_of(k.max_statistical_parity),
        name="regression_max_statistical_parity",
        requires=_S,
        ideal=0.0,
        fair_range=FairRange(0.0, 0.1),
        source="holisticai documentation (fair area; the value is an absolute gap)",
        interval="bootstrap",
        meaning="largest gap between the shares of the group and of its reference above a common threshold (unsigned)",
        formula="max over thresholds t of abs(P(ŷ >= t | G) - P(ŷ >= t | R))",
        ci=cell_bootstrap(_max_gap_cells, bounds=(0.0, 1.0)),
    ),
    _spec(
        _sp_auc,
        name="regression_statistical_parity_auc",
        requires=_S,
        ideal=0.0,
        fair_range=FairRange(0.0, 0.075),
        source=_HOLISTIC,
        interval="bootstrap",
        meaning="mean over the window's quantile levels of the absolute selection-rate gap (unsigned)",
        formula="integral over q in [0, 1] of abs(SR_G(Q(q)) - SR_R(Q(q))) dq",
        ci=cell_bootstrap(_area_cells, bounds=(0.0, 1.0)),
    ),
    _spec(
        _rows_of(lambda g, r: k.error_ratio(g, r, 2)),
        name="regression_rmse_ratio",
        requires=_ST,
        ideal=1.0,
        fair_range=_RATIO,
        source=f"holisticai documentation; {_SYMMETRIC}",
        interval="fieller",
        meaning="above 1: the group's predictions are further from the target than its reference's",
        formula="RMSE_G / RMSE_R on labeled rows",
        ci=_fieller(lambda d: k.errors(d, 2), root=True),
    ),
    _spec(
        _rows_of(lambda g, r: k.error_ratio(g, r, 1)),
        name="regression_mae_ratio",
        requires=_ST,
        ideal=1.0,
        fair_range=_RATIO,
        source=f"holisticai documentation; {_SYMMETRIC}",
        interval="fieller",
        meaning="above 1: the group's predictions are further from the target than its reference's",
        formula="MAE_G / MAE_R on labeled rows",
        ci=_fieller(lambda d: k.errors(d, 1)),
    ),
    _spec(
        _rows_of(k.correlation_difference),
        name="regression_correlation_difference",
        requires=_ST,
        ideal=0.0,
        fair_range=FairRange(-0.1, 0.1),
        source=_HOLISTIC,
        interval="zou",
        meaning="negative: the predictions track the target less closely in the group than in its reference",
        formula="corr(ŷ, y | G) - corr(ŷ, y | R), Pearson, labeled rows",
        ci=_zou,
    ),
]
