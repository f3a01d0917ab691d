"""Recommender-system bias metrics (holisticai's recommender section), computed from logs.

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

import functools
import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core import _recommender as K
from metrics_core._distributions import (
    check_attribute_rows,
    codes_of,
    kl_divergence_counts,
    total_variation_counts,
)
from metrics_core._recommender_metrics import (
    _catalogue,
    _floats,
    _relevance,
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
from metrics_core._results import Report
from metrics_core._spec import FairRange, MetricSpec, groupwise_spec
from metrics_core.groups import Attribute
from metrics_core.groupwise import Data, GroupMetric, GroupPair, ModelMetric, evaluate_groupwise

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

INPUTS: tuple[str, ...] = ("user", "item", "rank", "y_score", "y_true", "n_relevant", "item_popularity")

BoolArray = NDArray[np.bool_]
FloatArray = NDArray[np.float64]

_HOLISTIC = "holisticai documentation (fair area)"
_FOUR_FIFTHS = "four-fifths rule applied to a ratio, 1.25 = 1/0.8 keeps it symmetric (holisticai documentation prints [0.8, 1.2])"
_TV_SOURCE = "fairwatch choice (metrics.md section 4): holisticai lists only the value range [0, 1]"
_KL_SOURCE = (
    "fairwatch choice: holisticai lists only [0, inf]; by Pinsker's inequality TV <= sqrt(KL/2), "
    "so KL <= 0.02 keeps the total variation within its 0.1 bound"
)
_INFO = "informational (metrics.md section 4): no meaningful fair range"
_ITEMS = frozenset({"user", "item"})


_spec = functools.partial(groupwise_spec, "recommender")


SPECS: list[MetricSpec] = [
    _spec(
        "recommender_mean_score_difference",
        "group",
        frozenset({"user", "y_score"}),
        0.0,
        FairRange(-0.1, 0.1),
        _HOLISTIC + "; assumes scores on a [0, 1] scale",
        "negative: the group's users receive lower recommender scores than the reference's",
        "mean(y_score | G) - mean(y_score | R), over logged rows with a score (holisticai mad_score)",
    ),
    _spec(
        "exposure_total_variation",
        "group",
        _ITEMS,
        0.0,
        FairRange(0.0, 0.1),
        _TV_SOURCE,
        "the share of the group's recommendations that would have to move to other items to match the reference's",
        "0.5 * sum_i |e_G(i) - e_R(i)|, e = distribution over items of the recommendations",
    ),
    _spec(
        "exposure_kl_divergence",
        "group",
        _ITEMS,
        0.0,
        FairRange(0.0, 0.02),
        _KL_SOURCE,
        "how unlike the reference's item exposure the group's is (0: same distribution)",
        "sum_i e_G(i) ln(e_G(i) / e_R(i)), counts smoothed by 0.5 per recommended item of the window",
    ),
    _spec(
        "recommender_avg_precision_ratio",
        "group",
        frozenset({"user", "item", "y_true"}),
        1.0,
        FairRange(0.8, 1.25),
        _FOUR_FIFTHS,
        "below 1: a smaller share of the group's recommendations are relevant than of the reference's",
        "mean over G's users of hits/recommended, over the same mean for R",
    ),
    _spec(
        "recommender_avg_recall_ratio",
        "group",
        frozenset({"user", "item", "y_true"}),
        1.0,
        FairRange(0.8, 1.25),
        _FOUR_FIFTHS,
        "below 1: the group's users find a smaller share of their relevant items than the reference's",
        "mean over G's users of hits/relevant, over the same mean for R",
    ),
    _spec(
        "recommender_avg_f1_ratio",
        "group",
        frozenset({"user", "item", "y_true"}),
        1.0,
        FairRange(0.8, 1.25),
        _FOUR_FIFTHS,
        "below 1: recommendations serve the group's users worse (precision and recall together)",
        "mean over G's users of 2 hits/(recommended + relevant), over the same mean for R",
    ),
    _spec(
        "aggregate_diversity",
        "model",
        _ITEMS,
        1.0,
        None,
        _INFO,
        "share of the catalogue recommended to at least one user in the window",
        "|items recommended| / |items| (catalogue: n_items, else the items in the log)",
    ),
    _spec(
        "exposure_gini_index",
        "model",
        _ITEMS,
        0.0,
        None,
        _INFO,
        "inequality of item exposure: 0 every item recommended equally often, 1 one item takes all",
        "sum_i (2i - n - 1) f_(i) / (n - 1), f sorted exposure shares of the n catalogue items",
    ),
    _spec(
        "exposure_entropy",
        "model",
        _ITEMS,
        None,
        None,
        _INFO,
        "spread of the recommendations over items (natural log; at most ln(number of items))",
        "-sum_i e(i) ln e(i), e = distribution over items of the recommendations",
    ),
    _spec(
        "average_recommendation_popularity",
        "model",
        _ITEMS,
        None,
        None,
        _INFO,
        "how popular the recommended items are: mean over users of their items' popularity",
        "mean over users of mean_{i in L_u} pop(i), pop = number of users i was recommended to",
    ),
]
_BY_NAME = {s.name: s for s in SPECS}
_BINARISED = {s.name for s in SPECS} - {"recommender_mean_score_difference"}
_RATE_OF = {
    "recommender_avg_precision_ratio": "precision",
    "recommender_avg_recall_ratio": "recall",
    "recommender_avg_f1_ratio": "f1",
}


# --- evaluation ---------------------------------------------------------------------------------


def _binarisable(keys: frozenset[str], k: int | None, threshold: float | None) -> bool:
    if threshold is not None:
        return "y_score" in keys
    return k is None or "rank" in keys or "y_score" in keys


def _select(metrics: Sequence[str] | None, keys: frozenset[str], binarisable: bool) -> list[MetricSpec]:
    if isinstance(metrics, str):
        raise TypeError(f"metrics must be a sequence of names, got the string {metrics!r}")
    if metrics is None:  # everything the data can feed
        return [s for s in SPECS if s.requires <= keys and (binarisable or s.name not in _BINARISED)]
    out = []
    for name in dict.fromkeys(metrics):  # in order, once each
        if name not in _BY_NAME:
            raise ValueError(f"unknown recommender metric {name!r}; known: {', '.join(_BY_NAME)}")
        spec = _BY_NAME[name]
        if missing := spec.requires - keys:
            raise ValueError(f"metric {name!r} needs data key(s) {sorted(missing)}")
        if name in _BINARISED and not binarisable:
            raise ValueError(
                f"metric {name!r}: binarisation needs 'rank' or 'y_score' for top-k, 'y_score' for a "
                "threshold; pass k=None to count every logged row"
            )
        out.append(spec)
    return out


def _columns(
    data: Mapping[str, ArrayLike], specs: Sequence[MetricSpec], *, k: int | None, threshold: float | None
) -> dict[str, NDArray[np.generic]]:
    names = {s.name for s in specs}
    user, n_users = codes_of(data["user"], "user")
    n = user.size
    cols: dict[str, NDArray[np.generic]] = {"user": user}
    if names & _BINARISED:
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
        cols["y_score"] = _floats(data["y_score"], "y_score", n, nan_ok=True)
    if names & set(_RATE_OF):
        cols["y_true"] = y = _relevance(data["y_true"], n)
        if "n_relevant" in data:
            cols["n_relevant"] = n_rel = _floats(data["n_relevant"], "n_relevant", n, nan_ok=False)
            if (n_rel < 0).any():
                raise ValueError("n_relevant must be >= 0")
            per_user = np.zeros(n_users)
            np.maximum.at(per_user, user, n_rel)
            hits = np.bincount(user, weights=np.asarray(cols["_rec"]) & (y == 1), minlength=n_users)
            if (hits > per_user).any():
                raise ValueError("n_relevant is below the number of relevant items recommended to some user")
    if "average_recommendation_popularity" in names and "item_popularity" in data:
        cols["item_popularity"] = pop = _floats(data["item_popularity"], "item_popularity", n, nan_ok=False)
        if (pop < 0).any():
            raise ValueError("item_popularity must be >= 0")
    return cols


def _group_metric(
    spec: MetricSpec, support_items: BoolArray, *, smoothing: float, n_resamples: int, seed: int
) -> GroupMetric:
    name = spec.name
    m = max(int(support_items.sum()), 1)

    def per_item(g: Data, r: Data) -> float:
        # recommendations per recommended item of the window, on the smaller side: the
        # distance between two m-item distributions is noise until each holds many per item
        return min(float(np.count_nonzero(d["_rec"])) / m for d in (g, r))

    if name == "recommender_mean_score_difference":

        def stat(g: Data, r: Data) -> float:
            return K.mean_score_difference(K.side_of(g), K.side_of(r))

        def support(g: Data, r: Data) -> float:
            scored = [np.asarray(d["user"])[~np.isnan(np.asarray(d["y_score"], np.float64))] for d in (g, r)]
            return float(min(np.unique(u).size for u in scored))

    elif name == "exposure_total_variation":

        def stat(g: Data, r: Data) -> float:
            return total_variation_counts(
                K.exposure_counts(K.side_of(g), support_items), K.exposure_counts(K.side_of(r), support_items)
            )

        support = per_item
    elif name == "exposure_kl_divergence":

        def stat(g: Data, r: Data) -> float:
            return kl_divergence_counts(
                K.exposure_counts(K.side_of(g), support_items),
                K.exposure_counts(K.side_of(r), support_items),
                smoothing=smoothing,
            )

        support = per_item
    else:
        rate = _RATE_OF[name]

        def stat(g: Data, r: Data) -> float:
            return K.average_rate_ratio(K.side_of(g), K.side_of(r), rate)

        def support(g: Data, r: Data) -> float:
            return float(min(np.count_nonzero(~np.isnan(K.user_rates(K.side_of(d))[rate])) for d in (g, r)))

    bounds = {"exposure_total_variation": (0.0, 1.0), "exposure_kl_divergence": (0.0, math.inf)}.get(name)
    interval = K.user_bootstrap(stat, n_resamples=n_resamples, seed=seed, basic_bounds=bounds)
    return GroupMetric(spec, stat, support, interval)


def _model_metric(spec: MetricSpec, n_items: int | None) -> ModelMetric:
    name = spec.name

    def stat(data: Data, pairs: Sequence[GroupPair]) -> float:
        user, item = np.asarray(data["user"], np.int64), np.asarray(data["item"], np.int64)
        rec = np.asarray(data["_rec"], dtype=bool)
        m = int(item.max()) + 1 if item.size else 0
        counts = K.item_counts(item, rec, m if n_items is None else n_items)
        if name == "aggregate_diversity":
            return K.aggregate_diversity_of(counts)
        if name == "exposure_gini_index":
            return K.gini_of(counts)
        if name == "exposure_entropy":
            return K.entropy_of(counts)
        pop = np.asarray(data["item_popularity"], np.float64) if "item_popularity" in data else None
        return K.popularity_of(user, item, rec, pop)

    return ModelMetric(spec, stat)


def evaluate(
    data: Mapping[str, ArrayLike],
    attributes: Sequence[Attribute],
    *,
    metrics: Sequence[str] | None = None,
    confidence: float = 0.95,
    fair_ranges: Mapping[str, Sequence[float | None]] | None = None,
    min_samples: float = 30,
    n_resamples: int = 200,
    seed: int = 0,
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
    *users* resampled within each side (``n_resamples``, ``seed``). Support, gated by
    ``min_samples``: users with a defined value on the smaller side; for the exposure
    distances, recommendations per recommended item of the window on the smaller side.
    """
    if "user" not in data:
        raise ValueError("recommender data needs a 'user' column")
    keys = frozenset(data)
    specs = _select(metrics, keys, _binarisable(keys, k, threshold))
    if smoothing < 0:
        raise ValueError(f"smoothing must be >= 0, got {smoothing!r}")
    cols = _columns(data, specs, k=k, threshold=threshold)
    n = cols["user"].size
    check_attribute_rows(attributes, n)
    if n_items is not None:
        _catalogue(data["item"], n_items)
    support_items = np.zeros(0, dtype=bool)
    if "_rec" in cols:
        item = np.asarray(cols["item"], np.int64)
        support_items = (
            np.bincount(item[np.asarray(cols["_rec"], bool)], minlength=int(item.max(initial=-1)) + 1) > 0
        )
    group = [
        _group_metric(s, support_items, smoothing=smoothing, n_resamples=n_resamples, seed=seed)
        for s in specs
        if s.level == "group"
    ]
    model = [_model_metric(s, n_items) for s in specs if s.level == "model"]
    return evaluate_groupwise(
        cols,
        attributes,
        group,
        model_metrics=model,
        confidence=confidence,
        fair_ranges=fair_ranges,
        min_samples=min_samples,
        n_resamples=n_resamples,
        seed=seed,
    )
