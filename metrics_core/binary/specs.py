"""The binary metrics (``metrics.md`` sections 2 and 3): one spec each, facts beside computation.

To add a binary metric, add one entry here: its facts, and a computation from
:mod:`metrics_core.binary.computations` (a new kind of computation goes there).
"""

from __future__ import annotations

from metrics_core.binary import rates
from metrics_core.binary import summaries as model
from metrics_core.binary.computations import (
    Computation,
    auc,
    components,
    four_fifths,
    group_rate,
    rate_difference,
    rate_ratio,
    scaled_parity,
    standardized_mean_difference,
    tie_bound,
)
from metrics_core.core.spec import FairRange, Family, Input, IntervalMethod, MetricSpec

__all__ = ["ROUNDING_BOUNDS", "SPECS"]

#: The AUCs' bounds for rounded scores: computed by the library like any metric; the monitor
#: reports them only for models that round (``score_decimals``).
ROUNDING_BOUNDS = frozenset(
    {"subgroup_auc_rounding_error", "bpsn_auc_rounding_error", "bnsp_auc_rounding_error"}
)

_ABS_DIFF = FairRange(-0.1, 0.1)
_RATIO = FairRange(0.8, 1.25)
_AUC_RANGE = FairRange(-0.05, None, relative_to="overall_auc")
_AEG_RANGE = FairRange(-0.1, 0.1)
_HOLISTIC = "holisticai documentation (fair area)"
_FOUR_FIFTHS = (
    "four-fifths rule (US EEOC Uniform Guidelines, 1978), applied to a ratio; 1.25 = 1/0.8 keeps it symmetric"
)
_AUC_SOURCE = (
    "fairwatch default: the seeds give no AUC range; an absolute AUC bound depends on the model, so "
    "the range is relative: at least the overall AUC of the same window minus 0.05"
)
_AEG_SOURCE = "fairwatch choice: a 60/40 ordering of same-class pairs (the seeds give no range)"
_CLS: frozenset[Input] = frozenset({"y_pred"})
_CLS_LABELS: frozenset[Input] = frozenset({"y_pred", "y_true"})
_RANK: frozenset[Input] = frozenset({"y_score", "y_true"})
_SCORES: frozenset[Input] = frozenset({"y_score"})


def _group(
    how: Computation,
    *,
    name: str,
    family: Family,
    requires: frozenset[Input],
    ideal: float | None,
    fair_range: FairRange | None,
    source: str,
    meaning: str,
    formula: str,
    aliases: tuple[str, ...] = (),
) -> MetricSpec:
    return MetricSpec(
        name=name,
        family=family,
        requires=requires,
        ideal=ideal,
        fair_range=fair_range,
        source=source,
        meaning=meaning,
        formula=formula,
        aliases=aliases,
        interval=how.interval,
        support=how.support,
        statistic=how.statistic,
        ci=how.ci,
        count_support=how.count_support,
        contrast=how.contrast,
    )


def _rate(rate: str, meaning: str, formula: str) -> MetricSpec:
    """A per-group rate: informational, exported with its counts."""
    requires = _CLS if rate == "selection_rate" else _CLS_LABELS
    return _group(
        group_rate(rate),
        name=rate,
        family="classification",
        requires=requires,
        ideal=None,
        fair_range=None,
        source="informational per-group rate",
        meaning=meaning,
        formula=formula,
    )


def _model(
    statistic: model.ModelStatistic,
    *,
    name: str,
    requires: frozenset[Input],
    source: str,
    interval: IntervalMethod,
    meaning: str,
    formula: str,
    ideal: float = 1.0,
    needs: tuple[str, ...] = (),
) -> MetricSpec:
    """A model-level value (one per window, or per attribute): informational."""
    return MetricSpec(
        name=name,
        family="model",
        level="model",
        requires=requires,
        ideal=ideal,
        fair_range=None,
        source=source,
        meaning=meaning,
        formula=formula,
        interval=interval,
        needs=needs,
        statistic=statistic,
    )


