"""Multiclass bias metrics: holisticai's four distances, per group and over all pairs of groups.

See :mod:`metrics_core.multiclass.metrics` for the definitions and ``docs/families/multiclass.md``
for the departures from holisticai.
"""

from metrics_core.multiclass.evaluate import INPUTS, evaluate
from metrics_core.multiclass.metrics import (
    MetricName,
    multiclass_all_pairs,
    multiclass_average_odds,
    multiclass_equality_of_opportunity,
    multiclass_statistical_parity,
    multiclass_true_positive_difference,
)
from metrics_core.multiclass.specs import SPECS

__all__ = [
    "INPUTS",
    "SPECS",
    "MetricName",
    "evaluate",
    "multiclass_all_pairs",
    "multiclass_average_odds",
    "multiclass_equality_of_opportunity",
    "multiclass_statistical_parity",
    "multiclass_true_positive_difference",
]
