"""Lower confidence bounds of the exposure distances from held-out witnesses (the intervals' lower end).

The plug-in total variation or KL divergence between two sampled exposure distributions is
biased **upward** (sampling noise always adds distance), and with sparse exposure (few
recommendations per item) by as much as the fair range itself: two samples of one 200-item
distribution with 2,000 recommendations each are about 0.18 apart in total variation. The
bootstrap repeats the bias but does not measure it: it resamples from the observed
distributions, which are already further apart than the true ones, and a distance's bias shrinks
as the distance grows. The basic interval used before, centred on the bootstrap bias correction
``2 t - t*`` (Efron & Tibshirani 1993, ch. 10), read ``violation`` in 52-100% of sparse windows
whose true distance sat exactly on the bound, and in all windows where the difference sat on a
few items (``benchmarks/calibration.py --only exposure``); the L1 distance, non-smooth, has no
unbiased estimator to correct towards.

A lower bound needs no bias correction. Both distances are maxima over *witnesses*:

- TV(P, Q) = max over item sets A of P(A) - Q(A), attained by the set {i : p_i > q_i}
  (Scheffe 1947, *Ann. Math. Statist.* 18; Devroye & Lugosi 2001, *Combinatorial Methods in
  Density Estimation*);
- KL(P || Q) = max over f of E_P[f] - E_Q[e^f] + 1, attained at f = ln(p/q) (Nguyen, Wainwright
  & Jordan 2010, *IEEE Trans. Inf. Theory* 56(11)),

so any witness gives a value at or below the distance, and a witness chosen without the users it
is evaluated on is evaluated without bias (sample splitting; Cox 1975, *Biometrika* 62(2)).

Folds: each side's users with a recommendation are dealt at random into :data:`FOLDS` (7) folds;
fold k's witness is estimated from folds k+1, k+2, k+3 (cyclically) of both sides and evaluated
on fold k's users; the bound is the mean over the folds, so every user is evaluated once. No two
folds estimate each other's witness, so the folds' errors are uncorrelated: if fold k is not among
fold j's training folds, fold j's error does not involve fold k's users, and fold k's error has
mean 0 given every other fold. Each fold's term is a ratio of per-user sums (witness values over
recommendations); its variance is the ratio estimator's linearisation over users, the sampling
unit (Cochran 1977, *Sampling Techniques*, ch. 6), the variances add, and the lower end is the
bound minus ``z`` standard errors. Ordinary K-fold cross-fitting - each witness from all other
folds - has folds estimate each other's witnesses; its errors are positively correlated, a
variance that no per-fold formula or bootstrap with the witnesses held sees (Bengio & Grandvalet
2004, *JMLR* 5), and it read ``violation`` in 5-9% of windows with the difference on 4 of 200
items, exactly on the bound.

The witnesses, from the training folds' counts ``c`` (shares ``p``, ``q``):

- TV: the set ``{i : p_i > q_i}``;
- KL: ``f_i = d_i tau^2 / (tau^2 + v_i)``, ``d_i = ln(p_i / q_i)`` of the counts smoothed by
  ``a``, ``v_i = 1/(c_G,i + a) + 1/(c_R,i + a)`` its sampling variance (delta method), and
  ``tau^2 = max(0, sum_i p_i (d_i^2 - v_i))``: the posterior mean of a normal prior on the
  log-ratios, fitted by moments (empirical Bayes; James & Stein 1961, Efron & Morris 1973). An
  unshrunk noisy log-ratio costs ``sum_i p_i v_i / 2`` in ``E_Q[e^f]``, more than the whole fair
  range on a sparse window; the shrinkage only tightens the bound, which holds for any witness.

The bound is conservative by what the estimated witness misses of the best one: little when the
difference sits on a few well-exposed items (the lower end then holds its nominal level), most
when every item's share moves a little and each item's sign is uncertain - the windows where the
plug-in cannot tell such a model from noise either.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from metrics_core.core.types import FloatArray, IntArray
from metrics_core.core.undefined import Undefined

if TYPE_CHECKING:
    from scipy import sparse

__all__ = [
    "FOLDS",
    "Witness",
    "deal_folds",
    "kl_witness",
    "training_folds",
    "tv_witness",
    "witness_bound",
]

#: Folds of each side's users; each witness is estimated on (FOLDS - 1) / 2 of them (odd).
FOLDS = 7
_FOLD_STREAM = 0xF01D  # the folds' random stream, apart from the bootstrap's (same seed)

#: From the training folds' item counts of the group and of the reference: per-item values ``a``
#: (summed over a held-out group user's recommendations), ``b`` (over a held-out reference user's)
#: and a constant ``c``; a fold's bound is ``a``'s mean over the group's recommendations minus
#: ``b``'s over the reference's, plus ``c``.
Witness = Callable[[FloatArray, FloatArray], tuple[FloatArray, FloatArray, float]]


def _total(counts: FloatArray, who: str) -> float:
    total = float(counts.sum())
    if total <= 0:
        raise Undefined(f"the {who}'s training folds have no recommendation")
    return total


def tv_witness(c_g: FloatArray, c_r: FloatArray) -> tuple[FloatArray, FloatArray, float]:
    """Scheffe's set of the training counts, ``{i : e_G(i) > e_R(i)}``: P(A) - Q(A) <= TV(P, Q).

    >>> tv_witness(np.array([3.0, 1.0, 0.0]), np.array([1.0, 1.0, 2.0]))[0].tolist()
    [1.0, 0.0, 0.0]
    """
    a = (c_g / _total(c_g, "group") > c_r / _total(c_r, "reference")).astype(np.float64)
    return a, a, 0.0


def kl_witness(smoothing: float) -> Witness:
    """The training counts' log-ratio of smoothed shares, shrunk: E_P[f] - E_Q[e^f] + 1 <= KL(P || Q).

    ``smoothing`` is the metric's pseudo-count (0.5 if it has none: the log-ratio of unsmoothed
    counts can be infinite, and any finite witness keeps the bound).
    """
    alpha = smoothing if smoothing > 0 else 0.5

    def witness(c_g: FloatArray, c_r: FloatArray) -> tuple[FloatArray, FloatArray, float]:
        n_g, n_r, m = _total(c_g, "group"), _total(c_r, "reference"), c_g.size
        p, q = (c_g + alpha) / (n_g + alpha * m), (c_r + alpha) / (n_r + alpha * m)
        d = np.log(p / q)
        v = 1 / (c_g + alpha) + 1 / (c_r + alpha)
        tau2 = max(0.0, float(np.sum(p * (d**2 - v))))
        f = d * (tau2 / (tau2 + v))
        return f, np.exp(f), 1.0

    return witness


def training_folds(k: int) -> list[int]:
    """The folds whose users estimate fold ``k``'s witness: the next (FOLDS - 1) / 2, cyclically.

    For any two folds, at most one is among the other's training folds.

    >>> training_folds(0), training_folds(5)
    ([1, 2, 3], [6, 0, 1])
    """
    return [(k + j) % FOLDS for j in range(1, (FOLDS - 1) // 2 + 1)]


def deal_folds(g: sparse.csr_matrix, r: sparse.csr_matrix, seed: int) -> tuple[IntArray, IntArray]:
    """Fold of each user (row) of both sides: users with a recommendation dealt at random into FOLDS folds.

    Users without a recommendation get FOLDS (no fold). Drawn from ``seed`` on a stream of their
    own, apart from the bootstrap's. Raises :class:`Undefined` when a side has fewer than two
    users with a recommendation per fold.
    """
    rng = np.random.default_rng((seed, _FOLD_STREAM))
    out = []
    for m in (g, r):
        users = np.flatnonzero(np.asarray(m.sum(axis=1)).ravel() > 0)
        if users.size < 2 * FOLDS:
            raise Undefined(f"the interval needs {2 * FOLDS} users with a recommendation on each side")
        fold = np.full(m.shape[0], FOLDS, dtype=np.int64)
        fold[users[rng.permutation(users.size)]] = np.arange(users.size) % FOLDS
        out.append(fold)
    return out[0], out[1]


def _ratio(x: FloatArray, n: FloatArray) -> tuple[float, float]:
    """``sum(x) / sum(n)`` over users and its linearised variance, ``u/(u-1) sum (x - R n)^2 / sum(n)^2``."""
    if x.size < 2 or n.sum() <= 0:
        raise Undefined("a fold needs two users with a recommendation")
    ratio = float(x.sum() / n.sum())
    return ratio, float(x.size / (x.size - 1) * np.sum((x - ratio * n) ** 2) / n.sum() ** 2)


def witness_bound(
    g: sparse.csr_matrix, r: sparse.csr_matrix, witness: Witness, folds: tuple[IntArray, IntArray]
) -> tuple[float, float, float]:
    """The held-out witness bound of one window, its standard error and that error's degrees of
    freedom (Welch-Satterthwaite over the folds' and sides' variances, each of its users less one:
    with a few users per fold the variance is itself uncertain, and the bound takes Student's t).

    ``g``, ``r``: recommendations per (user, item) of each side (:func:`kernels.user_exposure`);
    ``folds``: each user's fold (:func:`deal_folds`). The bound is an unbiased estimate of a value
    at or below the distance. Each fold and side contributes a ratio of per-user sums (witness
    values over recommendations); its variance is the ratio estimator's linearisation over users,
    the sampling unit (Cochran 1977, *Sampling Techniques*, ch. 6), and the folds' and sides'
    errors are uncorrelated, so the variances add.
    """
    fold_g, fold_r = folds
    sides = [
        (m, fold, np.asarray(m.sum(axis=1), dtype=np.float64).ravel())
        for m, fold in ((g, fold_g), (r, fold_r))
    ]
    counts = [
        np.stack([np.asarray(m[fold == k].sum(axis=0), dtype=np.float64).ravel() for k in range(FOLDS)])
        for m, fold, _ in sides
    ]
    estimate, variance, spread = 0.0, 0.0, 0.0
    for k in range(FOLDS):
        train = training_folds(k)
        a, b, constant = witness(counts[0][train].sum(axis=0), counts[1][train].sum(axis=0))
        for (m, fold, n_u), values, sign in zip(sides, (a, b), (1.0, -1.0), strict=True):
            held = fold == k
            mean, var = _ratio(np.asarray(m[held] @ values, dtype=np.float64).ravel(), n_u[held])
            estimate += sign * mean / FOLDS
            variance += var / FOLDS**2
            spread += (var / FOLDS**2) ** 2 / (int(held.sum()) - 1)
        estimate += constant / FOLDS
    df = variance**2 / spread if spread > 0 else math.inf
    return estimate, math.sqrt(variance), df
