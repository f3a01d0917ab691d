"""Regression bias metrics: holisticai's, for a group against its reference.

See :mod:`metrics_core.regression.metrics` for the definitions and
``docs/families/regression.md`` for the departures from holisticai.
"""

from metrics_core.regression.evaluate import INPUTS, evaluate
from metrics_core.regression.kernels import DEFAULT_NO_DI_BOUNDS, NO_DI_GRID, QUANTILES
from metrics_core.regression.metrics import (
    regression_average_score_difference,
    regression_average_score_ratio,
    regression_correlation_difference,
    regression_disparate_impact,
    regression_mae_ratio,
    regression_max_statistical_parity,
    regression_no_disparate_impact_level,
    regression_rmse_ratio,
    regression_statistical_parity,
    regression_statistical_parity_auc,
    regression_zscore_difference,
)
from metrics_core.regression.specs import SPECS

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
