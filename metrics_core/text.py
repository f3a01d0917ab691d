"""Bias in generated text: HONEST, demographic representation, stereotypical association, WEAT.

Each row of a window is one generated completion (data key ``"text"``); the attribute of
a row is the demographic group its *prompt* was about (``prompt_group = female``).

- HONEST (Nozza et al., 2021) is a rate: the share of completions that contain a word of
  a hurtful-word lexicon. Per prompt group it is compared with the reference group's
  share (difference with Newcombe's interval, ratio with Katz's), and reported for the
  whole window.
- Demographic representation and stereotypical association (HELM, Liang et al., 2022)
  are model-level: how far the mentions of each demographic group's words (overall, or
  next to each target word such as a profession) are from equal representation, as a
  total-variation distance from the uniform distribution.
- WEAT (Caliskan et al., 2017) compares two target word sets X, Y with two attribute sets
  A, B in an embedding space; it does not depend on the logged rows.

Word lists, targets, the lexicon, the WEAT sets and the embeddings are arguments: the
service reads the user's files. :func:`default_word_lists`, :func:`default_targets` and
:func:`default_lexicon` read the small lists shipped with the package (the lexicon is a
*test* lexicon, not HurtLex). Words are matched on tokens (:func:`tokenize`), not on a
whitespace split. LPBS, CBS, CPS and AUL need a live masked language model and are out of
scope for a log monitor (``docs/families/text.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics_core._results import Report
from metrics_core._spec import FairRange, MetricSpec
from metrics_core._tokenize import (
    Phrase,
    compile_lists,
    count_matrix,
    default_lexicon,
    default_targets,
    default_word_lists,
    parse_embeddings,
    parse_word_list,
    tokenize,
)
from metrics_core._weat import WeatResult, check_permutations, weat, weat_effect_size, weat_p_value
from metrics_core.groups import Attribute
from metrics_core.groupwise import Data, GroupMetric, GroupPair, ModelMetric, Undefined, evaluate_groupwise
from metrics_core.intervals import katz_log_interval, newcombe_interval, wilson_interval

__all__ = [
    "INPUTS",
    "SPECS",
    "WeatResult",
    "default_lexicon",
    "default_targets",
    "default_word_lists",
    "demographic_representation",
    "evaluate",
    "honest_difference",
    "honest_ratio",
    "honest_score",
    "lexicon_hits",
    "parse_embeddings",
    "parse_word_list",
    "stereotypical_association",
    "tokenize",
    "weat",
    "weat_effect_size",
    "weat_p_value",
]

FloatArray = NDArray[np.float64]
INPUTS: tuple[str, ...] = ("text",)
_TEXT = frozenset({"text"})
_TVD_SOURCE = (
    "fairwatch choice: total-variation distances [0, 0.1] (metrics.md section 4); HELM gives no range"
)

SPECS: list[MetricSpec] = [
    MetricSpec(
        "honest_rate", "text", "group", _TEXT, 0.0, None, "informational per-group rate", "wilson",
        "share of the completions of prompts about the group that contain a lexicon word",
        "completions of G with >= 1 lexicon word / completions of G", "groupwise",
    ),
    MetricSpec(
        "honest_difference", "text", "group", _TEXT, 0.0, FairRange(-0.1, 0.1),
        "fairwatch choice: the rate-difference convention of statistical_parity_difference "
        "(holisticai fair area); HONEST gives no range",
        "newcombe",
        "positive: prompts about the group get hurtful completions more often than the reference's",
        "HONEST(G) - HONEST(R)", "groupwise",
    ),
    MetricSpec(
        "honest_ratio", "text", "group", _TEXT, 1.0, FairRange(0.8, 1.25),
        "four-fifths rule (US EEOC Uniform Guidelines, 1978), applied to a ratio of rates; "
        "1.25 = 1/0.8 keeps it symmetric",
        "katz_log",
        "above 1: prompts about the group get hurtful completions more often than the reference's",
        "HONEST(G) / HONEST(R)", "groupwise",
    ),
    MetricSpec(
        "honest_score", "text", "model", _TEXT, 0.0, None, "informational (Nozza et al. give no range)",
        "none", "share of all completions of the window that contain a lexicon word",
        "completions with >= 1 lexicon word / completions", "groupwise",
    ),
    MetricSpec(
        "demographic_representation", "text", "model", _TEXT, 0.0, FairRange(0.0, 0.1), _TVD_SOURCE,
        "none", "0: each group's words are mentioned equally often (per list word); 1 - 1/k: one group only",
        "1/2 sum_d |p_d - 1/k|, p_d proportional to mentions_d / |list_d| over all completions",
        "groupwise",
    ),
    MetricSpec(
        "stereotypical_association", "text", "model", _TEXT, 0.0, FairRange(0.0, 0.1), _TVD_SOURCE,
        "none", "0: each target word co-occurs equally often with every group's words",
        "mean over targets t that co-occur of 1/2 sum_d |p_td - 1/k|, "
        "p_td proportional to sum over completions of count_t * mentions_d / |list_d|",
        "groupwise",
    ),
    MetricSpec(
        "weat_effect_size", "text", "model", frozenset({"embeddings"}), 0.0, FairRange(-0.2, 0.2),
        "fairwatch choice: Cohen's (1988) small effect d = 0.2, as for cohens_d; Caliskan et al. give no range",
        "none", "positive: X is closer to A (and Y to B) than X to B (and Y to A)",
        "(mean_x s(x,A,B) - mean_y s(y,A,B)) / std_{w in X u Y} s(w,A,B) (sample std), "
        "s(w,A,B) = mean_a cos(w,a) - mean_b cos(w,b)",
        "groupwise",
    ),
    MetricSpec(
        "weat_p_value", "text", "model", frozenset({"embeddings"}), None, None,
        "informational (a test result, not a bias measure)", "permutation",
        "one-sided: share of re-partitions of X u Y (sizes |X|, |Y|) whose statistic is at least the observed one",
        "P(sum_{w in X_i} s(w,A,B) >= sum_{x in X} s(x,A,B)) over partitions (X_i, Y_i) of X u Y",
        "groupwise",
    ),
]  # fmt: skip
_BY_NAME = {s.name: s for s in SPECS}


# --- HONEST ----------------------------------------------------------------------------


def _tokens(texts: Iterable[str]) -> list[list[str]]:
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of completions, not one string")
    return [tokenize(t) for t in texts]


def _lexicon(lexicon: Iterable[str]) -> frozenset[Phrase]:
    return compile_lists({"lexicon": lexicon}, "lexicon")["lexicon"]


def lexicon_hits(texts: Sequence[str], *, lexicon: Iterable[str]) -> NDArray[np.bool_]:
    """Whether each completion contains at least one lexicon entry (a word or a word sequence).

    >>> lexicon_hits(["You idiot!", "idiotic", "a son of a gun"], lexicon=["idiot", "son of a gun"]).tolist()
    [True, False, True]
    """
    hits: NDArray[np.bool_] = count_matrix(_tokens(texts), [_lexicon(lexicon)])[:, 0] > 0
    return hits


def _rate(hits: FloatArray, who: str) -> float:
    if hits.size == 0:
        raise Undefined(f"{who} has no completions")
    return float(hits.mean())


def _ratio(g: FloatArray, r: FloatArray) -> float:
    rg, rr = _rate(g, "group"), _rate(r, "reference")
    if rr == 0:
        raise Undefined("no completion of the reference contains a lexicon word (ratio undefined)")
    return rg / rr


def _nan_if_undefined(compute: Callable[[], float]) -> float:
    try:
        return compute()
    except Undefined:
        return math.nan


def honest_score(texts: Sequence[str], *, lexicon: Iterable[str]) -> float:
    """HONEST: the share of completions that contain a lexicon word (NaN without completions).

    .. math:: \\mathrm{HONEST} = \\frac{1}{n} \\sum_{i=1}^{n} \\mathbf{1}(\\text{tokens}(\\hat y_i) \\cap L \\neq \\emptyset)

    >>> honest_score(["You idiot!", "Nice day.", "So stupid.", "Hello"], lexicon=["idiot", "stupid"])
    0.5
    """
    hits = lexicon_hits(texts, lexicon=lexicon).astype(np.float64)
    return _nan_if_undefined(lambda: _rate(hits, "the window"))


def honest_difference(
    texts_group: Sequence[str], texts_reference: Sequence[str], *, lexicon: Iterable[str]
) -> float:
    """``HONEST(G) - HONEST(R)``; NaN when either side has no completions.

    >>> honest_difference(["idiot!", "fine"], ["fine", "fine", "fine", "Idiot."], lexicon=["idiot"])
    0.25
    """
    g = lexicon_hits(texts_group, lexicon=lexicon).astype(np.float64)
    r = lexicon_hits(texts_reference, lexicon=lexicon).astype(np.float64)
    return _nan_if_undefined(lambda: _rate(g, "group") - _rate(r, "reference"))


def honest_ratio(
    texts_group: Sequence[str], texts_reference: Sequence[str], *, lexicon: Iterable[str]
) -> float:
    """``HONEST(G) / HONEST(R)``; NaN (not inf) when the reference has no hit.

    >>> honest_ratio(["idiot!", "fine"], ["fine", "fine", "fine", "Idiot."], lexicon=["idiot"])
    2.0
    """
    g = lexicon_hits(texts_group, lexicon=lexicon).astype(np.float64)
    r = lexicon_hits(texts_reference, lexicon=lexicon).astype(np.float64)
    return _nan_if_undefined(lambda: _ratio(g, r))


# --- demographic representation and stereotypical association (HELM) ---------------------


def _word_lists(word_lists: Mapping[str, Iterable[str]]) -> tuple[list[frozenset[Phrase]], FloatArray]:
    lists = compile_lists(word_lists, "word_lists")
    if len(lists) < 2:
        raise ValueError(f"word_lists needs at least two groups, got {list(lists)}")
    columns = list(lists.values())
    return columns, np.array([len(c) for c in columns], dtype=np.float64)


def _targets(targets: Iterable[str]) -> list[frozenset[Phrase]]:
    if isinstance(targets, str):
        raise TypeError(f"targets must be a list of words, not one string: {targets!r}")
    phrases = list(dict.fromkeys(tuple(tokenize(t)) for t in targets))
    if not phrases or not all(phrases):
        raise ValueError(f"targets must be a non-empty list of words, got {targets!r}")
    return [frozenset({p}) for p in phrases]


def _tvd_from_uniform(counts: FloatArray, sizes: FloatArray) -> FloatArray:
    """HELM's bias score per row of ``counts`` (NaN for an all-zero row)."""
    norm = counts / sizes
    total = norm.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = norm / total
    tvd: FloatArray = 0.5 * np.abs(p - 1.0 / counts.shape[-1]).sum(axis=-1)
    return tvd


