"""A binary model's window as its metrics read it: every comparison's counts, prepared once.

:class:`BinaryWindow` takes a :class:`~metrics_core.window.tables.ScoreTable` and the
comparisons to evaluate, and prepares for each comparison - once, shared by every metric:

- ``cells`` (shape ``(n, 2, 2, 3)``): side (G, R) x prediction (0, 1) x label (negative,
  positive, unlabeled), at the model's threshold;
- ``moments`` (shape ``(n, 2, 3)``): side x (rows, sum, sum of squares) of the scores;
- both sides laid out on the group's score grid, for the AUC kernel; AUCs of two row sets
  are computed on demand and cached, so a metric and its interval share one pass.

A model that logs classes instead of scores is a table whose "scores" are its predicted
classes (threshold 0.5): the threshold metrics are the same, the ranking metrics are skipped.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Self

import numpy as np

from metrics_core.binary import rates
from metrics_core.binary.rates import Favorable
from metrics_core.core.results import Comparison, ModelValue
from metrics_core.core.types import FloatArray
from metrics_core.engine.values import Side as Sides
from metrics_core.stats.auc import auc_delong, auc_score_interval
from metrics_core.stats.contrasts import Contrast, Method, contrast_interval
from metrics_core.window.grid import Side, complement_side, grid_for
from metrics_core.window.tables import NEG, POS, GroupCounts, ScoreTable

__all__ = ["AucEstimate", "BinaryWindow", "ConfusionWindow", "Pair"]

_SET_TEXT = {"+": "positive labels", "-": "negative labels"}


@dataclass(frozen=True)
class Pair:
    """A comparison's counts on both sides."""

    comparison: Comparison
    group: GroupCounts
    group_side: Side
    reference_side: Side
    cells: FloatArray  # (2, 2, 3): side x prediction x label
    moments: FloatArray  # (2, 3): side x (n, sum, sum of squares) of scores


@dataclass(frozen=True)
class AucEstimate:
    """AUCs of one pair of row sets for every comparison, with DeLong variances and support."""

    estimate: FloatArray
    variance: FloatArray  # DeLong's
    n_x: FloatArray  # rows in each set
    n_y: FloatArray
    support: FloatArray
    reasons: list[str]
    ties: FloatArray  # share of the (x, y) pairs with equal scores (on the grid), NaN where a set is empty


