"""Evaluate the recommender metrics (holisticai's recommender section) on a window of logs.

A monitor reads logs, so the input is one row per (user, recommended item) event, not a
dense user x item matrix: ``user``, ``item``, ``rank`` (1-based position in the user's
list) and/or ``y_score``, ``y_true`` (relevance 0/1, NaN when unknown), optionally
``n_relevant`` (the user's total number of relevant items) and ``item_popularity``.
Groups are *user* groups: the attribute columns are per row and must be constant per user.

Binarisation (which logged rows count as recommendations): the top ``k`` of each user by
``rank`` (or by ``y_score`` when there is no rank; ties by item id), or ``y_score >=
threshold`` when a threshold is given, or every logged row with ``k=None``.

Group metrics (G vs its reference R, difference = f(G) - f(R), ratio = f(G) / f(R)):
mean score difference, exposure total variation and KL divergence (item distributions of
the recommendations), average precision / recall / F1 ratios (per-user rates averaged
over users). Model-level, informational: aggregate diversity, Gini index of item exposure,
exposure entropy, average recommendation popularity. Formulas follow holisticai's code;
every departure is listed in ``docs/families/recommender.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core.core.results import Report
from metrics_core.core.spec import MetricSpec
from metrics_core.engine.adjust import Adjustment
from metrics_core.engine.groupwise import evaluate_groupwise
from metrics_core.engine.select import FairRangeOverrides, fair_ranges_of, select_specs
from metrics_core.recommender.metrics import as_floats, as_relevance, check_catalogue, recommended
from metrics_core.recommender.specs import BINARISED, SPECS, RecommenderWindow
from metrics_core.stats.contrasts import Method
from metrics_core.stats.judge import DEFAULT_MIN_SAMPLES
from metrics_core.window.groups import Attribute
from metrics_core.window.pairs import check_attribute_rows, codes_of

__all__ = ["INPUTS", "evaluate"]

INPUTS: tuple[str, ...] = ("user", "item", "rank", "y_score", "y_true", "n_relevant", "item_popularity")
_RATE_RATIOS = {"recommender_avg_precision_ratio", "recommender_avg_recall_ratio", "recommender_avg_f1_ratio"}


def _binarisable(keys: frozenset[str], k: int | None, threshold: float | None) -> bool:
    if threshold is not None:
        return "y_score" in keys
    return k is None or "rank" in keys or "y_score" in keys


def _columns(
    data: Mapping[str, ArrayLike], specs: Sequence[MetricSpec], *, k: int | None, threshold: float | None
) -> dict[str, NDArray[np.generic]]:
    names = {s.name for s in specs}
    user, n_users = codes_of(data["user"], "user")
    n = user.size
    cols: dict[str, NDArray[np.generic]] = {"user": user}
    if names & BINARISED:
        cols["item"] = codes_of(data["item"], "item")[0]
        if cols["item"].size != n:
            raise ValueError(f"item has {cols['item'].size} rows, expected {n} like user")
        cols["_rec"] = recommended(
            data["user"],
            data["item"],
            rank=data.get("rank"),
            y_score=data.get("y_score"),
            k=k,
            threshold=threshold,
        )
    if "recommender_mean_score_difference" in names:
        cols["y_score"] = as_floats(data["y_score"], "y_score", n, nan_ok=True)
    if names & _RATE_RATIOS:
        cols["y_true"] = y = as_relevance(data["y_true"], n)
        if "n_relevant" in data:
            cols["n_relevant"] = n_rel = as_floats(data["n_relevant"], "n_relevant", n, nan_ok=False)
            if (n_rel < 0).any():
                raise ValueError("n_relevant must be >= 0")
            per_user = np.zeros(n_users)
            np.maximum.at(per_user, user, n_rel)
            hits = np.bincount(user, weights=np.asarray(cols["_rec"]) & (y == 1), minlength=n_users)
            if (hits > per_user).any():
                raise ValueError("n_relevant is below the number of relevant items recommended to some user")
    if "average_recommendation_popularity" in names and "item_popularity" in data:
        cols["item_popularity"] = pop = as_floats(data["item_popularity"], "item_popularity", n, nan_ok=False)
        if (pop < 0).any():
            raise ValueError("item_popularity must be >= 0")
    return cols


def evaluate(
    data: Mapping[str, ArrayLike],
    attributes: Sequence[Attribute],
    *,
    metrics: Sequence[str] | None = None,
    confidence: float = 0.95,
    fair_ranges: FairRangeOverrides | None = None,
    min_samples: float = DEFAULT_MIN_SAMPLES,
    n_resamples: int = 200,
    seed: int = 0,
    adjust: Adjustment = "none",
    family_size: int | None = None,
    method: Method = "fixed",
    k: int | None = 10,
    threshold: float | None = None,
    smoothing: float = 0.5,
    n_items: int | None = None,
) -> Report:
    """Judge the recommender metrics for every user group of ``attributes`` on a window of logs.

    ``data`` holds row-aligned columns (see :data:`INPUTS`); ``metrics=None`` selects every
    metric the columns can feed, a named metric whose inputs are missing raises
    ``ValueError``. Options: ``k`` / ``threshold`` (binarisation, see :func:`recommended`),
    ``smoothing`` (pseudo-count of the exposure KL divergence), ``n_items`` (catalogue size
    for aggregate diversity and the Gini index). Intervals: percentile bootstrap with
    *users* resampled within each side (``n_resamples``, ``seed``); for the exposure
    distances, whose plug-in value is biased upward, the lower end is a held-out witness
    bound instead (:mod:`metrics_core.recommender.witness`). Support, gated by
    ``min_samples``: users with a defined value on the smaller side; for the exposure
    distances, recommendations per recommended item of the window on the smaller side.

    ``adjust`` / ``family_size``: multiplicity adjustment (:mod:`metrics_core.engine.adjust`);
    ``method`` is accepted for one API across families - this family's intervals are bootstraps,
    which ``method="anytime"`` does not change.
    """
    if "user" not in data:
        raise ValueError("recommender data needs a 'user' column")
    keys = frozenset(data)
    specs = select_specs(SPECS, metrics, available=keys, family="recommender")
    if not _binarisable(keys, k, threshold):
        if metrics is None:
            specs = [s for s in specs if s.name not in BINARISED]
        elif unbinarised := [s.name for s in specs if s.name in BINARISED]:
            raise ValueError(
                f"metric {unbinarised[0]!r}: binarisation needs 'rank' or 'y_score' for top-k, 'y_score' for "
                "a threshold; pass k=None to count every logged row"
            )
    if smoothing < 0:
        raise ValueError(f"smoothing must be >= 0, got {smoothing!r}")
    cols = _columns(data, specs, k=k, threshold=threshold)
    n = cols["user"].size
    check_attribute_rows(attributes, n)
    if n_items is not None:
        check_catalogue(data["item"], n_items)
    support_items = np.zeros(0, dtype=bool)
    if "_rec" in cols:
        item = np.asarray(cols["item"], np.int64)
        support_items = (
            np.bincount(item[np.asarray(cols["_rec"], bool)], minlength=int(item.max(initial=-1)) + 1) > 0
        )
    return evaluate_groupwise(
        RecommenderWindow(support_items, smoothing, n_items),
        cols,
        attributes,
        specs,
        fair_ranges=fair_ranges_of(SPECS, fair_ranges, family="recommender"),
        confidence=confidence,
        min_samples=min_samples,
        n_resamples=n_resamples,
        seed=seed,
        adjust=adjust,
        family_size=family_size,
    )
