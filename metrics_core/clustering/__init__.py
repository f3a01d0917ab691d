"""Clustering bias metrics (holisticai's clustering section) on a window of clustered rows.

See :mod:`metrics_core.clustering.metrics` for the definitions and
``docs/families/clustering.md`` for the departures from holisticai.
"""

from metrics_core.clustering.evaluate import INPUTS, evaluate
from metrics_core.clustering.metrics import (
    cluster_balance,
    cluster_balance_all_groups,
    cluster_distribution_kl_divergence,
    cluster_distribution_total_variation,
    min_cluster_ratio,
    silhouette_difference,
    social_fairness_ratio,
)
from metrics_core.clustering.specs import SPECS

__all__ = [
    "INPUTS",
    "SPECS",
    "cluster_balance",
    "cluster_balance_all_groups",
    "cluster_distribution_kl_divergence",
    "cluster_distribution_total_variation",
    "evaluate",
    "min_cluster_ratio",
    "silhouette_difference",
    "social_fairness_ratio",
]
