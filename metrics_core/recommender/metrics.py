"""The public recommender metric functions: arrays of one window in, a float out.

Re-exported by :mod:`metrics_core.recommender`. Data arguments are positional, options
keyword-only; ``group`` and ``reference`` are boolean row masks of the same window (a row
may be in neither). Undefined values are NaN; the evaluator keeps their reason.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core.core.types import BoolArray, FloatArray
from metrics_core.core.undefined import or_nan
from metrics_core.recommender import kernels as K
from metrics_core.recommender.kernels import Side
from metrics_core.stats.distances import kl_divergence_counts, total_variation_counts
from metrics_core.window.pairs import as_mask, codes_of

__all__ = [
    "aggregate_diversity",
    "average_recommendation_popularity",
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

# --- inputs -------------------------------------------------------------------------------------


def as_floats(values: ArrayLike, name: str, n: int, *, nan_ok: bool) -> FloatArray:
    arr = np.asarray(values)
    if arr.dtype == object:
        arr = np.array([np.nan if v is None else v for v in arr])
    if arr.shape != (n,):
        raise ValueError(f"{name} has shape {arr.shape}, expected ({n},)")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    out = arr.astype(np.float64)
    if np.isinf(out).any() or (not nan_ok and np.isnan(out).any()):
        raise ValueError(f"{name} must be finite{' (NaN allowed)' if nan_ok else ''}")
    return out


def as_relevance(y_true: ArrayLike, n: int) -> FloatArray:
    y = as_floats(y_true, "y_true", n, nan_ok=True)
    known = ~np.isnan(y)
    if ((y[known] < 0) | (y[known] > 1)).any():
        raise ValueError("y_true must hold relevance in [0, 1] (binarised at >= 0.5) or NaN")
    return np.where(known, (y >= 0.5).astype(np.float64), np.nan)


def _side(
    user: ArrayLike,
    item: ArrayLike | None,
    rows: ArrayLike,
    *,
    rec: ArrayLike | None = None,
    y_score: ArrayLike | None = None,
    y_true: ArrayLike | None = None,
    n_relevant: ArrayLike | None = None,
) -> tuple[Side, int]:
    """Side of the rows ``rows`` (a mask) of full-window arrays, and the number of item codes."""
    ucodes, _ = codes_of(user, "user")
    n = ucodes.size
    icodes, n_items = codes_of(item, "item") if item is not None else (np.zeros(n, np.int64), 1)
    m = as_mask(rows, "group", n)
    rec_mask = np.ones(n, dtype=bool) if rec is None else as_mask(rec, "recommended", n)
    score = None if y_score is None else as_floats(y_score, "y_score", n, nan_ok=True)[m]
    rel = None if y_true is None else as_relevance(y_true, n)[m]
    nrel = None if n_relevant is None else as_floats(n_relevant, "n_relevant", n, nan_ok=False)[m]
    return Side(ucodes[m], icodes[m], rec_mask[m], score, rel, nrel), n_items


def recommended(
    user: ArrayLike,
    item: ArrayLike,
    *,
    rank: ArrayLike | None = None,
    y_score: ArrayLike | None = None,
    k: int | None = 10,
    threshold: float | None = None,
) -> BoolArray:
    """Which logged rows count as recommendations.

    - ``threshold`` given: ``y_score >= threshold`` (holisticai's ``thresh``);
    - else ``k`` given: the top ``k`` rows of each user by ``rank`` (``rank <= k``) or, without
      a rank, by descending ``y_score`` (holisticai's ``top``), ties broken by item id, higher
      id first (what holisticai's ``argsort`` does on short rows); exact duplicates (same
      user, item and score) share a position;
    - ``k=None`` and no threshold: every logged row (the log holds only what was shown).

    Rows with a NaN rank or score are never recommended and take no position.

    >>> recommended([1, 1, 1, 2], ["a", "b", "c", "a"], y_score=[0.5, 0.9, 0.5, 0.1], k=2).tolist()
    [False, True, True, True]
    """
    ucodes, _ = codes_of(user, "user")
    n = ucodes.size
    if threshold is not None:
        if y_score is None:
            raise ValueError("threshold binarisation needs y_score")
        with np.errstate(invalid="ignore"):
            out: BoolArray = as_floats(y_score, "y_score", n, nan_ok=True) >= float(threshold)
        return out
    if k is None:
        return np.ones(n, dtype=bool)
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    if rank is not None:
        r = as_floats(rank, "rank", n, nan_ok=True)
        if (r[~np.isnan(r)] < 1).any():
            raise ValueError("rank must be 1-based (>= 1)")
        with np.errstate(invalid="ignore"):
            by_rank: BoolArray = r <= k
        return by_rank
    if y_score is None:
        raise ValueError("top-k binarisation needs rank or y_score; pass k=None to count every logged row")
    s = as_floats(y_score, "y_score", n, nan_ok=True)
    icodes, _ = codes_of(item, "item")
    unscored = np.isnan(s)
    key = -np.where(unscored, 0.0, s)
    order = np.lexsort((-icodes, key, unscored, ucodes))
    # exact duplicates (same user, item and score) share the position of the first: row order never matters
    keys = np.stack([ucodes[order], unscored[order], key[order], icodes[order]])
    new = np.ones(n, dtype=bool)
    new[1:] = (keys[:, 1:] != keys[:, :-1]).any(axis=0)
    first = np.maximum.accumulate(np.where(new, np.arange(n), 0))
    starts = np.concatenate(([0], np.cumsum(np.bincount(ucodes))[:-1]))
    position = first - starts[ucodes[order]]
    out = np.zeros(n, dtype=bool)
    out[order] = (position < k) & ~unscored[order]
    return out


# --- group metrics (public, arrays in; group/reference are row masks of one window) -------------


def recommender_mean_score_difference(y_score: ArrayLike, group: ArrayLike, reference: ArrayLike) -> float:
    r"""Mean recommender score of the group's rows minus the reference's.

    .. math:: \bar s_G - \bar s_R

    holisticai's ``mad_score`` (a signed difference despite its name), with NaN scores
    left out as its ``nanmean`` does. NaN when a side has no scored row.

    >>> round(recommender_mean_score_difference([0.9, 0.7, 0.4, float("nan")], [1, 1, 0, 0], [0, 0, 1, 1]), 6)
    0.4
    """
    n = np.asarray(y_score).shape[0]
    s = as_floats(y_score, "y_score", n, nan_ok=True)
    g, r = as_mask(group, "group", n), as_mask(reference, "reference", n)
    zeros, ones = np.zeros(n, np.int64), np.ones(n, dtype=bool)
    side = [Side(zeros[m], zeros[m], ones[m], s[m]) for m in (g, r)]
    return or_nan(K.mean_score_difference, side[0], side[1])


def exposure_total_variation(
    item: ArrayLike, recommended: ArrayLike, group: ArrayLike, reference: ArrayLike
) -> float:
    r"""Total variation distance between the group's and the reference's item exposure.

    .. math:: TV = \tfrac12 \sum_i \lvert e_G(i) - e_R(i) \rvert, \quad
              e_g(i) = \frac{\#\{\text{recommendations of } i \text{ to } g\}}{\#\{\text{recommendations to } g\}}

    Every logged recommendation is one exposure. NaN when a side has no recommendation.

    >>> exposure_total_variation(["a", "b", "a", "c", "b", "c"], [1] * 6, [1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 1, 1])
    0.5
    """
    n = np.asarray(item).shape[0]
    g, n_items = _side(np.zeros(n), item, group, rec=recommended)
    r, _ = _side(np.zeros(n), item, reference, rec=recommended)
    support = np.ones(n_items, dtype=bool)
    return or_nan(total_variation_counts, K.exposure_counts(g, support), K.exposure_counts(r, support))


def exposure_kl_divergence(
    item: ArrayLike,
    recommended: ArrayLike,
    group: ArrayLike,
    reference: ArrayLike,
    *,
    smoothing: float = 0.5,
) -> float:
    r"""KL divergence from the group's item exposure to the reference's, counts smoothed.

    .. math:: KL = \sum_i p_i \ln \frac{p_i}{q_i}, \quad
              p_i = \frac{c_{G,i} + \alpha}{n_G + \alpha m}, \; q_i = \frac{c_{R,i} + \alpha}{n_R + \alpha m}

    over the ``m`` items recommended to anyone in the window (``alpha = smoothing``).
    ``smoothing=0`` is holisticai's plug-in divergence; it is NaN (not inf) when the
    reference never got an item the group got.

    >>> item, rec, g = ["a", "a", "b", "a", "b"], [1] * 5, [True, True, True, False, False]
    >>> round(exposure_kl_divergence(item, rec, g, [not x for x in g], smoothing=0), 6)
    0.056633
    """
    n = np.asarray(item).shape[0]
    g, n_items = _side(np.zeros(n), item, group, rec=recommended)
    r, _ = _side(np.zeros(n), item, reference, rec=recommended)
    window = Side(np.zeros(n, np.int64), codes_of(item, "item")[0], as_mask(recommended, "recommended", n))
    support = K.exposure_counts(window, np.ones(n_items, dtype=bool)) > 0
    return or_nan(
        kl_divergence_counts,
        K.exposure_counts(g, support),
        K.exposure_counts(r, support),
        smoothing=smoothing,
    )


def _rate_ratio(
    rate: str,
    user: ArrayLike,
    recommended: ArrayLike,
    y_true: ArrayLike,
    group: ArrayLike,
    reference: ArrayLike,
    n_relevant: ArrayLike | None,
) -> float:
    n = np.asarray(user).shape[0]
    sides = [
        _side(user, None, m, rec=recommended, y_true=y_true, n_relevant=n_relevant)[0]
        for m in (group, reference)
    ]
    if np.asarray(y_true).shape != (n,):
        raise ValueError(f"y_true has shape {np.asarray(y_true).shape}, expected ({n},)")
    return or_nan(K.average_rate_ratio, sides[0], sides[1], rate)


def recommender_avg_precision_ratio(
    user: ArrayLike,
    recommended: ArrayLike,
    y_true: ArrayLike,
    group: ArrayLike,
    reference: ArrayLike,
) -> float:
    r"""Ratio of the users' mean precision: group over reference.

    .. math:: \frac{\operatorname{mean}_{u \in G} P_u}{\operatorname{mean}_{u \in R} P_u}, \quad
              P_u = \frac{\#\{\text{recommended and relevant}\}}{\#\{\text{recommended, relevance known}\}}

    A user with no recommended row of known relevance has no precision and is left out
    (holisticai counts them as 0). NaN when no user of a side has one or the reference's
    mean is 0.

    >>> user, rec = [1, 1, 2, 2, 3, 3], [1, 1, 1, 1, 1, 1]
    >>> recommender_avg_precision_ratio(user, rec, [1, 0, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 1, 1])
    0.75
    """
    return _rate_ratio("precision", user, recommended, y_true, group, reference, None)


def recommender_avg_recall_ratio(
    user: ArrayLike,
    recommended: ArrayLike,
    y_true: ArrayLike,
    group: ArrayLike,
    reference: ArrayLike,
    *,
    n_relevant: ArrayLike | None = None,
) -> float:
    r"""Ratio of the users' mean recall: group over reference.

    .. math:: R_u = \frac{\#\{\text{recommended and relevant}\}}{\#\{\text{relevant items of } u\}}

    The denominator is ``n_relevant`` (the user's total relevant items, repeated on each of
    their rows) if given, else the user's relevant *logged* rows (recall among the logged
    candidates). Users without relevant items are left out (holisticai counts them as 0).

    >>> user, rec = [1, 1, 2, 2], [1, 0, 1, 1]
    >>> recommender_avg_recall_ratio(user, rec, [1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 1, 1])
    0.5
    """
    return _rate_ratio("recall", user, recommended, y_true, group, reference, n_relevant)


def recommender_avg_f1_ratio(
    user: ArrayLike,
    recommended: ArrayLike,
    y_true: ArrayLike,
    group: ArrayLike,
    reference: ArrayLike,
    *,
    n_relevant: ArrayLike | None = None,
) -> float:
    r"""Ratio of the users' mean F1: group over reference.

    .. math:: F1_u = \frac{2\,\text{hits}_u}{\#\{\text{recommended}\}_u + \#\{\text{relevant}\}_u}
              = \frac{2 P_u R_u}{P_u + R_u}

    Relevant items as in :func:`recommender_avg_recall_ratio`; users with neither a
    recommendation of known relevance nor a relevant item are left out.

    >>> user, rec = [1, 1, 2, 2], [1, 0, 1, 1]
    >>> round(recommender_avg_f1_ratio(user, rec, [1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 1, 1]), 6)
    0.666667
    """
    return _rate_ratio("f1", user, recommended, y_true, group, reference, n_relevant)


# --- model-level (informational) ---------------------------------------------------------------


def check_catalogue(item: ArrayLike, n_items: int | None) -> tuple[NDArray[np.int64], int]:
    codes, m = codes_of(item, "item")
    if n_items is None:
        return codes, m
    if isinstance(n_items, bool) or not isinstance(n_items, int | np.integer) or n_items < m:
        raise ValueError(f"n_items must be an integer >= the {m} distinct items in the log, got {n_items!r}")
    return codes, int(n_items)


def aggregate_diversity(item: ArrayLike, recommended: ArrayLike, *, n_items: int | None = None) -> float:
    r"""Share of the catalogue recommended at least once.

    .. math:: \frac{\lvert \{i : i \text{ recommended}\} \rvert}{\lvert \text{items} \rvert}

    The catalogue is ``n_items`` if given, else the distinct items of the log (so with
    ``k=None`` binarisation and no ``n_items`` the value is 1 by construction).

    >>> aggregate_diversity(["a", "b", "c", "a"], [1, 0, 1, 1])
    0.6666666666666666
    """
    codes, m = check_catalogue(item, n_items)
    rec = as_mask(recommended, "recommended", codes.size)
    return or_nan(K.aggregate_diversity_of, K.item_counts(codes, rec, m))


def exposure_gini_index(item: ArrayLike, recommended: ArrayLike, *, n_items: int | None = None) -> float:
    r"""Gini index of the item exposure counts (holisticai's normalisation, maximum 1).

    .. math:: G = \frac{\sum_{i=1}^{n} (2i - n - 1) f_{(i)}}{n - 1}

    with :math:`f_{(i)}` the exposure shares of the ``n`` catalogue items sorted
    increasingly (items never recommended count as 0). NaN with fewer than two items or
    no recommendation.

    >>> exposure_gini_index(["a", "a", "a", "b"], [1, 1, 1, 1], n_items=3)
    0.75
    """
    codes, m = check_catalogue(item, n_items)
    rec = as_mask(recommended, "recommended", codes.size)
    return or_nan(K.gini_of, K.item_counts(codes, rec, m))


def exposure_entropy(item: ArrayLike, recommended: ArrayLike) -> float:
    r"""Entropy (natural log) of the item exposure distribution.

    .. math:: H = -\sum_i e(i) \ln e(i)

    >>> round(exposure_entropy(["a", "b", "a", "b"], [1, 1, 1, 1]), 6)
    0.693147
    """
    codes, m = codes_of(item, "item")
    rec = as_mask(recommended, "recommended", codes.size)
    return or_nan(K.entropy_of, K.item_counts(codes, rec, m))


def average_recommendation_popularity(
    user: ArrayLike, item: ArrayLike, recommended: ArrayLike, *, popularity: ArrayLike | None = None
) -> float:
    r"""Mean over users of the mean popularity of the items recommended to them.

    .. math:: ARP = \frac{1}{\lvert U \rvert} \sum_{u \in U} \frac{1}{\lvert L_u \rvert} \sum_{i \in L_u} \phi(i)

    :math:`\phi(i)` is the number of users ``i`` was recommended to in the window
    (holisticai: column sums of the binary matrix), or ``popularity`` (per row, the
    popularity of the row's item) if given. ``U``: users with a recommendation.

    >>> average_recommendation_popularity([1, 1, 2], ["a", "b", "a"], [1, 1, 1])
    1.75
    """
    ucodes, _ = codes_of(user, "user")
    icodes, _ = codes_of(item, "item")
    rec = as_mask(recommended, "recommended", ucodes.size)
    pop = None if popularity is None else as_floats(popularity, "popularity", ucodes.size, nan_ok=False)
    return or_nan(K.popularity_of, ucodes, icodes, rec, pop)
