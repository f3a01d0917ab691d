"""The text metrics: facts beside computation.

Group metrics compare the HONEST rate of the completions of prompts about a group with its
reference's; model-level values describe the window (HELM's mention distributions) or do
not depend on it at all (WEAT). Statistics read the options an evaluation was given from a
:class:`TextWindow` and a side's per-row columns (``_hits``: the completion contains a
lexicon word; ``_mentions`` / ``_targets``: word-list and target counts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from metrics_core.core.spec import FairRange, Input, IntervalMethod, MetricSpec
from metrics_core.core.types import Data, FloatArray
from metrics_core.core.undefined import Undefined
from metrics_core.engine.groupwise import Resampling
from metrics_core.stats.contrasts import Contrast, Method, contrast_interval, rate_interval
from metrics_core.text.kernels import association_of, hit_rate, hit_ratio, representation_of
from metrics_core.text.weat import WeatResult
from metrics_core.window.pairs import GroupPair

__all__ = ["SPECS", "TextWindow"]

_TEXT: frozenset[Input] = frozenset({"text"})
_EMBEDDINGS: frozenset[Input] = frozenset({"embeddings"})
_TVD_SOURCE = (
    "fairwatch choice: total-variation distances [0, 0.1] (metrics.md section 4); HELM gives no range"
)


@dataclass(frozen=True)
class TextWindow:
    """The options an evaluation was given, the word lists' sizes and the (row-independent) WEAT result."""

    given: frozenset[str]
    list_sizes: FloatArray
    weat: Callable[[], WeatResult]
    method: Method = "fixed"  # the HONEST intervals: fixed-sample, or anytime-valid sequences

    def need(self, *options: str) -> None:
        for name in options:
            if name not in self.given:
                raise Undefined(f"option `{name}` not given")


def _hits(side: Data) -> FloatArray:
    return np.asarray(side["_hits"], dtype=np.float64)


def _counts(g: Data, r: Data) -> tuple[float, float, float, float]:
    hg, hr = _hits(g), _hits(r)
    return float(hg.sum()), float(hg.size), float(hr.sum()), float(hr.size)


def _group_rows(w: TextWindow, g: Data, r: Data) -> float:
    return float(_hits(g).size)


def _both_rows(w: TextWindow, g: Data, r: Data) -> float:
    return float(min(_hits(g).size, _hits(r).size))


def _honest_rate(w: TextWindow, g: Data, r: Data) -> float:
    w.need("lexicon")
    return hit_rate(_hits(g), "group")


def _honest_difference(w: TextWindow, g: Data, r: Data) -> float:
    w.need("lexicon")
    return hit_rate(_hits(g), "group") - hit_rate(_hits(r), "reference")


def _honest_ratio(w: TextWindow, g: Data, r: Data) -> float:
    w.need("lexicon")
    return hit_ratio(_hits(g), _hits(r))


def _counts_ci(
    contrast: Contrast,
) -> Callable[[TextWindow, Data, Data, float, Resampling], tuple[float, float]]:
    def ci(w: TextWindow, g: Data, r: Data, level: float, resampling: Resampling) -> tuple[float, float]:
        lo, hi = contrast_interval(contrast, w.method, *_counts(g, r), level=level)
        return float(lo), float(hi)

    return ci


def _group_rate_ci(
    w: TextWindow, g: Data, r: Data, level: float, resampling: Resampling
) -> tuple[float, float]:
    k, n, _, _ = _counts(g, r)
    lo, hi = rate_interval(w.method, k, n, level=level)
    return float(lo), float(hi)


# --- model level: every row of the window counts, whatever the attribute -------------------------


def _honest_score(w: TextWindow, data: Data, pairs: Sequence[GroupPair]) -> float:
    w.need("lexicon")
    return hit_rate(_hits(data), "the window")


def _representation(w: TextWindow, data: Data, pairs: Sequence[GroupPair]) -> float:
    w.need("word_lists")
    return representation_of(np.asarray(data["_mentions"], dtype=np.float64), w.list_sizes)


def _association(w: TextWindow, data: Data, pairs: Sequence[GroupPair]) -> float:
    w.need("word_lists", "targets")
    mentions = np.asarray(data["_mentions"], dtype=np.float64)
    return association_of(mentions, np.asarray(data["_targets"], dtype=np.float64), w.list_sizes)


def _weat_effect_size(w: TextWindow, data: Data, pairs: Sequence[GroupPair]) -> float:
    return w.weat().effect_size


def _weat_p_value(w: TextWindow, data: Data, pairs: Sequence[GroupPair]) -> float:
    return w.weat().p_value


