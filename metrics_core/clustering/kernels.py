"""Kernels of the clustering family; they raise :class:`~metrics_core.core.undefined.Undefined` with a reason."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from metrics_core.core.types import FloatArray, IntArray
from metrics_core.core.undefined import Undefined

__all__ = [
    "as_features",
    "balance_of",
    "centres_of",
    "check_max_rows",
    "cluster_counts",
    "mean_difference",
    "min_ratio_of",
    "nearest_centre_distance",
    "pair_balance",
    "ratio_of_means",
    "window_centres",
    "window_silhouette",
]


def as_features(features: ArrayLike, n: int, name: str = "features") -> FloatArray:
    arr = np.asarray(features, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n}, d), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} has non-finite values (NaN or inf); drop those rows first")
    return arr


def cluster_counts(codes: IntArray, n_clusters: int) -> FloatArray:
    return np.bincount(codes, minlength=n_clusters).astype(np.float64)


def window_centres(features: FloatArray, codes: IntArray, n_clusters: int) -> FloatArray:
    """Per-cluster mean of the features (the centroids of a k-means fit on this window)."""
    sums = np.zeros((n_clusters, features.shape[1]))
    np.add.at(sums, codes, features)
    out: FloatArray = sums / cluster_counts(codes, n_clusters)[:, None]
    return out


def nearest_centre_distance(features: FloatArray, centres: FloatArray) -> FloatArray:
    """Euclidean distance of each row to its nearest centre (one pass per centre: O(n d) memory)."""
    best = np.full(features.shape[0], np.inf)
    for c in centres:
        np.minimum(best, np.sqrt(((features - c) ** 2).sum(axis=1)), out=best)
    return best


def ratio_of_means(d_g: FloatArray, d_r: FloatArray) -> float:
    if d_g.size == 0:
        raise Undefined("the group has no row")
    if d_r.size == 0:
        raise Undefined("the reference has no row")
    mean_r = float(d_r.mean())
    if mean_r == 0:
        raise Undefined("the reference's mean distance to the nearest centre is 0")
    return float(d_g.mean()) / mean_r


def window_silhouette(
    features: FloatArray, codes: IntArray, *, max_rows: int, seed: int
) -> tuple[FloatArray, str | None]:
    """Silhouette of each row within the window (NaN for rows outside a seeded subsample).

    Silhouettes cost O(n^2): above ``max_rows`` rows, a uniform subsample of ``max_rows``
    rows (``seed``) is scored against itself. Returns the values and, when no silhouette
    exists (fewer than 2 clusters, or as many clusters as rows), the reason.
    """
    n = codes.size
    out = np.full(n, np.nan)
    rows = np.arange(n)
    if n > max_rows:
        rows = np.sort(np.random.default_rng(seed).choice(n, size=max_rows, replace=False))
    n_labels = np.unique(codes[rows]).size
    if not 2 <= n_labels <= rows.size - 1:
        return (
            out,
            f"a silhouette needs 2 to n-1 clusters; the scored rows have {n_labels} in {rows.size} rows",
        )
    from sklearn.metrics import silhouette_samples  # scikit-learn costs ~0.7 s to import: only when used

    out[rows] = silhouette_samples(features[rows], codes[rows], metric="euclidean")
    return out, None


def mean_difference(s_g: FloatArray, s_r: FloatArray) -> float:
    s_g, s_r = s_g[~np.isnan(s_g)], s_r[~np.isnan(s_r)]
    if s_g.size == 0:
        raise Undefined("no row of the group has a silhouette (empty, or outside the scored subsample)")
    if s_r.size == 0:
        raise Undefined("no row of the reference has a silhouette (empty, or outside the scored subsample)")
    return float(s_g.mean() - s_r.mean())


def balance_of(counts: Sequence[FloatArray], universe: FloatArray) -> float:
    """``min over groups g, clusters c of min(r, 1/r)``, ``r = (n_gc / n_c) / (n_g / n)``.

    ``counts`` are the per-cluster counts of each group, ``universe`` those of all rows
    considered (clusters with no row there are skipped). Empty groups are skipped.
    """
    n = float(universe.sum())
    present = universe > 0
    best = math.inf
    for c in counts:
        n_g = float(c.sum())
        if n_g == 0:
            continue
        with np.errstate(divide="ignore"):
            ratio = (c[present] / universe[present]) / (n_g / n)
            best = min(best, float(np.minimum(ratio, 1 / ratio).min()))
    if math.isinf(best):
        raise Undefined("no group has a row")
    return best


def pair_balance(c_g: FloatArray, c_r: FloatArray) -> float:
    """:func:`balance_of` of a group and its (disjoint) reference, counted in the two together."""
    if c_g.sum() == 0:
        raise Undefined("the group has no row")
    if c_r.sum() == 0:
        raise Undefined("the reference has no row")
    return balance_of([c_g, c_r], c_g + c_r)


def min_ratio_of(c_g: FloatArray, c_r: FloatArray) -> float:
    """``min over clusters with reference rows of n_Gc / n_Rc``."""
    if c_g.sum() == 0:
        raise Undefined("the group has no row")
    if c_r.sum() == 0:
        raise Undefined("the reference has no row")
    has_ref = c_r > 0
    return float((c_g[has_ref] / c_r[has_ref]).min())


def centres_of(x: FloatArray, codes: IntArray, k: int, centers: ArrayLike | None) -> FloatArray:
    """The given ``centers`` (checked), or the per-cluster means of ``x`` (a k-means fit's centroids)."""
    if centers is None:
        return window_centres(x, codes, k)
    mu = np.asarray(centers, dtype=np.float64)
    if mu.ndim != 2 or mu.shape[1] != x.shape[1] or mu.shape[0] == 0 or not np.isfinite(mu).all():
        raise ValueError(f"centers must be a finite (k, {x.shape[1]}) array, got shape {mu.shape}")
    return mu


def check_max_rows(max_rows: int) -> int:
    if isinstance(max_rows, bool) or not isinstance(max_rows, int | np.integer) or max_rows < 3:
        raise ValueError(f"max_rows must be an integer >= 3, got {max_rows!r}")
    return int(max_rows)
