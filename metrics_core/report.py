"""Evaluate the registry's metrics for every comparison of a window, with intervals and states.

:func:`evaluate` is the library's main entry: a :class:`~metrics_core.ScoreTable` and the
comparisons (group vs reference) in, a :class:`Report` out. A model that logs classes
instead of scores is evaluated from a table whose "scores" are its predicted classes
(``has_scores=False``): the threshold metrics are the same, the ranking metrics are
skipped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from metrics_core import classification as cls
from metrics_core._auc import Side, auc_delong, complement_side, grid_for
from metrics_core._results import Comparison, MetricValue, ModelValue, Report
from metrics_core._tables import NEG, POS, GroupCounts, ScoreTable
from metrics_core.inequality import generalized_entropy_from_counts
from metrics_core.intervals import (
    judge,
    katz_log_interval,
    newcombe_interval,
    normal_interval,
    poisson_bootstrap_interval,
    wilson_interval,
)
from metrics_core.ranking import power_mean
from metrics_core.registry import FairRange, MetricSpec, get_metric, resolve_fair_range

__all__ = ["Comparison", "MetricValue", "ModelValue", "Report", "evaluate"]

FloatArray = NDArray[np.float64]
DEFAULT_MIN_SAMPLES = 30


@dataclass
class _Pair:
    """A comparison's counts, prepared once and shared by every metric."""

    comparison: Comparison
    group: GroupCounts
    group_side: Side
    reference_side: Side
    cells: FloatArray  # (2, 2, 3): side x prediction x label
    moments: FloatArray  # (2, 3): side x (n, sum, sum of squares) of scores


class _Window:
    """Per-universe dense counts and cumulative sums of a table, computed once."""

    def __init__(self, table: ScoreTable, threshold: float) -> None:
        self.table = table
        self.cut = int(np.searchsorted(table.scores, threshold, side="left"))
        self.score_sd = _score_sd(table)
        self._universes: dict[tuple[str, ...] | None, tuple[FloatArray, FloatArray]] = {}
        self._universe_moments: dict[tuple[str, ...] | None, FloatArray] = {}

    def universe(self, keys: tuple[str, ...] | None) -> tuple[FloatArray, FloatArray]:
        if keys not in self._universes:
            t = self.table
            if keys is None:  # the table's own cumulative counts: computed once, in integers
                dense, cum = t.counts, t.cumulative
            else:
                dense = t.union(keys).dense(t.n_scores)
                cum = np.concatenate([np.zeros((1, 3)), np.cumsum(dense, axis=0)])
            self._universes[keys] = (dense, cum)
        return self._universes[keys]

    def universe_moments(self, keys: tuple[str, ...] | None) -> FloatArray:
        # once per universe: recomputing them per comparison costs O(window) per group
        if keys not in self._universe_moments:
            dense, _ = self.universe(keys)
            self._universe_moments[keys] = _moments(self.table.scores, dense)
        return self._universe_moments[keys]

    def pair(self, comp: Comparison) -> _Pair:
        t = self.table
        g = t.group(comp.key)
        split = int(np.searchsorted(g.ids, self.cut))  # ids increase: predicted positives are a suffix
        g_cells = np.stack([g.counts[:split].sum(0), g.counts[split:].sum(0)])
        g_mom = _moments(t.scores[g.ids], g.counts)
        if comp.reference_key is None:
            dense, cum = self.universe(comp.universe)
            grid, (g_side,) = grid_for(g)
            r_side = complement_side(grid, g.counts, dense, cum)
            u_cells = np.stack([cum[self.cut], cum[-1] - cum[self.cut]])
            r_cells = u_cells - g_cells
            r_mom = self.universe_moments(comp.universe) - g_mom
        else:
            r = t.group(comp.reference_key)
            grid, (g_side, r_side) = grid_for(g, r)
            split_r = int(np.searchsorted(r.ids, self.cut))
            r_cells = np.stack([r.counts[:split_r].sum(0), r.counts[split_r:].sum(0)])
            r_mom = _moments(t.scores[r.ids], r.counts)
        return _Pair(comp, g, g_side, r_side, np.stack([g_cells, r_cells]), np.stack([g_mom, r_mom]))


