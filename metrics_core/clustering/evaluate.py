"""Evaluate the clustering metrics of every group of a window against its reference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core.clustering import kernels as C
from metrics_core.clustering.specs import SPECS, ClusteringWindow
from metrics_core.core.results import Report
from metrics_core.engine.adjust import Adjustment
from metrics_core.engine.groupwise import evaluate_groupwise
from metrics_core.engine.select import FairRangeOverrides, fair_ranges_of, select_specs
from metrics_core.stats.contrasts import Method
from metrics_core.stats.judge import DEFAULT_MIN_SAMPLES
from metrics_core.window.groups import Attribute
from metrics_core.window.pairs import check_attribute_rows, codes_of

__all__ = ["INPUTS", "evaluate"]

INPUTS: tuple[str, ...] = ("cluster", "features")


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

    ``adjust`` / ``family_size``: multiplicity adjustment (:mod:`metrics_core.engine.adjust`);
    ``method`` is accepted for one API across families - this family's intervals are bootstraps,
    which ``method="anytime"`` does not change.
    """
    if "cluster" not in data:
        raise ValueError("clustering data needs a 'cluster' column")
    if smoothing < 0:
        raise ValueError(f"smoothing must be >= 0, got {smoothing!r}")
    specs = select_specs(SPECS, metrics, available=frozenset(data), family="clustering")
    names = {s.name for s in specs}
    codes, k = codes_of(data["cluster"], "cluster")
    n = codes.size
    check_attribute_rows(attributes, n)
    cols: dict[str, NDArray[np.generic]] = {"cluster": codes}
    reason = None
    if names & {"social_fairness_ratio", "silhouette_difference"}:  # window-level geometry, computed once
        x = C.as_features(data["features"], n)
        if "social_fairness_ratio" in names:
            cols["_distance"] = C.nearest_centre_distance(x, C.centres_of(x, codes, k, centers))
        if "silhouette_difference" in names:
            cols["_silhouette"], reason = C.window_silhouette(
                x, codes, max_rows=C.check_max_rows(max_rows), seed=seed
            )
    return evaluate_groupwise(
        ClusteringWindow(k, reason, smoothing),
        cols,
        attributes,
        specs,
        fair_ranges=fair_ranges_of(SPECS, fair_ranges, family="clustering"),
        confidence=confidence,
        min_samples=min_samples,
        n_resamples=n_resamples,
        seed=seed,
        adjust=adjust,
        family_size=family_size,
    )
