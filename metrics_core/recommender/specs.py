"""The recommender metrics: facts beside computation.

Group metrics compare a user group's recommendations with its reference's; model-level
values describe the whole window. Every statistic reads the window's constants from a
:class:`RecommenderWindow` and a side's log rows (keys ``user``, ``item``, ``_rec`` - whether
the row counts as a recommendation after binarisation - and the optional ``y_score``,
``y_true``, ``n_relevant``, ``item_popularity``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from metrics_core.core.spec import FairRange, Input, MetricSpec
from metrics_core.core.types import BoolArray, Data, FloatArray
from metrics_core.core.undefined import Undefined
from metrics_core.engine.cells import Cells, cell_bootstrap
from metrics_core.engine.groupwise import Resampling
from metrics_core.recommender import kernels as K
from metrics_core.recommender.witness import Witness, deal_folds, kl_witness, tv_witness, witness_bound
from metrics_core.stats.distances import kl_divergence_counts, total_variation_counts
from metrics_core.stats.intervals import z_value
from metrics_core.window.pairs import GroupPair

__all__ = ["BINARISED", "SPECS", "RecommenderWindow"]

_HOLISTIC = "holisticai documentation (fair area)"
_FOUR_FIFTHS = "four-fifths rule applied to a ratio, 1.25 = 1/0.8 keeps it symmetric (holisticai documentation prints [0.8, 1.2])"
_TV_SOURCE = "fairwatch choice (metrics.md section 4): holisticai lists only the value range [0, 1]"
_KL_SOURCE = (
    "fairwatch choice: holisticai lists only [0, inf]; by Pinsker's inequality TV <= sqrt(KL/2), "
    "so KL <= 0.02 keeps the total variation within its 0.1 bound"
)
_INFO = "informational (metrics.md section 4): no meaningful fair range"
_ITEMS: frozenset[Input] = frozenset({"user", "item"})
_RELEVANCE: frozenset[Input] = frozenset({"user", "item", "y_true"})
_PER_ITEM = ("recommendations per recommended item of the window, on the smaller side",)
_USERS = ("users with a defined value, on the smaller side",)


@dataclass(frozen=True)
class RecommenderWindow:
    """Constants of one window: the items recommended in it, the KL smoothing, the catalogue size."""

    support_items: BoolArray  # by item code: recommended to someone in the window
    smoothing: float
    n_items: int | None

    @property
    def n_support(self) -> int:
        return max(int(self.support_items.sum()), 1)

    def exposure(self, d: Data) -> FloatArray:
        return K.exposure_counts(K.side_of(d), self.support_items)


def _per_item(w: RecommenderWindow, g: Data, r: Data) -> float:
    # recommendations per recommended item of the window, on the smaller side: the distance
    # between two m-item distributions is noise until each holds many per item
    return min(float(np.count_nonzero(d["_rec"])) / w.n_support for d in (g, r))


def _scored_users(w: RecommenderWindow, g: Data, r: Data) -> float:
    scored = [np.asarray(d["user"])[~np.isnan(np.asarray(d["y_score"], np.float64))] for d in (g, r)]
    return float(min(np.unique(u).size for u in scored))


def _mean_score_difference(w: RecommenderWindow, g: Data, r: Data) -> float:
    return K.mean_score_difference(K.side_of(g), K.side_of(r))


def _exposure_tv(w: RecommenderWindow, g: Data, r: Data) -> float:
    return _tv_of(w, w.exposure(g), w.exposure(r))


def _exposure_kl(w: RecommenderWindow, g: Data, r: Data) -> float:
    return _kl_of(w, w.exposure(g), w.exposure(r))


def _scores_cells(w: RecommenderWindow, g: Data, r: Data) -> Cells:
    def sums(d: Data) -> FloatArray:
        side = K.side_of(d)
        if side.y_score is None:
            raise Undefined("no score column (y_score)")
        scored = ~np.isnan(side.y_score)
        return K.user_sums(side, {"score": np.where(scored, side.y_score, 0.0), "rows": scored.astype(float)})

    def difference(s_g: FloatArray, s_r: FloatArray) -> float:
        what = "scored row"
        return K.mean_of_sums(s_g, "group", what) - K.mean_of_sums(s_r, "reference", what)

    return K.user_cells(sums(g), sums(r), difference)


def _t_value(level: float, df: float) -> float:
    """Student's t quantile of a two-sided ``level`` (the normal's for infinite ``df``); scipy.stats
    imported here, when an exposure interval is computed: it costs every process 0.5 s to import."""
    if not math.isfinite(df):
        return z_value(level)
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2, df))


def _exposure_interval(
    distance: Callable[[RecommenderWindow, FloatArray, FloatArray], float],
    witness: Callable[[RecommenderWindow], Witness],
    top: float,
) -> Callable[[RecommenderWindow, Data, Data, float, Resampling], tuple[float, float]]:
    """The exposure distances' ``ci``: held-out witness lower end, plug-in percentile upper end.

    Each end is one-sided at ``(1 - level) / 2``:

    - lower: the held-out witness bound (:mod:`metrics_core.recommender.witness`) minus ``z``
      standard errors - an unbiased estimate of a value at or below the true distance, so a
      model exactly on the fair range's bound reads ``violation`` at most ``(1 - level) / 2`` of
      the time however sparse the exposure;
    - upper: the percentile bound of the plug-in distance over the user bootstrap; the plug-in
      is biased upward (a distance is convex in the two distributions: Jensen), so this end errs
      high, not low.

    Clipped to ``[0, top]`` (the lower end also to at most the upper); NaN when either end is
    undefined, e.g. a side with fewer than ``2 * FOLDS`` users with a recommendation. The
    reported value stays the plug-in (holisticai's); the interval is not centred on it and, on
    sparse windows, lies mostly below it.
    """

    def interval(
        w: RecommenderWindow, g: Data, r: Data, level: float, resampling: Resampling
    ) -> tuple[float, float]:
        g_, r_ = (K.user_exposure(K.side_of(d), w.support_items) for d in (g, r))
        try:
            bound, se, df = witness_bound(g_, r_, witness(w), deal_folds(g_, r_, resampling.seed))
        except Undefined:  # too few users with a recommendation on a side
            return math.nan, math.nan
        quantile = _t_value(level, df)
        lo = bound - quantile * se
        plugin = K.user_cells(g_, r_, lambda e_g, e_r: distance(w, e_g, e_r))
        _, hi = cell_bootstrap(lambda *_: plugin)(w, g, r, level, resampling)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return math.nan, math.nan
        hi = min(max(hi, 0.0), top)
        return min(max(lo, 0.0), hi), hi

    return interval


def _tv_of(w: RecommenderWindow, e_g: FloatArray, e_r: FloatArray) -> float:
    return total_variation_counts(e_g, e_r)


def _kl_of(w: RecommenderWindow, e_g: FloatArray, e_r: FloatArray) -> float:
    return kl_divergence_counts(e_g, e_r, smoothing=w.smoothing)


def _rate_ratio(rate: str) -> MetricSpec:
    def statistic(w: RecommenderWindow, g: Data, r: Data) -> float:
        return K.average_rate_ratio(K.side_of(g), K.side_of(r), rate)

    def ratio(s_g: FloatArray, s_r: FloatArray) -> float:
        what = f"user with a defined {rate}"
        m_g, m_r = K.mean_of_sums(s_g, "group", what), K.mean_of_sums(s_r, "reference", what)
        if m_r == 0:
            raise Undefined(f"the reference's average {rate} is 0")
        return m_g / m_r

    def cells(w: RecommenderWindow, g: Data, r: Data) -> Cells:
        g_, r_ = (K.user_rate_sums(K.side_of(d), rate) for d in (g, r))
        return K.user_cells(g_, r_, ratio)

    def users(w: RecommenderWindow, g: Data, r: Data) -> float:
        return float(min(np.count_nonzero(~np.isnan(K.user_rates(K.side_of(d))[rate])) for d in (g, r)))

    hits = {"precision": "recommended", "recall": "relevant", "f1": "(recommended + relevant)"}[rate]
    meaning = {
        "precision": "below 1: a smaller share of the group's recommendations are relevant than of the reference's",
        "recall": "below 1: the group's users find a smaller share of their relevant items than the reference's",
        "f1": "below 1: recommendations serve the group's users worse (precision and recall together)",
    }[rate]
    return MetricSpec(
        name=f"recommender_avg_{rate}_ratio",
        family="recommender",
        requires=_RELEVANCE,
        ideal=1.0,
        fair_range=FairRange(0.8, 1.25),
        source=_FOUR_FIFTHS,
        meaning=meaning,
        formula=f"mean over G's users of {'2 ' if rate == 'f1' else ''}hits/{hits}, over the same mean for R",
        interval="bootstrap",
        support=_USERS,
        statistic=statistic,
        ci=cell_bootstrap(cells),
        count_support=users,
    )


# --- model level: the whole window's recommendations --------------------------------------------


def _item_counts(w: RecommenderWindow, data: Data) -> FloatArray:
    item = np.asarray(data["item"], np.int64)
    m = int(item.max()) + 1 if item.size else 0
    return K.item_counts(item, np.asarray(data["_rec"], dtype=bool), m if w.n_items is None else w.n_items)


def _window_statistic(kernel: Callable[[FloatArray], float]) -> Callable[..., float]:
    def statistic(w: RecommenderWindow, data: Data, pairs: Sequence[GroupPair]) -> float:
        return kernel(_item_counts(w, data))

    return statistic


def _popularity(w: RecommenderWindow, data: Data, pairs: Sequence[GroupPair]) -> float:
    user, item = np.asarray(data["user"], np.int64), np.asarray(data["item"], np.int64)
    pop = np.asarray(data["item_popularity"], np.float64) if "item_popularity" in data else None
    return K.popularity_of(user, item, np.asarray(data["_rec"], dtype=bool), pop)


def _model(
    statistic: Callable[..., float], *, name: str, ideal: float | None, meaning: str, formula: str
) -> MetricSpec:
    return MetricSpec(
        name=name,
        family="recommender",
        level="model",
        requires=_ITEMS,
        ideal=ideal,
        fair_range=None,
        source=_INFO,
        meaning=meaning,
        formula=formula,
        interval="none",
        statistic=statistic,
    )


SPECS: list[MetricSpec] = [
    MetricSpec(
        name="recommender_mean_score_difference",
        family="recommender",
        requires=frozenset({"user", "y_score"}),
        ideal=0.0,
        fair_range=FairRange(-0.1, 0.1),
        source=_HOLISTIC + "; assumes scores on a [0, 1] scale",
        meaning="negative: the group's users receive lower recommender scores than the reference's",
        formula="mean(y_score | G) - mean(y_score | R), over logged rows with a score (holisticai mad_score)",
        interval="bootstrap",
        support=("users with a scored row, on the smaller side",),
        statistic=_mean_score_difference,
        ci=cell_bootstrap(_scores_cells),
        count_support=_scored_users,
    ),
    MetricSpec(
        name="exposure_total_variation",
        family="recommender",
        requires=_ITEMS,
        ideal=0.0,
        fair_range=FairRange(0.0, 0.1),
        source=_TV_SOURCE,
        meaning="the share of the group's recommendations that would have to move to other items to match "
        "the reference's",
        formula="0.5 * sum_i |e_G(i) - e_R(i)|, e = distribution over items of the recommendations",
        interval="witness",
        support=_PER_ITEM,
        statistic=_exposure_tv,
        ci=_exposure_interval(_tv_of, lambda w: tv_witness, 1.0),
        count_support=_per_item,
    ),
    MetricSpec(
        name="exposure_kl_divergence",
        family="recommender",
        requires=_ITEMS,
        ideal=0.0,
        fair_range=FairRange(0.0, 0.02),
        source=_KL_SOURCE,
        meaning="how unlike the reference's item exposure the group's is (0: same distribution)",
        formula="sum_i e_G(i) ln(e_G(i) / e_R(i)), counts smoothed by 0.5 per recommended item of the window",
        interval="witness",
        support=_PER_ITEM,
        statistic=_exposure_kl,
        ci=_exposure_interval(_kl_of, lambda w: kl_witness(w.smoothing), math.inf),
        count_support=_per_item,
    ),
    *(_rate_ratio(rate) for rate in K.RATES),
    _model(
        _window_statistic(K.aggregate_diversity_of),
        name="aggregate_diversity",
        ideal=1.0,
        meaning="share of the catalogue recommended to at least one user in the window",
        formula="|items recommended| / |items| (catalogue: n_items, else the items in the log)",
    ),
    _model(
        _window_statistic(K.gini_of),
        name="exposure_gini_index",
        ideal=0.0,
        meaning="inequality of item exposure: 0 every item recommended equally often, 1 one item takes all",
        formula="sum_i (2i - n - 1) f_(i) / (n - 1), f sorted exposure shares of the n catalogue items",
    ),
    _model(
        _window_statistic(K.entropy_of),
        name="exposure_entropy",
        ideal=None,
        meaning="spread of the recommendations over items (natural log; at most ln(number of items))",
        formula="-sum_i e(i) ln e(i), e = distribution over items of the recommendations",
    ),
    _model(
        _popularity,
        name="average_recommendation_popularity",
        ideal=None,
        meaning="how popular the recommended items are: mean over users of their items' popularity",
        formula="mean over users of mean_{i in L_u} pop(i), pop = number of users i was recommended to",
    ),
]
#: The metrics that read the binarised recommendations (top-k or a score threshold).
BINARISED = frozenset(s.name for s in SPECS) - {"recommender_mean_score_difference"}