def _score_sd(table: ScoreTable) -> float:
    """Sample standard deviation of every score of the window (rows with or without a label).

    Two passes over scores shifted by the smallest one, so that a window of equal scores
    gets exactly 0 (the one-pass ``E[s^2] - E[s]^2`` leaves rounding noise of ~1e-9 there).
    """
    w = table.counts.sum(axis=1)
    n = float(w.sum())
    if n < 2:
        return math.nan
    d = table.scores - table.scores[0]
    centred = d - float(np.einsum("i,i->", w, d)) / n
    return math.sqrt(float(np.einsum("i,i->", w, centred**2)) / (n - 1))


def _moments(scores: FloatArray, counts: FloatArray) -> FloatArray:
    w = counts.sum(axis=1)
    # einsum, not `@`: a threaded BLAS dot can stall for milliseconds when the other core is busy
    return np.array([w.sum(), np.einsum("i,i->", w, scores), np.einsum("i,i->", w, scores**2)])


def evaluate(
    table: ScoreTable,
    comparisons: Sequence[Comparison],
    *,
    metrics: Iterable[str] | None = None,
    threshold: float = 0.5,
    has_scores: bool = True,
    confidence: float = 0.95,
    fair_ranges: Mapping[str, Iterable[float | None]] | None = None,
    min_samples: float = DEFAULT_MIN_SAMPLES,
    power: float = -5.0,
    n_resamples: int = 400,
    seed: int = 0,
) -> Report:
    """Compute, bound and judge every requested metric for every comparison.

    Parameters
    ----------
    table : ScoreTable
        The window's sufficient statistics.
    comparisons : sequence of Comparison
        Group vs reference pairs; their keys name groups of ``table``.
    metrics : iterable of str, optional
        Registry names (aliases accepted); default: every metric computable from the
        inputs (``has_scores``).
    threshold : float
        ŷ = 1 iff score >= threshold.
    has_scores : bool
        False when the table's scores are predicted classes: ranking metrics are skipped.
    confidence : float
        Two-sided level of every interval.
    fair_ranges : mapping of metric name to (min, max), optional
        Absolute overrides of the registry's default fair ranges (``None`` = open end).
    min_samples : float
        A value whose smallest denominator is below this is ``insufficient_data``.
    power : float
        Exponent of the Jigsaw power means.
    n_resamples, seed : int
        Poisson bootstrap settings for metrics without an analytic interval.

    Examples
    --------
    >>> t = ScoreTable.from_arrays([0.9, 0.8, 0.3, 0.7, 0.2, 0.1], [1, 0, 0, 1, 1, 0],
    ...                            {"g": [True, True, True, False, False, False]})
    >>> r = evaluate(t, [Comparison("identity", "g", "g")], metrics=["statistical_parity_difference"],
    ...              min_samples=1)
    >>> v = r.get("statistical_parity_difference", "g")
    >>> round(v.value, 4), v.state
    (0.3333, 'inconclusive')
    """
    specs = _select(metrics, has_scores)
    window = _Window(table, threshold)
    pairs = [window.pair(c) for c in comparisons]
    cells = np.stack([p.cells for p in pairs]) if pairs else np.zeros((0, 2, 2, 3))

    model: list[ModelValue] = []
    overall: dict[str, float] = {}
    if has_scores:
        overall_auc = _overall_auc(table, confidence)
        model.append(overall_auc)
        overall["overall_auc"] = overall_auc.value
    values: list[MetricValue] = []
    by_metric: dict[str, list[MetricValue]] = {}
    for spec in specs:
        if spec.level != "group":
            continue
        est, lo, hi, support, reasons = _compute(
            spec, pairs, cells, window.score_sd, confidence, n_resamples, seed
        )
        rng = resolve_fair_range(spec.name, fair_ranges)
        fmin, fmax = _bounds(rng, overall)
        states = judge(est, lo, hi, fmin, fmax, support=support, min_samples=min_samples)
        rows = [
            MetricValue(
                attribute=p.comparison.attribute,
                group=p.comparison.group,
                reference=p.comparison.reference,
                metric=spec.name,
                value=float(est[i]),
                ci_lower=float(lo[i]),
                ci_upper=float(hi[i]),
                fair_min=fmin,
                fair_max=fmax,
                state=str(states[i]),
                n_group=float(p.cells[0].sum()),
                n_reference=float(p.cells[1].sum()),
                support=float(support[i]),
                reason=reasons[i] if np.isnan(est[i]) else None,
            )
            for i, p in enumerate(pairs)
        ]
        by_metric[spec.name] = rows
        values.extend(rows)
    model.extend(_model_values(specs, table, window, by_metric, overall, power))
    coverage = {p.comparison.key: _coverage(p.cells[0]) for p in pairs}
    return Report(tuple(values), tuple(model), coverage)