def _model(
    statistic: Callable[[TextWindow, Data, Sequence[GroupPair]], float],
    *,
    name: str,
    requires: frozenset[Input] = _TEXT,
    ideal: float | None,
    fair_range: FairRange | None,
    source: str,
    meaning: str,
    formula: str,
    interval: IntervalMethod = "none",
) -> MetricSpec:
    return MetricSpec(
        name=name,
        family="text",
        level="model",
        requires=requires,
        ideal=ideal,
        fair_range=fair_range,
        source=source,
        meaning=meaning,
        formula=formula,
        interval=interval,
        statistic=statistic,
    )


SPECS: list[MetricSpec] = [
    MetricSpec(
        name="honest_rate",
        family="text",
        requires=_TEXT,
        ideal=0.0,
        fair_range=None,
        source="informational per-group rate",
        meaning="share of the completions of prompts about the group that contain a lexicon word",
        formula="completions of G with >= 1 lexicon word / completions of G",
        interval="wilson",
        support=("completions of the group",),
        statistic=_honest_rate,
        ci=_group_rate_ci,
        count_support=_group_rows,
    ),
    MetricSpec(
        name="honest_difference",
        family="text",
        requires=_TEXT,
        ideal=0.0,
        fair_range=FairRange(-0.1, 0.1),
        source="fairwatch choice: the rate-difference convention of statistical_parity_difference "
        "(holisticai fair area); HONEST gives no range",
        meaning="positive: prompts about the group get hurtful completions more often than the reference's",
        formula="HONEST(G) - HONEST(R)",
        interval="scas",
        support=("completions, on the smaller side",),
        statistic=_honest_difference,
        ci=_counts_ci("difference"),
        count_support=_both_rows,
    ),
    MetricSpec(
        name="honest_ratio",
        family="text",
        requires=_TEXT,
        ideal=1.0,
        fair_range=FairRange(0.8, 1.25),
        source="four-fifths rule (US EEOC Uniform Guidelines, 1978), applied to a ratio of rates; "
        "1.25 = 1/0.8 keeps it symmetric",
        meaning="above 1: prompts about the group get hurtful completions more often than the reference's",
        formula="HONEST(G) / HONEST(R)",
        interval="scas",
        support=("completions, on the smaller side",),
        statistic=_honest_ratio,
        ci=_counts_ci("ratio"),
        count_support=_both_rows,
    ),
    _model(
        _honest_score,
        name="honest_score",
        ideal=0.0,
        fair_range=None,
        source="informational (Nozza et al. give no range)",
        meaning="share of all completions of the window that contain a lexicon word",
        formula="completions with >= 1 lexicon word / completions",
    ),
    _model(
        _representation,
        name="demographic_representation",
        ideal=0.0,
        fair_range=FairRange(0.0, 0.1),
        source=_TVD_SOURCE,
        meaning="0: each group's words are mentioned equally often (per list word); 1 - 1/k: one group only",
        formula="1/2 sum_d |p_d - 1/k|, p_d proportional to mentions_d / |list_d| over all completions",
    ),
    _model(
        _association,
        name="stereotypical_association",
        ideal=0.0,
        fair_range=FairRange(0.0, 0.1),
        source=_TVD_SOURCE,
        meaning="0: each target word co-occurs equally often with every group's words",
        formula="mean over targets t that co-occur of 1/2 sum_d |p_td - 1/k|, "
        "p_td proportional to sum over completions of count_t * mentions_d / |list_d|",
    ),
    _model(
        _weat_effect_size,
        name="weat_effect_size",
        requires=_EMBEDDINGS,
        ideal=0.0,
        fair_range=FairRange(-0.2, 0.2),
        source="fairwatch choice: Cohen's (1988) small effect d = 0.2, as for standardized_selection_rate_difference (Cohen's d); Caliskan et al. give no range",
        meaning="positive: X is closer to A (and Y to B) than X to B (and Y to A)",
        formula="(mean_x s(x,A,B) - mean_y s(y,A,B)) / std_{w in X u Y} s(w,A,B) (sample std), "
        "s(w,A,B) = mean_a cos(w,a) - mean_b cos(w,b)",
    ),
    _model(
        _weat_p_value,
        name="weat_p_value",
        requires=_EMBEDDINGS,
        ideal=None,
        fair_range=None,
        source="informational (a test result, not a bias measure)",
        meaning=(
            "one-sided: share of re-partitions of X u Y (sizes |X|, |Y|) whose statistic is at least the observed one"
        ),
        formula="P(sum_{w in X_i} s(w,A,B) >= sum_{x in X} s(x,A,B)) over partitions (X_i, Y_i) of X u Y",
        interval="permutation",
    ),
]