SPECS: list[MetricSpec] = [
    # --- per-group rates (informational; exported with their counts) -------------------
    _rate("selection_rate", "share of the group predicted positive", "P(ŷ=1 | G)"),
    _rate("true_positive_rate", "share of the group's positives predicted positive", "TP / (TP + FN)"),
    _rate("false_positive_rate", "share of the group's negatives predicted positive", "FP / (FP + TN)"),
    _rate("false_negative_rate", "share of the group's positives predicted negative", "FN / (TP + FN)"),
    _rate(
        "positive_predictive_value",
        "share of the group's predicted positives that are positive",
        "TP / (TP + FP)",
    ),
    _rate("accuracy", "share of the group's labeled rows predicted correctly", "(TP + TN) / n"),
    # --- outcome (need only predictions) -------------------------------------------------
    _group(
        rate_difference("selection_rate"),
        name="statistical_parity_difference",
        family="classification",
        requires=_CLS,
        ideal=0.0,
        fair_range=_ABS_DIFF,
        source=_HOLISTIC,
        meaning="negative: the group is selected less often than its reference",
        formula="SR_G - SR_R",
    ),
    _group(
        rate_ratio("selection_rate"),
        name="disparate_impact",
        family="classification",
        requires=_CLS,
        ideal=1.0,
        fair_range=_RATIO,
        source=_FOUR_FIFTHS,
        meaning="below 1: the group is selected less often than its reference (PiML's adverse impact ratio)",
        formula="SR_G / SR_R",
        aliases=("adverse_impact_ratio", "air"),
    ),
    _group(
        four_fifths(),
        name="four_fifths_ratio",
        family="classification",
        requires=_CLS,
        ideal=1.0,
        fair_range=FairRange(0.8, 1.0),
        source="four-fifths rule (US EEOC Uniform Guidelines, 1978); holisticai's code returns min(r, 1/r)",
        meaning="the smaller of the two selection-rate ratios; below 0.8 fails the four-fifths rule",
        formula="min(DI, 1/DI)",
    ),
    _group(
        scaled_parity(rates.pooled_sd),
        name="standardized_selection_rate_difference",
        family="classification",
        requires=_CLS,
        ideal=0.0,
        fair_range=FairRange(-0.2, 0.2),
        source="Cohen (1988): 0.2 is a small effect (holisticai code; its docs omit the square root)",
        meaning="Cohen's d of the selections; negative: the group is selected less often, in pooled "
        "standard deviations",
        formula="(SR_G - SR_R) / sqrt(((n_G-1) p_G(1-p_G) + (n_R-1) p_R(1-p_R)) / (n_G+n_R-2))",
        # its former name: promtool's lint reads the trailing `_d` of fairwatch_cohens_d as a unit (days)
        aliases=("cohens_d", "cohen_d"),
    ),
    _group(
        scaled_parity(rates.pooled_se),
        name="two_sd_rule",
        family="classification",
        requires=_CLS,
        ideal=0.0,
        fair_range=None,
        source="informational: a z statistic, not an effect size - any fixed gap crosses +-2 once the window "
        "is large enough (holisticai code: pooled standard error); the intervals judge significance, "
        "standardized_selection_rate_difference and statistical_parity_difference the size",
        meaning="z statistic of the selection-rate gap; beyond +-2 the gap is significant at about 5%",
        formula="(SR_G - SR_R) / sqrt(p(1-p)(1/n_G + 1/n_R)), p = pooled SR",
    ),
    # --- opportunity (need labels) ------------------------------------------------------
    _group(
        rate_difference("true_positive_rate"),
        name="equal_opportunity_difference",
        family="classification",
        requires=_CLS_LABELS,
        ideal=0.0,
        fair_range=_ABS_DIFF,
        source=_HOLISTIC,
        meaning="negative: the group's positives are recognised less often than the reference's",
        formula="TPR_G - TPR_R",
    ),
    _group(
        rate_difference("false_positive_rate"),
        name="false_positive_rate_difference",
        family="classification",
        requires=_CLS_LABELS,
        ideal=0.0,
        fair_range=_ABS_DIFF,
        source=_HOLISTIC,
        meaning="positive: the group's negatives are flagged more often than the reference's",
        formula="FPR_G - FPR_R",
    ),
    _group(
        rate_difference("false_negative_rate"),
        name="false_negative_rate_difference",
        family="classification",
        requires=_CLS_LABELS,
        ideal=0.0,
        fair_range=_ABS_DIFF,
        source="as the FPR difference (ProPublica's COMPAS analysis turned on FPR and FNR gaps)",
        meaning="positive: the group's positives are missed more often than the reference's",
        formula="FNR_G - FNR_R",
    ),
    _group(
        components("mean"),
        name="average_odds_difference",
        family="classification",
        requires=_CLS_LABELS,
        ideal=0.0,
        fair_range=_ABS_DIFF,
        source=_HOLISTIC,
        meaning="mean of the TPR and FPR gaps; negative: the group is selected less at equal labels",
        formula="((TPR_G - TPR_R) + (FPR_G - FPR_R)) / 2",
    ),
    _group(
        components("mean_abs"),
        name="average_abs_odds_difference",
        family="classification",
        requires=_CLS_LABELS,
        ideal=0.0,
        fair_range=FairRange(0.0, 0.1),
        source="AIF360 definition; range as the average odds difference",
        meaning="mean size of the TPR and FPR gaps, whatever their sign",
        formula="(|TPR_G - TPR_R| + |FPR_G - FPR_R|) / 2",
    ),
    _group(
        components("max_abs"),
        name="equalized_odds_difference",
        family="classification",
        requires=_CLS_LABELS,
        ideal=0.0,
        fair_range=FairRange(0.0, 0.1),
        source="fairlearn / AIF360 definition; range as the other odds gaps",
        meaning="the larger of the TPR and FPR gaps, whatever its sign",
        formula="max(|TPR_G - TPR_R|, |FPR_G - FPR_R|)",
    ),
    _group(
        rate_difference("accuracy"),
        name="accuracy_difference",
        family="classification",
        requires=_CLS_LABELS,
        ideal=0.0,
        fair_range=_ABS_DIFF,
        source=_HOLISTIC,
        meaning="negative: the model is less accurate on the group than on its reference",
        formula="ACC_G - ACC_R",
    ),
    _group(
        rate_ratio("positive_predictive_value"),
        name="precision_ratio",
        family="classification",
        requires=_CLS_LABELS,
        ideal=1.0,
        fair_range=_RATIO,
        source="four-fifths convention applied to a ratio (PiML reports the ratio)",
        meaning="below 1: the group's positive predictions are right less often than the reference's",
        formula="PPV_G / PPV_R",
    ),
    _group(
        rate_ratio("true_positive_rate"),
        name="recall_ratio",
        family="classification",
        requires=_CLS_LABELS,
        ideal=1.0,
        fair_range=_RATIO,
        source="four-fifths convention applied to a ratio (PiML reports the ratio)",
        meaning="below 1: the group's positives are found less often than the reference's",
        formula="TPR_G / TPR_R",
    ),
    _group(
        standardized_mean_difference(),
        name="standardized_mean_difference",
        family="classification",
        requires=_SCORES,
        ideal=0.0,
        fair_range=FairRange(-0.2, 0.2),
        source="Cohen's small effect in standard-deviation units (PiML prints it x100)",
        meaning="negative: the group's mean score is below its reference's, in window standard deviations",
        formula="(mean score_G - mean score_R) / sd(all scores in the window)",
    ),
    # --- ranking (Jigsaw; seeds 000/001) --------------------------------------------------
    _group(
        auc("group+", "group-"),
        name="subgroup_auc",
        family="ranking",
        requires=_RANK,
        ideal=1.0,
        fair_range=_AUC_RANGE,
        source=_AUC_SOURCE,
        meaning="low: the model separates positives from negatives poorly within the group",
        formula="AUC(D_g+ vs D_g-)",
    ),
    _group(
        auc("reference+", "group-"),
        name="bpsn_auc",
        family="ranking",
        requires=_RANK,
        ideal=1.0,
        fair_range=_AUC_RANGE,
        source=_AUC_SOURCE,
        meaning="low: the group's negatives score above the reference's positives (false positives for the group)",
        formula="AUC(D+ vs D_g-)",
    ),
    _group(
        auc("group+", "reference-"),
        name="bnsp_auc",
        family="ranking",
        requires=_RANK,
        ideal=1.0,
        fair_range=_AUC_RANGE,
        source=_AUC_SOURCE,
        meaning="low: the group's positives score below the reference's negatives (false negatives for the group)",
        formula="AUC(D_g+ vs D-)",
    ),
    _group(
        auc("group-", "reference-", offset=-0.5),
        name="negative_aeg",
        family="ranking",
        requires=_RANK,
        ideal=0.0,
        fair_range=_AEG_RANGE,
        source=_AEG_SOURCE,
        meaning="positive: the group's negatives score higher than the reference's negatives",
        formula="1/2 - MWU(D-, D_g-) / (|D-| |D_g-|) = P(s_g- > s_D-) + P(=)/2 - 1/2",
    ),
    _group(
        auc("group+", "reference+", offset=-0.5),
        name="positive_aeg",
        family="ranking",
        requires=_RANK,
        ideal=0.0,
        fair_range=_AEG_RANGE,
        source=_AEG_SOURCE,
        meaning="positive: the group's positives score higher than the reference's positives",
        formula="1/2 - MWU(D+, D_g+) / (|D+| |D_g+|) = P(s_g+ > s_D+) + P(=)/2 - 1/2",
    ),
    # --- what rounding scores can cost the AUCs (only where scores are rounded: score_decimals)
    *(
        _group(
            tie_bound(x, y),
            name=f"{kind}_auc_rounding_error",
            family="ranking",
            requires=_RANK,
            ideal=None,
            fair_range=None,
            source="informational: a bound from the counts of tied pairs (fairwatch, for score_decimals)",
            meaning=f"the {kind} AUC of the scores before rounding (or of any breaking of ties) lies within this distance",
            formula=f"(1/2) sum_bins |X(bin)| |Y(bin)| / (|X| |Y|), X, Y the two sets of {kind}_auc",
        )
        for kind, x, y in (
            ("subgroup", "group+", "group-"),
            ("bpsn", "reference+", "group-"),
            ("bnsp", "group+", "reference-"),
        )
    ),
    # --- model level ----------------------------------------------------------------------
    _model(
        model.overall_auc,
        name="overall_auc",
        requires=_RANK,
        source="Jigsaw competition (seed 001)",
        interval="auc_score",
        meaning="AUC of the whole window",
        formula="AUC(D+ vs D-)",
    ),
    *(
        _model(
            model.power_mean_of(kind),
            name=f"power_mean_{kind}_auc",
            requires=_RANK,
            source="Jigsaw competition (seed 001), p = -5",
            interval="none",
            meaning=f"generalised mean (p = -5) of the groups' {kind} AUC; dominated by the worst groups",
            formula=f"(mean_g {kind}_auc_g^p)^(1/p)",
            needs=(f"{kind}_auc",),
        )
        for kind in model.JIGSAW_KINDS
    ),
    _model(
        model.jigsaw_final_score,
        name="jigsaw_final_score",
        requires=_RANK,
        source="Jigsaw competition (seed 001)",
        interval="none",
        meaning="0.25 overall AUC + 0.25 x the three power means",
        formula="0.25 AUC + 0.25 (M_p(subgroup) + M_p(bpsn) + M_p(bnsp))",
        needs=tuple(f"{kind}_auc" for kind in model.JIGSAW_KINDS),
    ),
    _model(
        model.generalized_entropy("theil_index", 1.0),
        name="theil_index",
        requires=_CLS_LABELS,
        ideal=0.0,
        source="AIF360 (b_i = ŷ_i - y_i + 1)",
        interval="none",
        meaning="inequality of the benefit b = ŷ - y + 1 across individuals; 0 is equal benefit",
        formula="1/n sum (b_i/mu) ln(b_i/mu)",
    ),
    _model(
        model.generalized_entropy("generalized_entropy_index", 2.0),
        name="generalized_entropy_index",
        requires=_CLS_LABELS,
        ideal=0.0,
        source="AIF360, alpha = 2",
        interval="none",
        meaning="inequality of the benefit b = ŷ - y + 1 across individuals; 0 is equal benefit",
        formula="1/(n a(a-1)) sum ((b_i/mu)^a - 1), a = 2",
    ),
    _model(
        model.coefficient_of_variation,
        name="coefficient_of_variation",
        requires=_CLS_LABELS,
        ideal=0.0,
        source="AIF360: sqrt(2 GE(2)) (holisticai's code has 2 sqrt(GE(2)))",
        interval="none",
        meaning="standard deviation of the benefit over its mean",
        formula="sqrt(2 GE(2))",
    ),
]
