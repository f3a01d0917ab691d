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

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from metrics_core.clustering import kernels as C
from metrics_core.core.types import BoolArray, IntArray
from metrics_core.core.undefined import or_nan
from metrics_core.stats.distances import kl_divergence_counts, total_variation_counts
from metrics_core.window.pairs import as_mask, codes_of

__all__ = [
    "cluster_balance",
    "cluster_balance_all_groups",
    "cluster_distribution_kl_divergence",
    "cluster_distribution_total_variation",
    "min_cluster_ratio",
    "silhouette_difference",
    "social_fairness_ratio",
]


def _codes_and_masks(
    cluster: ArrayLike, group: ArrayLike, reference: ArrayLike
) -> tuple[IntArray, int, BoolArray, BoolArray]:
    codes, k = codes_of(cluster, "cluster")
    return codes, k, as_mask(group, "group", codes.size), as_mask(reference, "reference", codes.size)


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
    d = C.nearest_centre_distance(x, C.centres_of(x, codes, k, centers))
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
    s, reason = C.window_silhouette(x, codes, max_rows=C.check_max_rows(max_rows), seed=seed)
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
