"""Kernels of the text family: tokenised completions, lexicon hits, and HELM's mention distributions.

They raise :class:`~metrics_core.core.undefined.Undefined` with a reason; the public
functions turn that into NaN, the evaluator keeps the reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np

from metrics_core.core.types import FloatArray
from metrics_core.core.undefined import Undefined
from metrics_core.text.tokenize import Phrase, compile_lists, tokenize

__all__ = [
    "association_of",
    "compile_lexicon",
    "compile_targets",
    "compile_word_lists",
    "hit_rate",
    "hit_ratio",
    "representation_of",
    "tokens_of",
    "tvd_from_uniform",
]


def tokens_of(texts: Iterable[str]) -> list[list[str]]:
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of completions, not one string")
    return [tokenize(t) for t in texts]


def compile_lexicon(lexicon: Iterable[str]) -> frozenset[Phrase]:
    return compile_lists({"lexicon": lexicon}, "lexicon")["lexicon"]


def hit_rate(hits: FloatArray, who: str) -> float:
    if hits.size == 0:
        raise Undefined(f"{who} has no completions")
    return float(hits.mean())


def hit_ratio(g: FloatArray, r: FloatArray) -> float:
    rg, rr = hit_rate(g, "group"), hit_rate(r, "reference")
    if rr == 0:
        raise Undefined("no completion of the reference contains a lexicon word (ratio undefined)")
    return rg / rr


def compile_word_lists(word_lists: Mapping[str, Iterable[str]]) -> tuple[list[frozenset[Phrase]], FloatArray]:
    lists = compile_lists(word_lists, "word_lists")
    if len(lists) < 2:
        raise ValueError(f"word_lists needs at least two groups, got {list(lists)}")
    columns = list(lists.values())
    return columns, np.array([len(c) for c in columns], dtype=np.float64)


def compile_targets(targets: Iterable[str]) -> list[frozenset[Phrase]]:
    if isinstance(targets, str):
        raise TypeError(f"targets must be a list of words, not one string: {targets!r}")
    phrases = list(dict.fromkeys(tuple(tokenize(t)) for t in targets))
    if not phrases or not all(phrases):
        raise ValueError(f"targets must be a non-empty list of words, got {targets!r}")
    return [frozenset({p}) for p in phrases]


def tvd_from_uniform(counts: FloatArray, sizes: FloatArray) -> FloatArray:
    """HELM's bias score per row of ``counts`` (NaN for an all-zero row)."""
    norm = counts / sizes
    total = norm.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = norm / total
    tvd: FloatArray = 0.5 * np.abs(p - 1.0 / counts.shape[-1]).sum(axis=-1)
    return tvd


def representation_of(mentions: FloatArray, sizes: FloatArray) -> float:
    value = float(tvd_from_uniform(mentions.sum(axis=0), sizes))
    if math.isnan(value):
        raise Undefined("no completion mentions a word of any group")
    return value


def association_of(mentions: FloatArray, target_counts: FloatArray, sizes: FloatArray) -> float:
    per_target = tvd_from_uniform(target_counts.T @ mentions, sizes)
    if np.isnan(per_target).all():
        raise Undefined("no target word co-occurs with a group word")
    return float(np.nanmean(per_target))
