"""Binary classification and score ranking (``metrics.md`` sections 2 and 3), from a score table.

A window's rows are counted once into a :class:`~metrics_core.window.tables.ScoreTable`;
:func:`evaluate` computes every metric of :data:`SPECS` for every comparison from it. The
per-group ranking functions (:func:`subgroup_auc`, ...) and the inequality indices work on
raw arrays for one group.
"""

from metrics_core.binary.evaluate import DEFAULT_MIN_SAMPLES, INPUTS, evaluate
from metrics_core.binary.inequality import (
    coefficient_of_variation,
    generalized_entropy_from_counts,
    generalized_entropy_index,
    theil_index,
)
from metrics_core.binary.ranking import (
    bnsp_auc,
    bpsn_auc,
    negative_aeg,
    overall_auc,
    positive_aeg,
    power_mean,
    subgroup_auc,
)
from metrics_core.binary.rates import RATES, Rate
from metrics_core.binary.specs import ROUNDING_BOUNDS, SPECS

__all__ = [
    "DEFAULT_MIN_SAMPLES",
    "INPUTS",
    "RATES",
    "ROUNDING_BOUNDS",
    "SPECS",
    "Rate",
    "bnsp_auc",
    "bpsn_auc",
    "coefficient_of_variation",
    "evaluate",
    "generalized_entropy_from_counts",
    "generalized_entropy_index",
    "negative_aeg",
    "overall_auc",
    "positive_aeg",
    "power_mean",
    "subgroup_auc",
    "theil_index",
]