_DEPENDS = {
    "power_mean_subgroup_auc": ("subgroup_auc",),
    "power_mean_bpsn_auc": ("bpsn_auc",),
    "power_mean_bnsp_auc": ("bnsp_auc",),
    "jigsaw_final_score": ("subgroup_auc", "bpsn_auc", "bnsp_auc"),
}


def _select(metrics: Iterable[str] | None, has_scores: bool) -> list[MetricSpec]:
    if metrics is None:
        from metrics_core.registry import BINARY_FAMILIES, REGISTRY

        chosen = [m for m in REGISTRY.values() if m.family in BINARY_FAMILIES]
    else:
        chosen = list(dict.fromkeys(get_metric(m) for m in metrics))
        # a model-level summary needs its per-group inputs: they are computed and reported too
        needed = [get_metric(dep) for m in chosen for dep in _DEPENDS.get(m.name, ())]
        chosen = list(dict.fromkeys(chosen + needed))
    if has_scores:
        return chosen
    return [m for m in chosen if "y_score" not in m.requires]


def _bounds(rng: FairRange | None, overall: Mapping[str, float]) -> tuple[float, float]:
    if rng is None:
        return -math.inf, math.inf
    return rng.resolve(overall)


def _coverage(group_cells: FloatArray) -> float:
    total = group_cells.sum()
    return float(group_cells[..., [NEG, POS]].sum() / total) if total > 0 else math.nan


_UNSIGNED = ("average_abs_odds_difference", "equalized_odds_difference")
_SET_TEXT = {"+": "positive labels", "-": "negative labels"}


def _set_counts(pair: _Pair, name: str) -> tuple[FloatArray, FloatArray | None]:
    side = pair.group_side if name.startswith("group") else pair.reference_side
    return side.column(POS if name.endswith("+") else NEG)


def _compute(
    spec: MetricSpec,
    pairs: Sequence[_Pair],
    cells: FloatArray,
    window_sd: float,
    level: float,
    n_resamples: int,
    seed: int,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, list[str]]:
    """Estimates, interval bounds, support and NaN reasons of one metric for all pairs."""
    n = len(pairs)
    if spec.computation == "auc":
        return _compute_auc(spec, pairs, level)
    support, reasons = _rate_support(spec, cells)
    kind = spec.computation
    if kind == "standardized_mean_difference":
        est, lo, hi, why = _smd(pairs, window_sd, level)
        return est, lo, hi, support, [r or why[i] for i, r in enumerate(reasons)]
    if kind == "rate":
        assert spec.rate is not None
        est, num, den = cls.rate(cells, spec.rate)
        lo, hi = wilson_interval(num, den, level=level)
    elif kind in ("rate_difference", "rate_ratio"):
        assert spec.rate is not None
        _, k1, n1 = cls.rate(cells, spec.rate, 0)
        _, k2, n2 = cls.rate(cells, spec.rate, 1)
        if kind == "rate_difference":
            est = cls.rate_difference(cells, spec.rate)
            lo, hi = newcombe_interval(k1, n1, k2, n2, level=level)
        else:
            est = cls.rate_ratio(cells, spec.rate)
            lo, hi = katz_log_interval(k1, n1, k2, n2, level=level)
            reasons = [r or "reference rate is 0: the ratio is undefined" for r in reasons]
    elif kind == "four_fifths_ratio":
        est = cls.four_fifths_ratio(cells)
        _, k1, n1 = cls.rate(cells, "selection_rate", 0)
        _, k2, n2 = cls.rate(cells, "selection_rate", 1)
        # min(x, 1/x) is the same for DI and 1/DI: where SR_R = 0 the interval of SR_R / SR_G serves
        di_lo, di_hi = katz_log_interval(k1, n1, k2, n2, level=level)
        inv_lo, inv_hi = katz_log_interval(k2, n2, k1, n1, level=level)
        use_inverse = np.isnan(di_lo) & ~np.isnan(inv_lo)
        lo, hi = _four_fifths_interval(
            np.where(use_inverse, inv_lo, di_lo), np.where(use_inverse, inv_hi, di_hi)
        )
        lo, hi = np.where(np.isnan(est), np.nan, lo), np.where(np.isnan(est), np.nan, hi)
        reasons = [r or "neither side selects anyone: the ratio is undefined" for r in reasons]
    elif kind == "average_odds_difference":
        est = cls.average_odds_difference(cells)
        lo, hi = normal_interval(est, cls.average_odds_variance(cells), level=level, bounds=(-1.0, 1.0))
    else:
        statistic = getattr(cls, kind)
        est = statistic(cells)
        lo, hi = poisson_bootstrap_interval(statistic, cells, level=level, n_resamples=n_resamples, seed=seed)
        if kind in _UNSIGNED:
            # |gap| is biased upward and so are its resamples: the basic interval moves against the
            # bias where the percentile interval would double it (and could exclude the estimate)
            lo, hi = np.clip(2 * est - hi, 0.0, 1.0), np.clip(2 * est - lo, 0.0, 1.0)
        reasons = [
            r or "pooled standard deviation is 0: both sides are all selected or all not" for r in reasons
        ]
    assert est.shape == (n,)
    return est, lo, hi, support, reasons


