"""The clustering metrics: facts beside computation.

Statistics read a side's rows (``cluster`` codes and the window-level ``_distance`` to the
nearest centre and ``_silhouette``, computed once on all rows) and the window's constants
from a :class:`ClusteringWindow`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from metrics_core.clustering import kernels as C
from metrics_core.core.spec import FairRange, Input, MetricSpec
from metrics_core.core.types import BoolArray, Data, FloatArray
from metrics_core.core.undefined import Undefined
from metrics_core.engine.cells import Cells, cell_bootstrap
from metrics_core.engine.groupwise import Resampling
from metrics_core.stats.distances import kl_divergence_counts, total_variation_counts
from metrics_core.stats.intervals import normal_interval
from metrics_core.stats.moments import fieller_interval, mean_and_variance
from metrics_core.window.groups import BACKGROUND, REST
from metrics_core.window.pairs import GroupPair

__all__ = ["SPECS", "ClusteringWindow"]

_CLUSTER: frozenset[Input] = frozenset({"cluster"})
_GEOMETRY: frozenset[Input] = frozenset({"cluster", "features"})
_PER_CLUSTER = ("rows per cluster of the window, on the smaller side",)
_FOUR_FIFTHS = "four-fifths rule applied to a ratio, 1.25 = 1/0.8 keeps it symmetric (holisticai documentation prints [0.8, 1.2])"
_PINSKER = (
    "fairwatch choice: no range in holisticai; by Pinsker's inequality TV <= sqrt(KL/2), so KL <= 0.02 "
    "keeps the total variation within its 0.1 bound"
)

Statistic = Callable[["ClusteringWindow", Data, Data], float]


@dataclass(frozen=True)
class ClusteringWindow:
    """Constants of one window: the number of clusters, why silhouettes are missing, the KL smoothing."""

    n_clusters: int
    silhouette_reason: str | None
    smoothing: float

    def counts(self, d: Data) -> FloatArray:
        return C.cluster_counts(np.asarray(d["cluster"], np.int64), self.n_clusters)


def _rows(w: ClusteringWindow, g: Data, r: Data) -> float:
    return float(min(np.asarray(g["cluster"]).size, np.asarray(r["cluster"]).size))


def _scored_rows(w: ClusteringWindow, g: Data, r: Data) -> float:
    return float(min(np.count_nonzero(~np.isnan(np.asarray(d["_silhouette"], np.float64))) for d in (g, r)))


def _per_cluster(w: ClusteringWindow, g: Data, r: Data) -> float:
    # k estimated shares per side: each needs rows, so the support is rows per cluster
    return min(np.asarray(d["cluster"]).size for d in (g, r)) / max(w.n_clusters, 1)


def _social_fairness_ratio(w: ClusteringWindow, g: Data, r: Data) -> float:
    return C.ratio_of_means(np.asarray(g["_distance"], np.float64), np.asarray(r["_distance"], np.float64))


def _silhouette_difference(w: ClusteringWindow, g: Data, r: Data) -> float:
    if w.silhouette_reason is not None:
        raise Undefined(w.silhouette_reason)
    return C.mean_difference(
        np.asarray(g["_silhouette"], np.float64), np.asarray(r["_silhouette"], np.float64)
    )


def _fieller_distance(
    w: ClusteringWindow, g: Data, r: Data, level: float, resampling: Resampling
) -> tuple[float, float]:
    """Fieller's interval of the ratio of the two sides' mean distances (centres held fixed)."""
    m_g, v_g, _ = mean_and_variance(np.asarray(g["_distance"], np.float64))
    m_r, v_r, _ = mean_and_variance(np.asarray(r["_distance"], np.float64))
    return fieller_interval(m_g, v_g, m_r, v_r, level=level, lower_bound=0.0)


def _welch_silhouette(
    w: ClusteringWindow, g: Data, r: Data, level: float, resampling: Resampling
) -> tuple[float, float]:
    """Welch's normal interval of the difference of mean silhouettes (silhouettes held fixed)."""
    sides = [np.asarray(d["_silhouette"], np.float64) for d in (g, r)]
    (m_g, v_g, _), (m_r, v_r, _) = (mean_and_variance(s[~np.isnan(s)]) for s in sides)
    lo, hi = normal_interval(m_g - m_r, v_g + v_r, level=level, bounds=(-2.0, 2.0))
    return float(lo), float(hi)


def _of_counts(kernel: Callable[[FloatArray, FloatArray], float]) -> Statistic:
    """A statistic of the two sides' counts per cluster."""

    def statistic(w: ClusteringWindow, g: Data, r: Data) -> float:
        return kernel(w.counts(g), w.counts(r))

    return statistic


def _cells_of(
    kernel: Callable[[FloatArray, FloatArray], float],
) -> Callable[[ClusteringWindow, Data, Data], Cells]:
    """The two sides' counts per cluster, for the bootstrap of a statistic of them."""

    def cells(w: ClusteringWindow, g: Data, r: Data) -> Cells:
        return Cells(w.counts(g), w.counts(r), kernel)

    return cells


def _kl_of(w: ClusteringWindow) -> Callable[[FloatArray, FloatArray], float]:
    return partial(kl_divergence_counts, smoothing=w.smoothing)


def _kl(w: ClusteringWindow, g: Data, r: Data) -> float:
    return _kl_of(w)(w.counts(g), w.counts(r))


def _kl_cells(w: ClusteringWindow, g: Data, r: Data) -> Cells:
    return _cells_of(_kl_of(w))(w, g, r)