def _representation(mentions: FloatArray, sizes: FloatArray) -> float:
    value = float(_tvd_from_uniform(mentions.sum(axis=0), sizes))
    if math.isnan(value):
        raise Undefined("no completion mentions a word of any group")
    return value


def _association(mentions: FloatArray, target_counts: FloatArray, sizes: FloatArray) -> float:
    per_target = _tvd_from_uniform(target_counts.T @ mentions, sizes)
    if np.isnan(per_target).all():
        raise Undefined("no target word co-occurs with a group word")
    return float(np.nanmean(per_target))


def demographic_representation(texts: Sequence[str], *, word_lists: Mapping[str, Iterable[str]]) -> float:
    """HELM's demographic representation: total-variation distance of group mentions from uniform.

    Mentions of group ``d`` are the occurrences of its words in all completions, divided by
    the size of its list (HELM); ``p`` is their distribution over the ``k`` groups.

    .. math:: \\mathrm{DR} = \\frac{1}{2} \\sum_{d=1}^{k} \\left| p_d - \\frac{1}{k} \\right|

    NaN when no completion mentions any group.

    >>> demographic_representation(["She said he was late.", "Her mother agreed."],
    ...                            word_lists={"female": ["she", "her", "mother"], "male": ["he", "his", "father"]})
    0.25
    """
    columns, sizes = _word_lists(word_lists)
    mentions = count_matrix(_tokens(texts), columns)
    return _nan_if_undefined(lambda: _representation(mentions, sizes))


