"""Clustering bias metrics (holisticai's clustering section) on a window of clustered rows.

Inputs per row: ``cluster`` (the cluster id, any hashable label; DBSCAN's noise label -1
is one more cluster, as in holisticai) and, for the geometric metrics, ``features`` (an
``n x d`` array). Group metrics compare G with its reference R: social fairness ratio
(mean distance to the nearest centre), silhouette difference, cluster balance, minimum
cluster ratio, and the total variation / KL divergence between the groups' distributions
over clusters. Model level: cluster balance over all groups of an attribute. Formulas
follow holisticai's code; every departure is listed in ``docs/families/clustering.md``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core import _clustering as C
from metrics_core._distributions import (
    as_mask,
    check_attribute_rows,
    codes_of,
    kl_divergence_counts,
    or_nan,
    row_bootstrap,
    total_variation_counts,
)
from metrics_core._results import Report
from metrics_core._spec import FairRange, MetricSpec, groupwise_spec
from metrics_core.groups import REST, Attribute
from metrics_core.groupwise import Data, GroupMetric, GroupPair, ModelMetric, Undefined, evaluate_groupwise

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

INPUTS: tuple[str, ...] = ("cluster", "features")

BoolArray = NDArray[np.bool_]
FloatArray = NDArray[np.float64]

_CLUSTER = frozenset({"cluster"})
_GEOMETRY = frozenset({"cluster", "features"})
_PER_CLUSTER = "rows per cluster of the window on the smaller side"


_spec = functools.partial(groupwise_spec, "clustering")


SPECS: list[MetricSpec] = [
    _spec(
        "social_fairness_ratio",
        "group",
        _GEOMETRY,
        1.0,
        FairRange(0.8, 1.25),
        "four-fifths rule applied to a ratio, 1.25 = 1/0.8 keeps it symmetric "
        "(holisticai documentation prints [0.8, 1.2])",
        "above 1: the group's rows lie farther from their nearest cluster centre than the reference's",
        "mean_{x in G} min_c ||x - mu_c|| / mean_{x in R} min_c ||x - mu_c||, mu_c = window mean of cluster c "
        "unless centers are given",
    ),
    _spec(
        "silhouette_difference",
        "group",
        _GEOMETRY,
        0.0,
        FairRange(-0.1, 0.1),
        "fairwatch choice: holisticai lists only the value range [-1, 1]; 0.1 is 5% of the silhouette's span, "
        "as the 0.1 bound of rate differences",
        "negative: the group's rows fit their clusters worse than the reference's",
        "mean silhouette(G) - mean silhouette(R), silhouettes of the window (a seeded subsample of max_rows "
        "rows above that); holisticai's code halves it",
    ),
    _spec(
        "cluster_balance",
        "group",
        _CLUSTER,
        1.0,
        FairRange(0.8, 1.0),
        "fairwatch choice: holisticai lists only the value range [0, 1]; the four-fifths rule per cluster "
        "(every share within a factor 1.25 of the overall share)",
        "below 1: some cluster over- or under-represents the group or its reference relative to their shares "
        "of G and R together",
        "min over clusters c and g in {G, R} of min(r, 1/r), r = (n_gc / n_c) / (n_g / n), counted in G and R",
    ),
    _spec(
        "min_cluster_ratio",
        "group",
        _CLUSTER,
        None,
        None,
        "informational: equals n_G / n_R, not 1, when every cluster has the window's composition, so a "
        "fixed range would flag every pair of unequal groups (cluster_balance is the size-free version)",
        "the group's smallest head count relative to the reference's in any cluster",
        "min over clusters with reference rows of n_Gc / n_Rc",
    ),
    _spec(
        "cluster_distribution_total_variation",
        "group",
        _CLUSTER,
        0.0,
        FairRange(0.0, 0.1),
        "fairwatch choice (metrics.md section 4): holisticai lists only the value range [0, 1]",
        "the share of the group's rows that would have to change cluster to match the reference's spread",
        "0.5 * sum_c |p_G(c) - p_R(c)|, p_g = distribution of g's rows over the window's clusters",
    ),
    _spec(
        "cluster_distribution_kl_divergence",
        "group",
        _CLUSTER,
        0.0,
        FairRange(0.0, 0.02),
        "fairwatch choice: no range in holisticai; by Pinsker's inequality TV <= sqrt(KL/2), so KL <= 0.02 "
        "keeps the total variation within its 0.1 bound",
        "how unlike the reference's spread over clusters the group's is (0: same distribution)",
        "sum_c p_G(c) ln(p_G(c) / p_R(c)), counts smoothed by 0.5 per cluster of the window",
    ),
    _spec(
        "cluster_balance_all_groups",
        "model",
        _CLUSTER,
        1.0,
        None,
        "informational model-level summary (holisticai's cluster balance over all groups of the attribute); "
        "the per-group cluster_balance carries the fair range",
        "the worst representation of any group in any cluster relative to its overall share",
        "min over groups g and clusters c of min(r, 1/r), r = (n_gc / n_c) / (n_g / n) over the attribute's rows",
    ),
]
_BY_NAME = {s.name: s for s in SPECS}


# --- public functions (arrays of one window; group and reference are row masks) ----------------


def _codes_and_masks(
    cluster: ArrayLike, group: ArrayLike, reference: ArrayLike
) -> tuple[NDArray[np.int64], int, BoolArray, BoolArray]:
    codes, k = codes_of(cluster, "cluster")
    return codes, k, as_mask(group, "group", codes.size), as_mask(reference, "reference", codes.size)


def _centres(x: FloatArray, codes: NDArray[np.int64], k: int, centers: ArrayLike | None) -> FloatArray:
    if centers is None:
        return C.window_centres(x, codes, k)
    mu = np.asarray(centers, dtype=np.float64)
    if mu.ndim != 2 or mu.shape[1] != x.shape[1] or mu.shape[0] == 0 or not np.isfinite(mu).all():
        raise ValueError(f"centers must be a finite (k, {x.shape[1]}) array, got shape {mu.shape}")
    return mu


def social_fairness_ratio(
    features: ArrayLike,
    cluster: ArrayLike,
    group: ArrayLike,
    reference: ArrayLike,
    *,
    centers: ArrayLike | None = None,
) -> float:
    r"""Mean distance to the nearest cluster centre of the group's rows over the reference's.

    .. math:: SFR = \frac{\operatorname{mean}_{x \in G} \min_c \lVert x - \mu_c \rVert}
                         {\operatorname{mean}_{x \in R} \min_c \lVert x - \mu_c \rVert}

    ``centers`` (``k x d``) as holisticai takes them; by default the per-cluster mean of
    ``features`` over all rows given (a k-means fit's centroids). NaN when a side is empty
    or the reference's mean distance is 0.

    >>> x = [[0.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, -1.0]]
    >>> social_fairness_ratio(x, [0, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], centers=[[0.0, 0.0]])
    1.0
    """
    codes, k, g, r = _codes_and_masks(cluster, group, reference)
    x = C.as_features(features, codes.size)
    d = C.nearest_centre_distance(x, _centres(x, codes, k, centers))
    return or_nan(C.ratio_of_means, d[g], d[r])


def silhouette_difference(
    features: ArrayLike,
    cluster: ArrayLike,
    group: ArrayLike,
    reference: ArrayLike,
    *,
    max_rows: int = 5000,
    seed: int = 0,
) -> float:
    r"""Mean silhouette of the group's rows minus the reference's (the plain difference).

    .. math:: SD = \bar s_G - \bar s_R, \quad s_i = \frac{b_i - a_i}{\max(a_i, b_i)}

    Silhouettes are computed on all rows given (``sklearn.metrics.silhouette_samples``,
    Euclidean); above ``max_rows`` rows on a uniform subsample drawn with ``seed``, and the
    means use the subsampled rows only. holisticai's ``silhouette_diff`` returns half of
    this value.

    >>> x = [[0.0], [0.1], [0.2], [5.0], [5.1], [9.0]]
    >>> round(silhouette_difference(x, [0, 0, 0, 1, 1, 1], [1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]), 6)
    0.399449
    """
    codes, _, g, r = _codes_and_masks(cluster, group, reference)
    x = C.as_features(features, codes.size)
    s, reason = C.window_silhouette(x, codes, max_rows=_max_rows(max_rows), seed=seed)
    if reason is not None:
        return float("nan")
    return or_nan(C.mean_difference, s[g], s[r])


def cluster_balance(cluster: ArrayLike, group: ArrayLike, reference: ArrayLike) -> float:
    r"""Worst representation of G or R in any cluster, relative to its share of G and R together.

    .. math:: CB = \min_{g \in \{G, R\},\, c} \min\left(r_{gc}, \frac{1}{r_{gc}}\right), \quad
              r_{gc} = \frac{n_{gc} / n_c}{n_g / n}

    counted over the rows of G and R (``n_c``: their rows in cluster ``c``, ``n``: all of
    them; G and R are disjoint); 0 when a cluster has no row of G (or R). NaN when a side
    is empty.

    >>> cluster_balance([0, 0, 0, 1, 1, 1], [1, 1, 0, 1, 0, 0], [0, 0, 1, 0, 1, 1])
    0.6666666666666666
    """
    codes, k, g, r = _codes_and_masks(cluster, group, reference)
    return or_nan(C.pair_balance, C.cluster_counts(codes[g], k), C.cluster_counts(codes[r], k))


def cluster_balance_all_groups(cluster: ArrayLike, groups: Sequence[ArrayLike]) -> float:
    r"""holisticai's cluster balance over several groups: the worst ``min(r, 1/r)`` of any group.

    .. math:: \min_{g,\, c} \min\left(r_{gc}, \frac{1}{r_{gc}}\right), \quad
              r_{gc} = \frac{n_{gc} / n_c}{n_g / n}

    counted over the rows in at least one of ``groups`` (masks); empty groups are skipped.

    >>> cluster_balance_all_groups([0, 0, 1, 1], [[1, 0, 1, 0], [0, 1, 0, 1]])
    1.0
    """
    codes, k = codes_of(cluster, "cluster")
    masks = [as_mask(m, "groups", codes.size) for m in groups]
    universe = np.logical_or.reduce(masks) if masks else np.zeros(codes.size, dtype=bool)
    counts = [C.cluster_counts(codes[m], k) for m in masks]
    return or_nan(C.balance_of, counts, C.cluster_counts(codes[universe], k))


def min_cluster_ratio(cluster: ArrayLike, group: ArrayLike, reference: ArrayLike) -> float:
    r"""Smallest ratio, over clusters with reference rows, of the group's head count to the reference's.

    .. math:: MCR = \min_{c:\, n_{Rc} > 0} \frac{n_{Gc}}{n_{Rc}}

    NaN when a side is empty.

    >>> min_cluster_ratio([0, 0, 0, 1, 1, 2], [1, 0, 0, 1, 1, 1], [0, 1, 1, 0, 0, 0])
    0.5
    """
    codes, k, g, r = _codes_and_masks(cluster, group, reference)
    return or_nan(C.min_ratio_of, C.cluster_counts(codes[g], k), C.cluster_counts(codes[r], k))


def cluster_distribution_total_variation(cluster: ArrayLike, group: ArrayLike, reference: ArrayLike) -> float:
    r"""Total variation distance between the group's and the reference's distributions over clusters.

    .. math:: TV = \tfrac12 \sum_c \lvert p_G(c) - p_R(c) \rvert

    >>> cluster_distribution_total_variation([0, 0, 1, 0, 1, 1], [1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1])
    0.3333333333333333
    """
    codes, k, g, r = _codes_and_masks(cluster, group, reference)
    return or_nan(total_variation_counts, C.cluster_counts(codes[g], k), C.cluster_counts(codes[r], k))


def cluster_distribution_kl_divergence(
    cluster: ArrayLike, group: ArrayLike, reference: ArrayLike, *, smoothing: float = 0.5
) -> float:
    r"""KL divergence from the group's distribution over clusters to the reference's.

    .. math:: KL = \sum_c p_c \ln \frac{p_c}{q_c}, \quad
              p_c = \frac{n_{Gc} + \alpha}{n_G + \alpha k}, \; q_c = \frac{n_{Rc} + \alpha}{n_R + \alpha k}

    over the ``k`` clusters of all rows given (``alpha = smoothing``). ``smoothing=0`` is
    holisticai's plug-in divergence, NaN (not inf) when R has no row in a cluster G has.

    >>> round(cluster_distribution_kl_divergence([0, 0, 1, 0, 1, 1], [1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1], smoothing=0), 6)
    0.231049
    """
    codes, k, g, r = _codes_and_masks(cluster, group, reference)
    return or_nan(
        kl_divergence_counts,
        C.cluster_counts(codes[g], k),
        C.cluster_counts(codes[r], k),
        smoothing=smoothing,
    )


# --- evaluation ---------------------------------------------------------------------------------


def _max_rows(max_rows: int) -> int:
    if isinstance(max_rows, bool) or not isinstance(max_rows, int | np.integer) or max_rows < 3:
        raise ValueError(f"max_rows must be an integer >= 3, got {max_rows!r}")
    return int(max_rows)


def _select(metrics: Sequence[str] | None, keys: frozenset[str]) -> list[MetricSpec]:
    if isinstance(metrics, str):
        raise TypeError(f"metrics must be a sequence of names, got the string {metrics!r}")
    if metrics is None:  # everything the data can feed
        return [s for s in SPECS if s.requires <= keys]
    out = []
    for name in dict.fromkeys(metrics):  # in order, once each
        if name not in _BY_NAME:
            raise ValueError(f"unknown clustering metric {name!r}; known: {', '.join(_BY_NAME)}")
        if missing := _BY_NAME[name].requires - keys:
            raise ValueError(f"metric {name!r} needs data key(s) {sorted(missing)}")
        out.append(_BY_NAME[name])
    return out


def _group_metric(
    spec: MetricSpec, k: int, silhouette_reason: str | None, *, smoothing: float, n_resamples: int, seed: int
) -> GroupMetric:
    name = spec.name
    n_clusters = max(k, 1)

    def counts(d: Data) -> FloatArray:
        return C.cluster_counts(np.asarray(d["cluster"], np.int64), k)

    def per_cluster(g: Data, r: Data) -> float:
        # k estimated shares per side: each needs rows, so the support is rows per cluster
        return min(np.asarray(d["cluster"]).size for d in (g, r)) / n_clusters

    def stat(g: Data, r: Data) -> float:
        if name == "social_fairness_ratio":
            return C.ratio_of_means(
                np.asarray(g["_distance"], np.float64), np.asarray(r["_distance"], np.float64)
            )
        if name == "silhouette_difference":
            if silhouette_reason is not None:
                raise Undefined(silhouette_reason)
            return C.mean_difference(
                np.asarray(g["_silhouette"], np.float64), np.asarray(r["_silhouette"], np.float64)
            )
        c_g, c_r = counts(g), counts(r)
        if name == "cluster_balance":
            return C.pair_balance(c_g, c_r)
        if name == "min_cluster_ratio":
            return C.min_ratio_of(c_g, c_r)
        if name == "cluster_distribution_total_variation":
            return total_variation_counts(c_g, c_r)
        return kl_divergence_counts(c_g, c_r, smoothing=smoothing)

    def rows(g: Data, r: Data) -> float:
        return float(min(np.asarray(g["cluster"]).size, np.asarray(r["cluster"]).size))

    def scored_rows(g: Data, r: Data) -> float:
        return float(
            min(np.count_nonzero(~np.isnan(np.asarray(d["_silhouette"], np.float64))) for d in (g, r))
        )

    support = {"social_fairness_ratio": rows, "silhouette_difference": scored_rows}.get(name, per_cluster)
    # distances and minima: basic bootstrap (their plug-in bias would shift a percentile interval)
    bounds = {
        "cluster_balance": (0.0, 1.0),
        "min_cluster_ratio": (0.0, math.inf),
        "cluster_distribution_total_variation": (0.0, 1.0),
        "cluster_distribution_kl_divergence": (0.0, math.inf),
    }.get(name)
    interval = (
        None if bounds is None else row_bootstrap(stat, n_resamples=n_resamples, seed=seed, bounds=bounds)
    )
    return GroupMetric(spec, stat, support, interval)


def _balance_all_groups(data: Data, pairs: Sequence[GroupPair]) -> float:
    """Groups of the attribute: every monitored group and a named reference group (not rest/background)."""
    masks: dict[str, BoolArray] = {}
    universe = np.zeros(np.asarray(data["cluster"]).size, dtype=bool)
    for p in pairs:
        masks[p.group] = p.group_rows
        if p.reference not in (REST, "background"):
            masks[p.reference] = p.reference_rows
        universe |= p.group_rows | p.reference_rows
    codes = np.asarray(data["cluster"], np.int64)
    k = int(codes.max()) + 1 if codes.size else 0
    return C.balance_of(
        [C.cluster_counts(codes[m], k) for m in masks.values()], C.cluster_counts(codes[universe], k)
    )


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
    centers: ArrayLike | None = None,
    max_rows: int = 5000,
    smoothing: float = 0.5,
) -> Report:
    """Judge the clustering metrics for every group of ``attributes`` on one window.

    Window-level quantities are computed once on all rows: the cluster centres (per-cluster
    mean of ``features`` unless ``centers`` is given), each row's distance to its nearest
    centre, and the silhouettes (a seeded subsample of ``max_rows`` rows above that size).
    ``metrics=None`` selects every metric the columns can feed. Intervals: percentile
    bootstrap of rows within each side, centres and silhouettes held fixed. Support, gated
    by ``min_samples``: rows on the smaller side (social fairness ratio), rows with a
    silhouette on the smaller side (silhouette difference), rows per cluster of the window
    on the smaller side (the cluster-share metrics).
    """
    if "cluster" not in data:
        raise ValueError("clustering data needs a 'cluster' column")
    if smoothing < 0:
        raise ValueError(f"smoothing must be >= 0, got {smoothing!r}")
    specs = _select(metrics, frozenset(data))
    names = {s.name for s in specs}
    codes, k = codes_of(data["cluster"], "cluster")
    n = codes.size
    check_attribute_rows(attributes, n)
    cols: dict[str, NDArray[np.generic]] = {"cluster": codes}
    reason = None
    if names & {"social_fairness_ratio", "silhouette_difference"}:
        x = C.as_features(data["features"], n)
        if "social_fairness_ratio" in names:
            cols["_distance"] = C.nearest_centre_distance(x, _centres(x, codes, k, centers))
        if "silhouette_difference" in names:
            cols["_silhouette"], reason = C.window_silhouette(
                x, codes, max_rows=_max_rows(max_rows), seed=seed
            )
    group = [
        _group_metric(s, k, reason, smoothing=smoothing, n_resamples=n_resamples, seed=seed)
        for s in specs
        if s.level == "group"
    ]
    model = [ModelMetric(s, _balance_all_groups) for s in specs if s.level == "model"]
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
