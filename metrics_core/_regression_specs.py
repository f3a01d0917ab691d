"""Registry entries of the regression family (see :mod:`metrics_core.regression`)."""

from __future__ import annotations

from metrics_core._spec import FairRange, IntervalMethod, MetricSpec

__all__ = ["QUANTILES", "SPECS"]

#: The quantile levels of the quantile metrics, one metric name each (``..._q50``).
QUANTILES: tuple[float, ...] = (0.5, 0.8, 0.9)

_RATIO = FairRange(0.8, 1.25)
_HOLISTIC = "holisticai documentation (fair area)"
_SYMMETRIC = (
    "1.25 = 1/0.8 keeps the range symmetric under swapping G and R (holisticai documentation: [0.8, 1.2])"
)
_SIDES = ("group rows", "reference rows")
_LABELED = ("labeled group rows", "labeled reference rows")
_S: frozenset[str] = frozenset({"y_score"})
_ST: frozenset[str] = frozenset({"y_score", "y_true"})


def _spec(
    name: str,
    requires: frozenset[str],
    ideal: float | None,
    fair: FairRange | None,
    source: str,
    interval: IntervalMethod,
    meaning: str,
    formula: str,
) -> MetricSpec:
    support = _LABELED if "y_true" in requires else _SIDES
    return MetricSpec(
        name, "regression", "group", requires, ideal, fair, source, interval, meaning, formula, "groupwise",
        support=support,
    )  # fmt: skip


def _quantile_specs() -> list[MetricSpec]:
    out = []
    for q in QUANTILES:
        sr = f"SR = P(ŷ >= Q({q:g})), Q = quantile function of the window's predictions"
        out.append(
            _spec(
                f"regression_disparate_impact_q{round(q * 100)}",
                _S,
                1.0,
                _RATIO,
                f"four-fifths rule (US EEOC Uniform Guidelines, 1978); {_SYMMETRIC}",
                "katz_log",
                f"below 1: the group's predictions reach the window's {q:g}-quantile less often than its reference's",
                f"SR_G / SR_R, {sr}",
            )
        )
        out.append(
            _spec(
                f"regression_statistical_parity_q{round(q * 100)}",
                _S,
                0.0,
                FairRange(-0.1, 0.1),
                "holisticai documentation (fair area of statistical parity)",
                "newcombe",
                f"negative: the group's predictions reach the window's {q:g}-quantile less often than its reference's",
                f"SR_G - SR_R, {sr}",
            )
        )
    return out


#: Registry entries of the family (all group level).
SPECS: list[MetricSpec] = [
    *_quantile_specs(),
    _spec(
        "regression_no_disparate_impact_level", _S, 1.0, None, "informational (metrics.md section 4)", "none",
        "the highest quantile level at which the group's disparate impact is within [0.8, 1.25]; "
        "1: none even for the top predictions",
        "max {q in 1.00, 0.99, ..., 0.00 : 0.8 <= SR_G(Q(q)) / SR_R(Q(q)) <= 1.25}",
    ),
    _spec(
        "regression_average_score_difference", _S, 0.0, None,
        "informational by default: holisticai's documentation gives [-0.1, 0.1], which presumes scores on a "
        "unit scale (its code: 'scale is relative to task'); configure a range in the prediction's units",
        "normal", "negative: the group's mean prediction is below its reference's", "mean(ŷ | G) - mean(ŷ | R)",
    ),
    _spec(
        "regression_average_score_ratio", _S, 1.0, _RATIO, _HOLISTIC, "bootstrap",
        "below 1: the group's mean prediction is below its reference's (defined for non-negative predictions)",
        "mean(ŷ | G) / mean(ŷ | R)",
    ),
    _spec(
        "regression_zscore_difference", _S, 0.0, FairRange(-0.2, 0.2),
        "Cohen (1988): 0.2 is a small effect; the statistic is Cohen's d of the predictions "
        "(holisticai documentation: [-0.1, 0.1])",
        "bootstrap", "negative: the group's predictions are lower, in pooled standard deviations",
        "(mean_G - mean_R) / sqrt((SS_G + SS_R) / (n_G + n_R - 2))",
    ),
    _spec(
        "regression_max_statistical_parity", _S, 0.0, FairRange(0.0, 0.1),
        "holisticai documentation (fair area; the value is an absolute gap)", "bootstrap",
        "largest gap between the shares of the group and of its reference above a common threshold (unsigned)",
        "max over thresholds t of abs(P(ŷ >= t | G) - P(ŷ >= t | R))",
    ),
    _spec(
        "regression_statistical_parity_auc", _S, 0.0, FairRange(0.0, 0.075), _HOLISTIC, "bootstrap",
        "mean over the window's quantile levels of the absolute selection-rate gap (unsigned)",
        "integral over q in [0, 1] of abs(SR_G(Q(q)) - SR_R(Q(q))) dq",
    ),
    _spec(
        "regression_rmse_ratio", _ST, 1.0, _RATIO, f"holisticai documentation; {_SYMMETRIC}", "bootstrap",
        "above 1: the group's predictions are further from the target than its reference's",
        "RMSE_G / RMSE_R on labeled rows",
    ),
    _spec(
        "regression_mae_ratio", _ST, 1.0, _RATIO, f"holisticai documentation; {_SYMMETRIC}", "bootstrap",
        "above 1: the group's predictions are further from the target than its reference's",
        "MAE_G / MAE_R on labeled rows",
    ),
    _spec(
        "regression_correlation_difference", _ST, 0.0, FairRange(-0.1, 0.1), _HOLISTIC, "bootstrap",
        "negative: the predictions track the target less closely in the group than in its reference",
        "corr(ŷ, y | G) - corr(ŷ, y | R), Pearson, labeled rows",
    ),
]  # fmt: skip