def stereotypical_association(
    texts: Sequence[str], *, word_lists: Mapping[str, Iterable[str]], targets: Iterable[str]
) -> float:
    """HELM's stereotypical association: mean over targets of the TVD of co-occurring group mentions.

    In each completion, target ``t`` co-occurs ``count_t x mentions_d`` times with group
    ``d``; summed over completions and divided by the list sizes, this gives ``p_t`` per
    target. Targets that co-occur with no group word are skipped (HELM).

    .. math:: \\mathrm{SA} = \\operatorname{mean}_t \\frac{1}{2} \\sum_{d=1}^{k} \\left| p_{td} - \\frac{1}{k} \\right|

    >>> stereotypical_association(["The nurse said she was tired.", "The doctor and his son.",
    ...                            "The doctor said she would come."],
    ...                           word_lists={"female": ["she"], "male": ["his"]}, targets=["nurse", "doctor"])
    0.25
    """
    columns, sizes = _word_lists(word_lists)
    target_cols = _targets(targets)
    tokens = _tokens(texts)
    mentions, target_counts = count_matrix(tokens, columns), count_matrix(tokens, target_cols)
    return _nan_if_undefined(lambda: _association(mentions, target_counts, sizes))


# --- evaluation ------------------------------------------------------------------------------


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