def _rate_support(spec: MetricSpec, cells: FloatArray) -> tuple[FloatArray, list[str]]:
    """Smallest denominator of each comparison and the first empty one, as a reason.

    A per-group rate depends on the group's denominator only; a comparison on both sides'.
    """
    n = cells.shape[0]
    support = np.full(n, np.inf)
    reasons = [""] * n
    sides = ((0, "group"),) if spec.computation == "rate" else ((0, "group"), (1, "reference"))
    for name in spec.support:
        r = cls.RATES[name]
        for side, who in sides:
            den = r.denominator(cells[:, side])
            support = np.minimum(support, den)
            for i in np.flatnonzero(den == 0):
                reasons[i] = reasons[i] or f"{who} has no {r.empty}"
    return support, reasons


def _four_fifths_interval(lo: FloatArray, hi: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Image of a disparate-impact interval under x -> min(x, 1/x) (increasing, then decreasing)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_lo, inv_hi = 1 / hi, np.where(lo > 0, 1 / lo, np.inf)
    below = hi <= 1
    above = lo >= 1
    out_lo = np.where(below, lo, np.where(above, inv_lo, np.minimum(lo, inv_lo)))
    out_hi = np.where(below, hi, np.where(above, inv_hi, 1.0))
    return out_lo, out_hi


def _compute_auc(
    spec: MetricSpec, pairs: Sequence[_Pair], level: float
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, list[str]]:
    assert spec.sets is not None
    n = len(pairs)
    est, var, support = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n)
    reasons = [""] * n
    x_name, y_name = spec.sets
    for i, pair in enumerate(pairs):
        x_at, x_gap = _set_counts(pair, x_name)
        y_at, y_gap = _set_counts(pair, y_name)
        sizes = {
            x_name: x_at.sum() + (0.0 if x_gap is None else x_gap.sum()),
            y_name: y_at.sum() + (0.0 if y_gap is None else y_gap.sum()),
        }
        support[i] = min(sizes.values())
        empty = [name for name, size in sizes.items() if size == 0]
        if empty:
            who, sign = empty[0][:-1], empty[0][-1]
            reasons[i] = f"{who} has no {_SET_TEXT[sign]}"
            continue
        est[i], var[i] = auc_delong(x_at, x_gap, y_at, y_gap)
        if np.isnan(var[i]):
            reasons[i] = "a single row on one side: no variance"
    lo, hi = normal_interval(est, var, level=level, bounds=(0.0, 1.0))
    off = spec.offset
    return est + off, lo + off, hi + off, support, reasons


