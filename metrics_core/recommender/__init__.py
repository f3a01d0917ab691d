"""Recommender-system bias metrics (holisticai's recommender section), computed from logs.

See :mod:`metrics_core.recommender.evaluate` for the data a window holds and
``docs/families/recommender.md`` for the departures from holisticai.
"""

from metrics_core.recommender.evaluate import INPUTS, evaluate
from metrics_core.recommender.metrics import (
    aggregate_diversity,
    average_recommendation_popularity,
    exposure_entropy,
    exposure_gini_index,
    exposure_kl_divergence,
    exposure_total_variation,
    recommended,
    recommender_avg_f1_ratio,
    recommender_avg_precision_ratio,
    recommender_avg_recall_ratio,
    recommender_mean_score_difference,
)
from metrics_core.recommender.specs import SPECS

__all__ = [
    "INPUTS",
    "SPECS",
    "aggregate_diversity",
    "average_recommendation_popularity",
    "evaluate",
    "exposure_entropy",
    "exposure_gini_index",
    "exposure_kl_divergence",
    "exposure_total_variation",
    "recommended",
    "recommender_avg_f1_ratio",
    "recommender_avg_precision_ratio",
    "recommender_avg_recall_ratio",
    "recommender_mean_score_difference",
]
