"""Clustering: the cluster of each row and, for silhouettes and centres, its feature columns.

Bad rows: a missing cluster (``cluster_missing``), a feature that is not a finite number
(``features_invalid``).
"""

from __future__ import annotations

import numpy as np

from monitor.tasks.base import FamilyModule, GroupwiseOptions, ModelView, Rows, Task

__all__ = ["TASK", "ClusteringOptions"]


class ClusteringOptions(GroupwiseOptions):
    centers: list[list[float]] | None = None  # k x d; default: the per-cluster mean of the features
    max_rows: int = 5000  # silhouettes on a seeded subsample of this many rows above that size
    smoothing: float = 0.5


def clean(rows: Rows, model: ModelView) -> None:
    cols = model.columns
    rows.required_text("cluster", cols.cluster, "cluster_missing")
    if cols.features:
        features = np.column_stack([rows.numeric(c) for c in cols.features])
        rows.reject(~np.asarray(np.isfinite(features).all(axis=1), dtype=bool), "features_invalid")
        rows.inputs["features"] = features


TASK = Task(
    name="clustering",
    families=("clustering",),
    evaluate=FamilyModule("metrics_core.clustering"),
    required=(("cluster",),),
    reads={"cluster": ("cluster",), "features": ("features",)},
    options=ClusteringOptions,
    clean=clean,
)
