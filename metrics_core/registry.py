"""The metric registry: one source of truth for names, fair ranges and their sources.

The service's config, the JSON output, the Prometheus family names, the generated
alerting rules and the docs page all read their metric facts from :data:`REGISTRY`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from metrics_core._spec import FairRange, Input, MetricSpec

__all__ = [
    "BINARY_FAMILIES",
    "REGISTRY",
    "FairRange",
    "MetricSpec",
    "get_metric",
    "metric_names",
    "registry_as_dicts",
    "resolve_fair_range",
]

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


def _rate_metric(name: str, rate: str, meaning: str, formula: str, empty_support: str) -> MetricSpec:
    requires = _CLS if rate == "selection_rate" else _CLS_LABELS
    return MetricSpec(
        name,
        "classification",
        "group",
        requires,
        None,
        None,
        "informational per-group rate",
        "wilson",
        meaning,
        formula,
        "rate",
        rate=rate,
        support=(empty_support,),
    )


_METRICS: list[MetricSpec] = [
    # --- per-group rates (informational; exported with their counts) -------------------
    _rate_metric(
        "selection_rate",
        "selection_rate",
        "share of the group predicted positive",
        "P(ŷ=1 | G)",
        "selection_rate",
    ),
    _rate_metric(
        "true_positive_rate",
        "true_positive_rate",
        "share of the group's positives predicted positive",
        "TP / (TP + FN)",
        "true_positive_rate",
    ),
    _rate_metric(
        "false_positive_rate",
        "false_positive_rate",
        "share of the group's negatives predicted positive",
        "FP / (FP + TN)",
        "false_positive_rate",
    ),
    _rate_metric(
        "false_negative_rate",
        "false_negative_rate",
        "share of the group's positives predicted negative",
        "FN / (TP + FN)",
        "false_negative_rate",
    ),
    _rate_metric(
        "positive_predictive_value",
        "positive_predictive_value",
        "share of the group's predicted positives that are positive",
        "TP / (TP + FP)",
        "positive_predictive_value",
    ),
    _rate_metric(
        "accuracy",
        "accuracy",
        "share of the group's labeled rows predicted correctly",
        "(TP + TN) / n",
        "accuracy",
    ),
    # --- outcome (need only predictions) -------------------------------------------------
    MetricSpec(
        "statistical_parity_difference",
        "classification",
        "group",
        _CLS,
        0.0,
        _ABS_DIFF,
        _HOLISTIC,
        "newcombe",
        "negative: the group is selected less often than its reference",
        "SR_G - SR_R",
        "rate_difference",
        rate="selection_rate",
        support=("selection_rate",),
    ),
    MetricSpec(
        "disparate_impact",
        "classification",
        "group",
        _CLS,
        1.0,
        _RATIO,
        _FOUR_FIFTHS,
        "katz_log",
        "below 1: the group is selected less often than its reference (PiML's adverse impact ratio)",
        "SR_G / SR_R",
        "rate_ratio",
        rate="selection_rate",
        aliases=("adverse_impact_ratio", "air"),
        support=("selection_rate",),
    ),
    MetricSpec(
        "four_fifths_ratio",
        "classification",
        "group",
        _CLS,
        1.0,
        FairRange(0.8, 1.0),
        "four-fifths rule (US EEOC Uniform Guidelines, 1978); holisticai's code returns min(r, 1/r)",
        "transformed",
        "the smaller of the two selection-rate ratios; below 0.8 fails the four-fifths rule",
        "min(DI, 1/DI)",
        "four_fifths_ratio",
        support=("selection_rate",),
    ),
    MetricSpec(
        "cohens_d",
        "classification",
        "group",
        _CLS,
        0.0,
        FairRange(-0.2, 0.2),
        "Cohen (1988): 0.2 is a small effect (holisticai code; its docs omit the square root)",
        "bootstrap",
        "negative: the group is selected less often, in pooled standard deviations",
        "(SR_G - SR_R) / sqrt(((n_G-1) p_G(1-p_G) + (n_R-1) p_R(1-p_R)) / (n_G+n_R-2))",
        "cohens_d",
        support=("selection_rate",),
    ),
    MetricSpec(
        "two_sd_rule",
        "classification",
        "group",
        _CLS,
        0.0,
        FairRange(-2.0, 2.0),
        "the 2-standard-deviation rule itself (holisticai code: pooled standard error)",
        "bootstrap",
        "z statistic of the selection-rate gap; beyond +-2 is a significant disparity",
        "(SR_G - SR_R) / sqrt(p(1-p)(1/n_G + 1/n_R)), p = pooled SR",
        "two_sd_rule",
        support=("selection_rate",),
    ),
    # --- opportunity (need labels) ------------------------------------------------------
    MetricSpec(
        "equal_opportunity_difference",
        "classification",
        "group",
        _CLS_LABELS,
        0.0,
        _ABS_DIFF,
        _HOLISTIC,
        "newcombe",
        "negative: the group's positives are recognised less often than the reference's",
        "TPR_G - TPR_R",
        "rate_difference",
        rate="true_positive_rate",
        support=("true_positive_rate",),
    ),
    MetricSpec(
        "false_positive_rate_difference",
        "classification",
        "group",
        _CLS_LABELS,
        0.0,
        _ABS_DIFF,
        _HOLISTIC,
        "newcombe",
        "positive: the group's negatives are flagged more often than the reference's",
        "FPR_G - FPR_R",
        "rate_difference",
        rate="false_positive_rate",
        support=("false_positive_rate",),
    ),
    MetricSpec(
        "false_negative_rate_difference",
        "classification",
        "group",
        _CLS_LABELS,
        0.0,
        _ABS_DIFF,
        "as the FPR difference (ProPublica's COMPAS analysis turned on FPR and FNR gaps)",
        "newcombe",
        "positive: the group's positives are missed more often than the reference's",
        "FNR_G - FNR_R",
        "rate_difference",
        rate="false_negative_rate",
        support=("false_negative_rate",),
    ),
    MetricSpec(
        "average_odds_difference",
        "classification",
        "group",
        _CLS_LABELS,
        0.0,
        _ABS_DIFF,
        _HOLISTIC,
        "normal",
        "mean of the TPR and FPR gaps; negative: the group is selected less at equal labels",
        "((TPR_G - TPR_R) + (FPR_G - FPR_R)) / 2",
        "average_odds_difference",
        support=("true_positive_rate", "false_positive_rate"),
    ),
    MetricSpec(
        "average_abs_odds_difference",
        "classification",
        "group",
        _CLS_LABELS,
        0.0,
        FairRange(0.0, 0.1),
        "AIF360 definition; range as the average odds difference",
        "bootstrap",
        "mean size of the TPR and FPR gaps, whatever their sign",
        "(|TPR_G - TPR_R| + |FPR_G - FPR_R|) / 2",
        "average_abs_odds_difference",
        support=("true_positive_rate", "false_positive_rate"),
    ),
    MetricSpec(
        "equalized_odds_difference",
        "classification",
        "group",
        _CLS_LABELS,
        0.0,
        FairRange(0.0, 0.1),
        "fairlearn / AIF360 definition; range as the other odds gaps",
        "bootstrap",
        "the larger of the TPR and FPR gaps, whatever its sign",
        "max(|TPR_G - TPR_R|, |FPR_G - FPR_R|)",
        "equalized_odds_difference",
        support=("true_positive_rate", "false_positive_rate"),
    ),
    MetricSpec(
        "accuracy_difference",
        "classification",
        "group",
        _CLS_LABELS,
        0.0,
        _ABS_DIFF,
        _HOLISTIC,
        "newcombe",
        "negative: the model is less accurate on the group than on its reference",
        "ACC_G - ACC_R",
        "rate_difference",
        rate="accuracy",
        support=("accuracy",),
    ),
    MetricSpec(
        "precision_ratio",
        "classification",
        "group",
        _CLS_LABELS,
        1.0,
        _RATIO,
        "four-fifths convention applied to a ratio (PiML reports the ratio)",
        "katz_log",
        "below 1: the group's positive predictions are right less often than the reference's",
        "PPV_G / PPV_R",
        "rate_ratio",
        rate="positive_predictive_value",
        support=("positive_predictive_value",),
    ),
    MetricSpec(
        "recall_ratio",
        "classification",
        "group",
        _CLS_LABELS,
        1.0,
        _RATIO,
        "four-fifths convention applied to a ratio (PiML reports the ratio)",
        "katz_log",
        "below 1: the group's positives are found less often than the reference's",
        "TPR_G / TPR_R",
        "rate_ratio",
        rate="true_positive_rate",
        support=("true_positive_rate",),
    ),
    MetricSpec(
        "standardized_mean_difference",
        "classification",
        "group",
        _SCORES,
        0.0,
        FairRange(-0.2, 0.2),
        "Cohen's small effect in standard-deviation units (PiML prints it x100)",
        "normal",
        "negative: the group's mean score is below its reference's, in window standard deviations",
        "(mean score_G - mean score_R) / sd(all scores in the window)",
        "standardized_mean_difference",
        support=("selection_rate",),
    ),
    # --- ranking (Jigsaw; seeds 000/001) --------------------------------------------------
    MetricSpec(
        "subgroup_auc",
        "ranking",
        "group",
        _RANK,
        1.0,
        _AUC_RANGE,
        _AUC_SOURCE,
        "delong",
        "low: the model separates toxic from non-toxic poorly within the group",
        "AUC(D_g+ vs D_g-)",
        "auc",
        sets=("group+", "group-"),
        support=("group+", "group-"),
    ),
    MetricSpec(
        "bpsn_auc",
        "ranking",
        "group",
        _RANK,
        1.0,
        _AUC_RANGE,
        _AUC_SOURCE,
        "delong",
        "low: the group's negatives score above the reference's positives (false positives for the group)",
        "AUC(D+ vs D_g-)",
        "auc",
        sets=("reference+", "group-"),
        support=("reference+", "group-"),
    ),
    MetricSpec(
        "bnsp_auc",
        "ranking",
        "group",
        _RANK,
        1.0,
        _AUC_RANGE,
        _AUC_SOURCE,
        "delong",
        "low: the group's positives score below the reference's negatives (false negatives for the group)",
        "AUC(D_g+ vs D-)",
        "auc",
        sets=("group+", "reference-"),
        support=("group+", "reference-"),
    ),
    MetricSpec(
        "negative_aeg",
        "ranking",
        "group",
        _RANK,
        0.0,
        _AEG_RANGE,
        _AEG_SOURCE,
        "delong",
        "positive: the group's negatives score higher than the reference's negatives",
        "1/2 - MWU(D-, D_g-) / (|D-| |D_g-|) = P(s_g- > s_D-) + P(=)/2 - 1/2",
        "auc",
        sets=("group-", "reference-"),
        offset=-0.5,
        support=("group-", "reference-"),
    ),
    MetricSpec(
        "positive_aeg",
        "ranking",
        "group",
        _RANK,
        0.0,
        _AEG_RANGE,
        _AEG_SOURCE,
        "delong",
        "positive: the group's positives score higher than the reference's positives",
        "1/2 - MWU(D+, D_g+) / (|D+| |D_g+|) = P(s_g+ > s_D+) + P(=)/2 - 1/2",
        "auc",
        sets=("group+", "reference+"),
        offset=-0.5,
        support=("group+", "reference+"),
    ),
    # --- model level ----------------------------------------------------------------------
    MetricSpec(
        "overall_auc",
        "model",
        "model",
        _RANK,
        1.0,
        None,
        "Jigsaw competition (seed 001)",
        "delong",
        "AUC of the whole window",
        "AUC(D+ vs D-)",
        "overall_auc",
    ),
    *(
        MetricSpec(
            f"power_mean_{kind}_auc",
            "model",
            "model",
            _RANK,
            1.0,
            None,
            "Jigsaw competition (seed 001), p = -5",
            "none",
            f"generalised mean (p = -5) of the groups' {kind} AUC; dominated by the worst groups",
            f"(mean_g {kind}_auc_g^p)^(1/p)",
            "power_mean",
            rate=f"{kind}_auc",
        )
        for kind in ("subgroup", "bpsn", "bnsp")
    ),
    MetricSpec(
        "jigsaw_final_score",
        "model",
        "model",
        _RANK,
        1.0,
        None,
        "Jigsaw competition (seed 001)",
        "none",
        "0.25 overall AUC + 0.25 x the three power means",
        "0.25 AUC + 0.25 (M_p(subgroup) + M_p(bpsn) + M_p(bnsp))",
        "final_score",
    ),
    MetricSpec(
        "theil_index",
        "model",
        "model",
        _CLS_LABELS,
        0.0,
        None,
        "AIF360 (b_i = ŷ_i - y_i + 1)",
        "none",
        "inequality of the benefit b = ŷ - y + 1 across individuals; 0 is equal benefit",
        "1/n sum (b_i/mu) ln(b_i/mu)",
        "generalized_entropy",
        rate="1",
    ),
    MetricSpec(
        "generalized_entropy_index",
        "model",
        "model",
        _CLS_LABELS,
        0.0,
        None,
        "AIF360, alpha = 2",
        "none",
        "inequality of the benefit b = ŷ - y + 1 across individuals; 0 is equal benefit",
        "1/(n a(a-1)) sum ((b_i/mu)^a - 1), a = 2",
        "generalized_entropy",
        rate="2",
    ),
    MetricSpec(
        "coefficient_of_variation",
        "model",
        "model",
        _CLS_LABELS,
        0.0,
        None,
        "AIF360: sqrt(2 GE(2)) (holisticai's code has 2 sqrt(GE(2)))",
        "none",
        "standard deviation of the benefit over its mean",
        "sqrt(2 GE(2))",
        "coefficient_of_variation",
    ),
]

#: Families evaluated from the score table by :func:`metrics_core.evaluate`.
BINARY_FAMILIES = ("classification", "ranking", "model")


def _task_family_specs() -> list[MetricSpec]:
    """The specs the other task families declare in their own modules.

    Imported here rather than at the top because those modules are built on the group
    machinery, not on this registry; the registry is the one place that lists every metric.
    """
    from metrics_core import clustering, multiclass, recommender, regression, text

    return [*multiclass.SPECS, *regression.SPECS, *recommender.SPECS, *clustering.SPECS, *text.SPECS]


_METRICS += _task_family_specs()

#: Every metric by name.
REGISTRY: dict[str, MetricSpec] = {m.name: m for m in _METRICS}
if len(REGISTRY) != len(_METRICS):  # a family reusing a name would silently shadow a metric
    raise RuntimeError("duplicate metric names in the registry")
_ALIASES: dict[str, str] = {alias: m.name for m in _METRICS for alias in m.aliases}


def get_metric(name: str) -> MetricSpec:
    """The spec of ``name`` (aliases such as ``adverse_impact_ratio`` accepted)."""
    canonical = _ALIASES.get(name, name)
    try:
        return REGISTRY[canonical]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; known metrics: {', '.join(sorted(REGISTRY))}") from None


def metric_names(*, level: str | None = None, family: str | None = None) -> list[str]:
    return [
        m.name
        for m in _METRICS
        if (level is None or m.level == level) and (family is None or m.family == family)
    ]


def resolve_fair_range(
    name: str, overrides: Mapping[str, Iterable[float | None]] | None = None
) -> FairRange | None:
    """The fair range of ``name``: a configured override (absolute) or the default."""
    spec = get_metric(name)
    # override keys may be aliases (``air``); an unknown key raises, naming it
    canonical = {get_metric(k).name: v for k, v in (overrides or {}).items()}
    if spec.name in canonical:
        lo, hi = tuple(canonical[spec.name])
        return FairRange(lo, hi)
    return spec.fair_range


def registry_as_dicts() -> list[dict[str, Any]]:
    """The registry as plain JSON-ready dicts (``fairwatch metrics --format json``)."""
    out = []
    for m in _METRICS:
        fr = m.fair_range
        out.append(
            {
                "name": m.name,
                "family": m.family,
                "level": m.level,
                "requires": sorted(m.requires),
                "ideal": m.ideal,
                "fair_min": None if fr is None else fr.min,
                "fair_max": None if fr is None else fr.max,
                "fair_range_relative_to": None if fr is None else fr.relative_to,
                "fair_range": "informational" if fr is None else fr.describe(),
                "source": m.source,
                "interval": m.interval,
                "meaning": m.meaning,
                "formula": m.formula,
                "aliases": list(m.aliases),
            }
        )
    return out