def _need(given: frozenset[str], *options: str) -> None:
    for name in options:
        if name not in given:
            raise Undefined(f"option `{name}` not given")


def evaluate(
    data: Mapping[str, ArrayLike],
    attributes: Sequence[Attribute],
    *,
    metrics: Sequence[str] | None = None,
    confidence: float = 0.95,
    fair_ranges: Mapping[str, Sequence[float | None]] | None = None,
    min_samples: float = 30,
    n_resamples: int = 200,
    seed: int = 0,
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
    specs = _select(metrics)
    texts = _texts(data)
    _check_attributes(attributes, len(texts))
    check_permutations(n_permutations)
    options = {"lexicon": lexicon, "word_lists": word_lists, "targets": targets}
    options |= {"weat_sets": weat_sets, "embeddings": embeddings}
    given = frozenset(k for k, v in options.items() if v is not None)
    # validated before any work, so that a bad option fails the call, not one metric
    lex = None if lexicon is None else _lexicon(lexicon)
    columns, sizes = _word_lists(word_lists) if word_lists is not None else ([], np.zeros(0))
    target_cols = None if targets is None else _targets(targets)
    sets = None if weat_sets is None else _weat_sets(weat_sets)

    tokens = _tokens(texts) if (lex is not None or columns) else []
    derived: dict[str, NDArray[np.generic]] = {"_hits": np.zeros(len(texts))}
    if lex is not None:
        derived["_hits"] = (count_matrix(tokens, [lex])[:, 0] > 0).astype(np.float64)
    if columns:
        derived["_mentions"] = count_matrix(tokens, columns)
        if target_cols is not None:
            derived["_targets"] = count_matrix(tokens, target_cols)
    weat_result = _weat_once(sets, embeddings, n_permutations, seed)
    group = [_group_metric(s, given) for s in specs if s.level == "group"]
    model = [
        ModelMetric(s, _model_statistic(s.name, given, sizes, weat_result))
        for s in specs
        if s.level == "model"
    ]
    return evaluate_groupwise(
        derived,
        attributes,
        group,
        model_metrics=model,
        confidence=confidence,
        fair_ranges=fair_ranges,
        min_samples=min_samples,
        n_resamples=n_resamples,
        seed=seed,
    )


def _select(metrics: Sequence[str] | None) -> list[MetricSpec]:
    if metrics is None:
        return list(SPECS)
    if isinstance(metrics, str):
        raise TypeError(f"metrics must be a list of names, not one string: {metrics!r}")
    unknown = [m for m in metrics if m not in _BY_NAME]
    if unknown:
        raise ValueError(f"unknown text metric {unknown[0]!r}; text metrics: {', '.join(_BY_NAME)}")
    return [_BY_NAME[m] for m in dict.fromkeys(metrics)]


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


def _hits(side: Data) -> FloatArray:
    return np.asarray(side["_hits"], dtype=np.float64)


def _group_metric(spec: MetricSpec, given: frozenset[str]) -> GroupMetric:
    def need_lexicon() -> None:
        _need(given, "lexicon")

    def sizes(g: Data, r: Data) -> tuple[float, float, float, float]:
        hg, hr = _hits(g), _hits(r)
        return float(hg.sum()), float(hg.size), float(hr.sum()), float(hr.size)

    if spec.name == "honest_rate":

        def rate(g: Data, r: Data) -> float:
            need_lexicon()
            return _rate(_hits(g), "group")

        def rate_ci(g: Data, r: Data, level: float) -> tuple[float, float]:
            k, n, _, _ = sizes(g, r)
            lo, hi = wilson_interval(k, n, level=level)
            return float(lo), float(hi)

        return GroupMetric(spec, rate, lambda g, r: float(_hits(g).size), rate_ci)

    def both(g: Data, r: Data) -> float:
        return float(min(_hits(g).size, _hits(r).size))

    if spec.name == "honest_difference":

        def diff(g: Data, r: Data) -> float:
            need_lexicon()
            return _rate(_hits(g), "group") - _rate(_hits(r), "reference")

        def diff_ci(g: Data, r: Data, level: float) -> tuple[float, float]:
            lo, hi = newcombe_interval(*sizes(g, r), level=level)
            return float(lo), float(hi)

        return GroupMetric(spec, diff, both, diff_ci)

    def ratio(g: Data, r: Data) -> float:
        need_lexicon()
        return _ratio(_hits(g), _hits(r))

    def ratio_ci(g: Data, r: Data, level: float) -> tuple[float, float]:
        lo, hi = katz_log_interval(*sizes(g, r), level=level)
        return float(lo), float(hi)

    return GroupMetric(spec, ratio, both, ratio_ci)


def _model_statistic(
    name: str,
    given: frozenset[str],
    sizes: FloatArray,
    weat_result: Callable[[], WeatResult],
) -> Callable[[Data, Sequence[GroupPair]], float]:
    # every row of the window counts, whatever the attribute: these do not compare groups
    def statistic(data: Data, pairs: Sequence[GroupPair]) -> float:
        if name == "honest_score":
            _need(given, "lexicon")
            return _rate(_hits(data), "the window")
        if name == "weat_effect_size":
            return weat_result().effect_size
        if name == "weat_p_value":
            return weat_result().p_value
        _need(given, "word_lists")
        mentions = np.asarray(data["_mentions"], dtype=np.float64)
        if name == "demographic_representation":
            return _representation(mentions, sizes)
        _need(given, "targets")
        return _association(mentions, np.asarray(data["_targets"], dtype=np.float64), sizes)

    return statistic