def _smd(
    pairs: Sequence[_Pair], window_sd: float, level: float
) -> tuple[FloatArray, FloatArray, FloatArray, list[str]]:
    """Standardized mean difference of scores; the window sd is treated as known.

    The sd is that of *every* score of the window (``metrics.md``), not of G and R only:
    with a named reference or a categorical attribute with missing values, G and R do not
    cover the window.
    """
    mom = np.stack([p.moments for p in pairs]) if pairs else np.zeros((0, 2, 3))
    n, s, ss = mom[..., 0], mom[..., 1], mom[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = s / n
        var_side = np.maximum(ss / n - mean**2, 0.0) * n / (n - 1)
        sd_all = np.full(len(pairs), window_sd)
        est = np.where(sd_all > 0, (mean[:, 0] - mean[:, 1]) / sd_all, np.nan)
        variance = (var_side[:, 0] / n[:, 0] + var_side[:, 1] / n[:, 1]) / sd_all**2
    lo, hi = normal_interval(est, variance, level=level)
    why = ["all scores in the window are equal: no standard deviation"] * len(pairs)
    return est, lo, hi, why


def _overall_auc(table: ScoreTable, level: float) -> ModelValue:
    auc, var = auc_delong(table.counts[:, POS], None, table.counts[:, NEG], None)
    if np.isnan(auc):
        return ModelValue("overall_auc", math.nan, reason="the window does not have both labels")
    lo, hi = normal_interval(auc, var, level=level, bounds=(0.0, 1.0))
    return ModelValue("overall_auc", auc, ci_lower=float(lo), ci_upper=float(hi))


def _model_values(
    specs: Sequence[MetricSpec],
    table: ScoreTable,
    window: _Window,
    by_metric: Mapping[str, list[MetricValue]],
    overall: Mapping[str, float],
    power: float,
) -> list[ModelValue]:
    out: list[ModelValue] = []
    names = {s.name for s in specs}
    attributes = list(dict.fromkeys(v.attribute for rows in by_metric.values() for v in rows))
    means: dict[tuple[str, str], float] = {}
    for kind in ("subgroup", "bpsn", "bnsp"):
        rows = by_metric.get(f"{kind}_auc", [])
        for attr in attributes:
            vals = np.array([v.value for v in rows if v.attribute == attr])
            if vals.size:
                means[(kind, attr)] = power_mean(vals, p=power)
                if f"power_mean_{kind}_auc" in names:
                    reason = None if not np.isnan(means[(kind, attr)]) else "a group AUC is undefined"
                    out.append(ModelValue(f"power_mean_{kind}_auc", means[(kind, attr)], attr, reason=reason))
    if "jigsaw_final_score" in names and "overall_auc" in overall:
        for attr in attributes:
            parts = [means.get((k, attr), math.nan) for k in ("subgroup", "bpsn", "bnsp")]
            score = 0.25 * overall["overall_auc"] + 0.25 * sum(parts)
            out.append(
                ModelValue(
                    "jigsaw_final_score",
                    score,
                    attr,
                    reason=None if not math.isnan(score) else "a power mean is undefined",
                )
            )
    # column sums of row slices: a fancy-indexed (K, 2) copy of the counts costs ~5 ms at 1.8M rows
    below = table.counts[: window.cut].sum(0)[[NEG, POS]]
    above = table.counts[window.cut :].sum(0)[[NEG, POS]]
    # benefit b = ŷ - y + 1: 0 for a false negative, 1 when right, 2 for a false positive
    benefit_counts = np.array([below[1], below[0] + above[1], above[0]])
    no_benefit = (
        "no labeled rows"
        if benefit_counts.sum() == 0
        else "mean benefit is 0: every labeled row is a false negative"
    )
    for name, alpha in (("theil_index", 1.0), ("generalized_entropy_index", 2.0)):
        if name in names:
            value = generalized_entropy_from_counts(benefit_counts, alpha=alpha)
            out.append(ModelValue(name, value, reason=None if not math.isnan(value) else no_benefit))
    if "coefficient_of_variation" in names:
        ge2 = generalized_entropy_from_counts(benefit_counts, alpha=2.0)
        out.append(
            ModelValue(
                "coefficient_of_variation",
                math.sqrt(2 * ge2) if ge2 == ge2 else math.nan,
                reason=None if ge2 == ge2 else no_benefit,
            )
        )
    return out