def _balance_all_groups(w: ClusteringWindow, data: Data, pairs: Sequence[GroupPair]) -> float:
    """Groups of the attribute: every monitored group and a named reference group (not rest/background)."""
    masks: dict[str, BoolArray] = {}
    universe = np.zeros(np.asarray(data["cluster"]).size, dtype=bool)
    for p in pairs:
        masks[p.group] = p.group_rows
        if p.reference not in (REST, BACKGROUND):
            masks[p.reference] = p.reference_rows
        universe |= p.group_rows | p.reference_rows
    codes = np.asarray(data["cluster"], np.int64)
    k = int(codes.max()) + 1 if codes.size else 0
    return C.balance_of(
        [C.cluster_counts(codes[m], k) for m in masks.values()], C.cluster_counts(codes[universe], k)
    )


def _distribution_spec(
    statistic: Statistic,
    cells: Callable[[ClusteringWindow, Data, Data], Cells],
    *,
    name: str,
    ideal: float | None,
    fair_range: FairRange | None,
    source: str,
    meaning: str,
    formula: str,
    bounds: tuple[float, float],
) -> MetricSpec:
    """A distance or minimum over clusters: basic bootstrap of the counts per cluster (its plug-in bias
    would shift a percentile interval)."""
    return MetricSpec(
        name=name,
        family="clustering",
        requires=_CLUSTER,
        ideal=ideal,
        fair_range=fair_range,
        source=source,
        meaning=meaning,
        formula=formula,
        interval="bootstrap",
        support=_PER_CLUSTER,
        statistic=statistic,
        ci=cell_bootstrap(cells, bounds=bounds),
        count_support=_per_cluster,
    )


SPECS: list[MetricSpec] = [
    MetricSpec(
        name="social_fairness_ratio",
        family="clustering",
        requires=_GEOMETRY,
        ideal=1.0,
        fair_range=FairRange(0.8, 1.25),
        source=_FOUR_FIFTHS,
        meaning="above 1: the group's rows lie farther from their nearest cluster centre than the reference's",
        formula="mean_{x in G} min_c ||x - mu_c|| / mean_{x in R} min_c ||x - mu_c||, mu_c = window mean of "
        "cluster c unless centers are given",
        interval="fieller",
        support=("rows, on the smaller side",),
        statistic=_social_fairness_ratio,
        ci=_fieller_distance,
        count_support=_rows,
    ),
    MetricSpec(
        name="silhouette_difference",
        family="clustering",
        requires=_GEOMETRY,
        ideal=0.0,
        fair_range=FairRange(-0.1, 0.1),
        source="fairwatch choice: holisticai lists only the value range [-1, 1]; 0.1 is 5% of the silhouette's "
        "span, as the 0.1 bound of rate differences",
        meaning="negative: the group's rows fit their clusters worse than the reference's",
        formula="mean silhouette(G) - mean silhouette(R), silhouettes of the window (a seeded subsample of "
        "max_rows rows above that); holisticai's code halves it",
        interval="normal",
        support=("rows with a silhouette, on the smaller side",),
        statistic=_silhouette_difference,
        ci=_welch_silhouette,
        count_support=_scored_rows,
    ),
    _distribution_spec(
        _of_counts(C.pair_balance),
        _cells_of(C.pair_balance),
        name="cluster_balance",
        ideal=1.0,
        fair_range=FairRange(0.8, 1.0),
        source="fairwatch choice: holisticai lists only the value range [0, 1]; the four-fifths rule per cluster "
        "(every share within a factor 1.25 of the overall share)",
        meaning="below 1: some cluster over- or under-represents the group or its reference relative to their "
        "shares of G and R together",
        formula="min over clusters c and g in {G, R} of min(r, 1/r), r = (n_gc / n_c) / (n_g / n), counted in G and R",
        bounds=(0.0, 1.0),
    ),
    _distribution_spec(
        _of_counts(C.min_ratio_of),
        _cells_of(C.min_ratio_of),
        name="min_cluster_ratio",
        ideal=None,
        fair_range=None,
        source="informational: equals n_G / n_R, not 1, when every cluster has the window's composition, so a "
        "fixed range would flag every pair of unequal groups (cluster_balance is the size-free version)",
        meaning="the group's smallest head count relative to the reference's in any cluster",
        formula="min over clusters with reference rows of n_Gc / n_Rc",
        bounds=(0.0, math.inf),
    ),
    _distribution_spec(
        _of_counts(total_variation_counts),
        _cells_of(total_variation_counts),
        name="cluster_distribution_total_variation",
        ideal=0.0,
        fair_range=FairRange(0.0, 0.1),
        source="fairwatch choice (metrics.md section 4): holisticai lists only the value range [0, 1]",
        meaning="the share of the group's rows that would have to change cluster to match the reference's spread",
        formula="0.5 * sum_c |p_G(c) - p_R(c)|, p_g = distribution of g's rows over the window's clusters",
        bounds=(0.0, 1.0),
    ),
    _distribution_spec(
        _kl,
        _kl_cells,
        name="cluster_distribution_kl_divergence",
        ideal=0.0,
        fair_range=FairRange(0.0, 0.02),
        source=_PINSKER,
        meaning="how unlike the reference's spread over clusters the group's is (0: same distribution)",
        formula="sum_c p_G(c) ln(p_G(c) / p_R(c)), counts smoothed by 0.5 per cluster of the window",
        bounds=(0.0, math.inf),
    ),
    MetricSpec(
        name="cluster_balance_all_groups",
        family="clustering",
        level="model",
        requires=_CLUSTER,
        ideal=1.0,
        fair_range=None,
        source="informational model-level summary (holisticai's cluster balance over all groups of the "
        "attribute); the per-group cluster_balance carries the fair range",
        meaning="the worst representation of any group in any cluster relative to its overall share",
        formula="min over groups g and clusters c of min(r, 1/r), r = (n_gc / n_c) / (n_g / n) over the "
        "attribute's rows",
        interval="none",
        statistic=_balance_all_groups,
    ),
]
