"""Recommenders: one row per (user, recommended item), with its rank and/or score and its relevance.

Groups are attributes of the user. Bad rows: a missing user or item (``user_missing``,
``item_missing``), a rank that is not a number >= 1 (``rank_invalid``), a score that is not a
finite number (``score_invalid``), a relevance other than 0/1 (``label_invalid``).
"""

from __future__ import annotations

import numpy as np

from monitor.tasks.base import FamilyModule, GroupwiseOptions, ModelView, Rows, Task

__all__ = ["TASK", "RecommenderOptions"]


class RecommenderOptions(GroupwiseOptions):
    k: int | None = 10  # an item is recommended when its rank is <= k ...
    threshold: float | None = None  # ... or its score >= threshold
    smoothing: float = 0.5  # pseudo-count of the exposure KL divergence
    n_items: int | None = None  # catalogue size, for aggregate diversity and the Gini index


def clean(rows: Rows, model: ModelView) -> None:
    cols = model.columns
    rows.required_text("user", cols.user, "user_missing")
    rows.required_text("item", cols.item, "item_missing")
    if cols.rank:
        rank = rows.numeric(cols.rank)
        rows.reject(~np.isfinite(rank) | (rank < 1), "rank_invalid")
        rows.inputs["rank"] = rank
    if cols.score:
        score = rows.numeric(cols.score)
        rows.reject(~np.isfinite(score), "score_invalid")
        rows.inputs["y_score"] = score
    if cols.label:
        relevance = rows.numeric(cols.label)
        rows.reject(~np.isnan(relevance) & ~np.isin(relevance, (0.0, 1.0)), "label_invalid")
        rows.inputs["y_true"] = relevance


TASK = Task(
    name="recommender",
    families=("recommender",),
    evaluate=FamilyModule("metrics_core.recommender"),
    required=(("user",), ("item",), ("rank", "score")),
    reads={
        "user": ("user",),
        "item": ("item",),
        "rank": ("rank",),
        "score": ("y_score",),
        "label": ("y_true",),
    },
    optional=("score", "label"),
    options=RecommenderOptions,
    clean=clean,
)
