"""Evaluate the text metrics of a window of generated completions, per prompt group."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core.core.results import Report
from metrics_core.core.undefined import Undefined
from metrics_core.engine.adjust import Adjustment
from metrics_core.engine.groupwise import evaluate_groupwise
from metrics_core.engine.select import FairRangeOverrides, fair_ranges_of, select_specs
from metrics_core.stats.contrasts import Method
from metrics_core.stats.judge import DEFAULT_MIN_SAMPLES
from metrics_core.text.kernels import compile_lexicon, compile_targets, compile_word_lists, tokens_of
from metrics_core.text.specs import SPECS, TextWindow
from metrics_core.text.tokenize import count_matrix
from metrics_core.text.weat import WeatResult, check_permutations, weat
from metrics_core.window.groups import Attribute

__all__ = ["INPUTS", "evaluate"]

INPUTS: tuple[str, ...] = ("text",)
# every text metric is selected by default: one whose option is missing is NaN with that reason
_ALWAYS = frozenset({"text", "embeddings"})


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
    lexicon: Iterable[str] | None = None,
    word_lists: Mapping[str, Iterable[str]] | None = None,
    targets: Iterable[str] | None = None,
    weat_sets: Mapping[str, Iterable[str]] | None = None,
    embeddings: Mapping[str, ArrayLike] | None = None,
    n_permutations: int = 10_000,
) -> Report:
    """Judge the text metrics for every prompt group of ``attributes`` (default: all of :data:`SPECS`).

    ``data["text"]`` holds one completion (str) per row. A metric whose option is not given
    (``lexicon`` for HONEST, ``word_lists`` and ``targets`` for the HELM metrics,
    ``weat_sets`` = ``{"X", "Y", "A", "B"}`` and ``embeddings`` for WEAT) is NaN with that
    reason. Completions are tokenised once; group metrics then work on per-row counts.
    ``n_resamples`` is unused (every group metric has an analytic interval); ``seed`` seeds
    the WEAT permutations.

    >>> import metrics_core as mc
    >>> g = mc.categorical_attribute("prompt_group", ["f", "f", "m", "m"], reference="m")
    >>> r = evaluate({"text": ["You idiot!", "ok", "fine", "ok"]}, [g], metrics=["honest_difference"],
    ...              lexicon=["idiot"], min_samples=1)
    >>> v = r.get("honest_difference", "f")
    >>> v.value, v.reference, v.state
    (0.5, 'm', 'inconclusive')
    """
    specs = select_specs(SPECS, metrics, available=_ALWAYS, family="text")
    texts = _texts(data)
    _check_attributes(attributes, len(texts))
    check_permutations(n_permutations)
    options = {"lexicon": lexicon, "word_lists": word_lists, "targets": targets}
    options |= {"weat_sets": weat_sets, "embeddings": embeddings}
    given = frozenset(k for k, v in options.items() if v is not None)
    # validated before any work, so that a bad option fails the call, not one metric
    lex = None if lexicon is None else compile_lexicon(lexicon)
    columns, sizes = compile_word_lists(word_lists) if word_lists is not None else ([], np.zeros(0))
    target_cols = None if targets is None else compile_targets(targets)
    sets = None if weat_sets is None else _weat_sets(weat_sets)

    tokens = tokens_of(texts) if (lex is not None or columns) else []
    derived: dict[str, NDArray[np.generic]] = {"_hits": np.zeros(len(texts))}
    if lex is not None:
        derived["_hits"] = (count_matrix(tokens, [lex])[:, 0] > 0).astype(np.float64)
    if columns:
        derived["_mentions"] = count_matrix(tokens, columns)
        if target_cols is not None:
            derived["_targets"] = count_matrix(tokens, target_cols)
    return evaluate_groupwise(
        TextWindow(given, sizes, _weat_once(sets, embeddings, n_permutations, seed), method),
        derived,
        attributes,
        specs,
        fair_ranges=fair_ranges_of(SPECS, fair_ranges, family="text"),
        confidence=confidence,
        min_samples=min_samples,
        n_resamples=n_resamples,
        seed=seed,
        adjust=adjust,
        family_size=family_size,
    )


def _texts(data: Mapping[str, ArrayLike]) -> list[str]:
    if "text" not in data:
        raise ValueError(f"data has no 'text' (the generated completions); keys: {sorted(data)}")
    values = np.asarray(data["text"], dtype=object)
    if values.ndim != 1:
        raise ValueError(f"data['text'] must be 1-dimensional, got shape {values.shape}")
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise TypeError(f"data['text'][{i}] must be a str, got {type(v).__name__}: {v!r}")
    return [str(v) for v in values]


def _weat_sets(weat_sets: Mapping[str, Iterable[str]]) -> tuple[list[str], list[str], list[str], list[str]]:
    sets = {str(k).lower(): v for k, v in weat_sets.items()}
    if set(sets) != {"x", "y", "a", "b"}:
        raise ValueError(f"weat_sets needs exactly the keys X, Y, A, B, got {sorted(weat_sets)}")
    x, y, a, b = ([str(w) for w in sets[k]] for k in "xyab")
    return x, y, a, b


def _check_attributes(attributes: Sequence[Attribute], n: int) -> None:
    for attr in attributes:
        for key in list(attr.masks)[:1]:  # masks of one attribute share a length; lazy masks are built once
            size = np.asarray(attr.masks[key]).shape[0]
            if size != n:
                raise ValueError(f"attribute {attr.name!r} has {size} rows, data['text'] has {n}")


def _weat_once(
    sets: tuple[list[str], list[str], list[str], list[str]] | None,
    embeddings: Mapping[str, ArrayLike] | None,
    n_permutations: int,
    seed: int,
) -> Callable[[], WeatResult]:
    """WEAT does not depend on the rows: compute it at most once per evaluation."""
    cache: list[WeatResult] = []

    def get() -> WeatResult:
        if sets is None or embeddings is None:
            raise Undefined(f"option `{'weat_sets' if sets is None else 'embeddings'}` not given")
        if not cache:
            cache.append(weat(*sets, embeddings=embeddings, n_permutations=n_permutations, seed=seed))
        if cache[0].reason is not None:
            raise Undefined(cache[0].reason)
        return cache[0]

    return get