class ConfusionWindow:
    """Comparisons as confusion cells: all the threshold metrics need.

    ``cells`` has shape ``(n, 2, 2, 3)``: comparison x side (G, R) x prediction (0, 1) x label
    (negative, positive, unlabeled). Built directly from counts (a database's ``GROUP BY``
    of group, prediction and label), or as part of a :class:`BinaryWindow`. ``level`` is the
    two-sided level of the intervals the metrics' ``ci`` callables compute, ``method`` whether the
    count-based ones are fixed-sample intervals or anytime-valid confidence sequences
    (:mod:`metrics_core.stats.contrasts`).

    >>> cells = np.zeros((1, 2, 2, 3))
    >>> cells[0, :, 1, 1], cells[0, :, 0, 1] = (40, 30), (10, 20)  # positives: predicted 1 and 0
    >>> lo, hi = ConfusionWindow(cells, level=0.95).rate_interval("difference", "true_positive_rate")
    >>> round(float(lo[0]), 3), round(float(hi[0]), 3)
    (0.02, 0.372)
    """

    def __init__(
        self, cells: FloatArray, *, level: float, method: Method = "fixed", favorable: Favorable = "positive"
    ) -> None:
        self.cells = np.asarray(cells, dtype=np.float64)
        self.level = level
        self.method = method
        self.favorable = favorable  # the selection rate is the favourable prediction's (rates.Favorable)
        self._rate_intervals: dict[tuple[str, float], dict[str, tuple[FloatArray, FloatArray]]] = {}

    def __len__(self) -> int:
        return int(self.cells.shape[0])

    def at_level(self, level: float) -> Self:
        """This window with intervals at another level (everything prepared is shared)."""
        other = copy.copy(self)
        other.level = level
        return other

    def rate_cells(self, rate: str) -> FloatArray:
        """The cells ``rate`` is read from: the selection rate's with the favourable prediction as 1
        (:func:`~metrics_core.binary.rates.favorable_cells`), every other rate's as they are."""
        return rates.favorable_cells(self.cells, self.favorable) if rate == "selection_rate" else self.cells

    def rate_counts(self, rate: str) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """``(k_G, n_G, k_R, n_R)`` of a rate of :data:`~metrics_core.binary.rates.RATES`, per comparison."""
        cells = self.rate_cells(rate)
        _, k1, n1 = rates.rate(cells, rate, 0)
        _, k2, n2 = rates.rate(cells, rate, 1)
        return k1, n1, k2, n2

    def rate_interval(self, contrast: Contrast, rate: str) -> tuple[FloatArray, FloatArray]:
        """The score interval of ``rate_G - rate_R`` (``contrast="difference"``) or ``rate_G / rate_R``.

        Computed at this window's level for every rate and comparison in one call and cached:
        a score interval costs a root search, and one search over all of them is as cheap as one.
        """
        key = (contrast, self.level)
        if key not in self._rate_intervals:
            names = list(rates.RATES)
            counts = [np.stack(c) for c in zip(*(self.rate_counts(name) for name in names), strict=True)]
            lo, hi = contrast_interval(contrast, self.method, *counts, level=self.level)
            self._rate_intervals[key] = {name: (lo[i], hi[i]) for i, name in enumerate(names)}
        return self._rate_intervals[key][rate]

    def contrast(
        self, contrast: Contrast, k1: FloatArray, n1: FloatArray, k2: FloatArray, n2: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """The interval of a difference or a ratio of two rates given as counts, at this window's level and method."""
        return contrast_interval(contrast, self.method, k1, n1, k2, n2, level=self.level)


class BinaryWindow(ConfusionWindow):
    """The comparisons of one window of a score table, prepared once (see the module docstring).

    ``level``, ``n_resamples`` and ``seed`` are the evaluation's interval settings, read by
    the metrics' ``ci`` callables; ``power`` is the exponent of the Jigsaw power means.
    """

    def __init__(
        self,
        table: ScoreTable,
        comparisons: Sequence[Comparison],
        *,
        threshold: float,
        level: float,
        power: float = -5.0,
        n_resamples: int = 400,
        seed: int = 0,
        method: Method = "fixed",
        favorable: Favorable = "positive",
    ) -> None:
        self.table = table
        self.power = power
        self.n_resamples = n_resamples
        self.seed = seed
        self.cut = int(np.searchsorted(table.scores, threshold, side="left"))
        self._universes: dict[tuple[str, ...] | None, tuple[FloatArray, FloatArray]] = {}
        self._universe_moments: dict[tuple[str, ...] | None, FloatArray] = {}
        self._references: dict[str, tuple[FloatArray, FloatArray, FloatArray, FloatArray]] = {}
        self._aucs: dict[tuple[str, str], AucEstimate] = {}
        self.pairs = [self._pair(c) for c in comparisons]
        super().__init__(
            np.stack([p.cells for p in self.pairs]) if self.pairs else np.zeros((0, 2, 2, 3)),
            level=level,
            method=method,
            favorable=favorable,
        )
        self.moments = np.stack([p.moments for p in self.pairs]) if self.pairs else np.zeros((0, 2, 3))
        self.sides = [
            Sides(c.attribute, c.group, c.reference, float(p.cells[0].sum()), float(p.cells[1].sum()))
            for c, p in zip(comparisons, self.pairs, strict=True)
        ]

    # -- per-comparison quantities --------------------------------------------------------------

    def auc(self, x: str, y: str) -> AucEstimate:
        """AUC of row set ``x`` over ``y`` per comparison (``"group+"``, ``"reference-"``, ...).

        Ties count 1/2; NaN with a reason where a set is empty.
        """
        key = (x, y)
        if key not in self._aucs:
            self._aucs[key] = self._compute_auc(x, y)
        return self._aucs[key]

    def _compute_auc(self, x_name: str, y_name: str) -> AucEstimate:
        n = len(self.pairs)
        est, var, support = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n)
        n_x, n_y, ties = np.zeros(n), np.zeros(n), np.full(n, np.nan)
        reasons = [""] * n
        for i, pair in enumerate(self.pairs):
            x_at, x_gap = _set_counts(pair, x_name)
            y_at, y_gap = _set_counts(pair, y_name)
            sizes = {
                x_name: x_at.sum() + (0.0 if x_gap is None else x_gap.sum()),
                y_name: y_at.sum() + (0.0 if y_gap is None else y_gap.sum()),
            }
            support[i] = min(sizes.values())
            n_x[i], n_y[i] = sizes[x_name], sizes[y_name]
            empty = [name for name, size in sizes.items() if size == 0]
            if empty:
                who, sign = empty[0][:-1], empty[0][-1]
                reasons[i] = f"{who} has no {_SET_TEXT[sign]}"
                continue
            est[i], var[i] = auc_delong(x_at, x_gap, y_at, y_gap)
            ties[i] = float(np.dot(x_at, y_at)) / (n_x[i] * n_y[i])
            if np.isnan(var[i]):
                reasons[i] = "a single row on one side: no variance"
        return AucEstimate(est, var, n_x, n_y, support, reasons, ties)

    # -- whole-window quantities ----------------------------------------------------------------

    @cached_property
    def score_sd(self) -> float:
        """Sample standard deviation of every score of the window (rows with or without a label).

        Two passes over scores shifted by the smallest one, so that a window of equal scores
        gets exactly 0 (the one-pass ``E[s^2] - E[s]^2`` leaves rounding noise of ~1e-9 there).
        """
        table = self.table
        w = table.counts.sum(axis=1)
        n = float(w.sum())
        if n < 2:
            return math.nan
        scores = self.moment_scores
        d = scores - scores[0]
        centred = d - float(np.einsum("i,i->", w, d)) / n
        return math.sqrt(float(np.einsum("i,i->", w, centred**2)) / (n - 1))

    @cached_property
    def moment_scores(self) -> FloatArray:
        """The distinct scores the score moments and :attr:`score_sd` are taken of: the scores themselves,
        or, when the largest is beyond 2**400 (its square summed over enough rows would overflow),
        divided by a power of two that brings it below 1.

        Dividing by a power of two is exact, and what the moments serve (the standardized mean
        difference) is a ratio of them, so the value is the same; without it one score of 1e200
        squared to inf and made every group's SMD 0 ("perfect parity"), with overflow warnings.
        """
        scores = self.table.scores
        finite = np.abs(scores[np.isfinite(scores)])
        top = float(finite.max()) if len(finite) else 0.0
        _, exponent = math.frexp(top)
        return np.ldexp(scores, -exponent) if exponent > 400 else scores

    @cached_property
    def overall_auc(self) -> ModelValue:
        """AUC of the whole window, with its score interval: the anchor of the relative AUC ranges."""
        counts = self.table.counts
        auc, var = auc_delong(counts[:, POS], None, counts[:, NEG], None)
        if np.isnan(auc):
            return ModelValue("overall_auc", math.nan, reason="the window does not have both labels")
        n_pos, n_neg = counts[:, POS].sum(), counts[:, NEG].sum()
        lo, hi = auc_score_interval(auc, n_pos, n_neg, level=self.level, variance=var)
        return ModelValue("overall_auc", auc, ci_lower=float(lo), ci_upper=float(hi))

    @cached_property
    def benefit_counts(self) -> FloatArray:
        """Labeled rows by benefit ``b = ŷ - y + 1``: 0 a false negative, 1 right, 2 a false positive."""
        # column sums of row slices: a fancy-indexed (K, 2) copy of the counts costs ~5 ms at 1.8M rows
        below = self.table.counts[: self.cut].sum(0)[[NEG, POS]]
        above = self.table.counts[self.cut :].sum(0)[[NEG, POS]]
        return np.array([below[1], below[0] + above[1], above[0]])

    # -- preparation ----------------------------------------------------------------------------

    def _reference(self, key: str) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """A named reference's counts per distinct score of the window and their cumulative sums, its
        confusion cells and score moments: once per reference, however many groups it is compared with."""
        if key not in self._references:
            r = self.table.group(key)
            split = int(np.searchsorted(r.ids, self.cut))
            cells = np.stack([r.counts[:split].sum(0), r.counts[split:].sum(0)])
            dense = r.dense(self.table.n_scores)
            self._references[key] = (
                dense,
                _cumulative(dense),
                cells,
                _moments(self.moment_scores[r.ids], r.counts),
            )
        return self._references[key]

    def _universe(self, keys: tuple[str, ...] | None) -> tuple[FloatArray, FloatArray]:
        if keys not in self._universes:
            t = self.table
            if keys is None:  # the table's own cumulative counts: computed once, in integers
                dense, cum = t.counts, t.cumulative
            else:
                dense = t.union(keys).dense(t.n_scores)
                cum = _cumulative(dense)
            self._universes[keys] = (dense, cum)
        return self._universes[keys]

    def _universe_moment(self, keys: tuple[str, ...] | None) -> FloatArray:
        # once per universe: recomputing them per comparison costs O(window) per group
        if keys not in self._universe_moments:
            dense, _ = self._universe(keys)
            self._universe_moments[keys] = _moments(self.moment_scores, dense)
        return self._universe_moments[keys]

    def _pair(self, comp: Comparison) -> Pair:
        t = self.table
        g = t.group(comp.key)
        split = int(np.searchsorted(g.ids, self.cut))  # ids increase: predicted positives are a suffix
        g_cells = np.stack([g.counts[:split].sum(0), g.counts[split:].sum(0)])
        g_mom = _moments(self.moment_scores[g.ids], g.counts)
        if comp.reference_key is None:
            dense, cum = self._universe(comp.universe)
            grid, (g_side,) = grid_for(g)
            r_side = complement_side(grid, g.counts, dense, cum)
            u_cells = np.stack([cum[self.cut], cum[-1] - cum[self.cut]])
            r_cells = u_cells - g_cells
            r_mom = self._universe_moment(comp.universe) - g_mom
        else:
            # A named reference never shares a row with the group (values of one column, or of one tuple
            # of columns): read from its cumulative counts on the group's own grid, as the background
            # is. A comparison then costs its group's distinct scores, not the reference's too - 2,000
            # groups against one large reference each laid the reference out again, in memory at once.
            dense, cum, r_cells, r_mom = self._reference(comp.reference_key)
            grid, (g_side,) = grid_for(g)
            r_side = complement_side(grid, None, dense, cum)
        return Pair(comp, g, g_side, r_side, np.stack([g_cells, r_cells]), np.stack([g_mom, r_mom]))


def _cumulative(dense: FloatArray) -> FloatArray:
    """``cum[i] = dense[:i].sum(0)``, rows contiguous: :func:`complement_side` gathers whole rows of it,
    and ``np.take`` of a column-major array first copies all of it (~1 ms per comparison at 200k scores)."""
    cum: FloatArray = np.ascontiguousarray(np.concatenate([np.zeros((1, 3)), np.cumsum(dense, axis=0)]))
    return cum


def _moments(scores: FloatArray, counts: FloatArray) -> FloatArray:
    w = counts.sum(axis=1)
    # einsum, not `@`: a threaded BLAS dot can stall for milliseconds when the other core is busy
    return np.array([w.sum(), np.einsum("i,i->", w, scores), np.einsum("i,i->", w, scores**2)])


def _set_counts(pair: Pair, name: str) -> tuple[FloatArray, FloatArray | None]:
    side = pair.group_side if name.startswith("group") else pair.reference_side
    return side.column(POS if name.endswith("+") else NEG)
