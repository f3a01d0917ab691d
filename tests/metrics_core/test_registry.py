"""The registry: complete facts for every metric, fair ranges of metrics.md, aliases, public API."""

from __future__ import annotations

import json
import math
import re

import pytest

import metrics_core as mc

BINARY_FAMILIES = ("classification", "ranking", "model")
TASK_FAMILIES = ("multiclass", "regression", "recommender", "clustering", "text")
# this file pins the binary metrics of metrics.md sections 2-3; each task family's own test
# file pins its metrics, and test_every_task_family_metric_is_fully_described checks their facts
ALL = [m for m in mc.REGISTRY.values() if m.family in BINARY_FAMILIES]
IDS = [m.name for m in ALL]
BINARY = {m.name for m in ALL}

# metrics.md sections 2 and 3: the default fair ranges, (min, max), None = open end.
SPEC_RANGES = {
    "statistical_parity_difference": (-0.1, 0.1),
    "disparate_impact": (0.8, 1.25),
    "four_fifths_ratio": (0.8, 1.0),
    "standardized_selection_rate_difference": (-0.2, 0.2),
    "equal_opportunity_difference": (-0.1, 0.1),
    "false_positive_rate_difference": (-0.1, 0.1),
    "false_negative_rate_difference": (-0.1, 0.1),
    "average_odds_difference": (-0.1, 0.1),
    "average_abs_odds_difference": (0.0, 0.1),
    "equalized_odds_difference": (0.0, 0.1),
    "accuracy_difference": (-0.1, 0.1),
    "precision_ratio": (0.8, 1.25),
    "recall_ratio": (0.8, 1.25),
    "standardized_mean_difference": (-0.2, 0.2),
    "negative_aeg": (-0.1, 0.1),
    "positive_aeg": (-0.1, 0.1),
}
RELATIVE_AUC = ("subgroup_auc", "bpsn_auc", "bnsp_auc")  # >= overall_auc - 0.05, no upper bound
INFORMATIONAL = {
    "two_sd_rule",  # a z statistic: any fixed gap crosses +-2 once the window is large enough (issue 11)
    "selection_rate",
    "true_positive_rate",
    "false_positive_rate",
    "false_negative_rate",
    "positive_predictive_value",
    "accuracy",
    "overall_auc",
    "power_mean_subgroup_auc",
    "power_mean_bpsn_auc",
    "power_mean_bnsp_auc",
    "jigsaw_final_score",
    "theil_index",
    "generalized_entropy_index",
    "coefficient_of_variation",
    # the AUCs' bounds for rounded scores (score_decimals): a distance, not a disparity
    "subgroup_auc_rounding_error",
    "bpsn_auc_rounding_error",
    "bnsp_auc_rounding_error",
}
# interval method per kind of value: metrics.md section 5, recalibrated by issue 11 (docs/alerts.md):
# skewness-corrected score intervals for differences and ratios of rates (Katz's and Newcombe's
# tails run above 2.5%), Newcombe's score interval for AUCs (DeLong's Wald interval under-covers at
# high AUC), composite odds gaps judged through their two component gaps
SPEC_INTERVALS = {
    "selection_rate": "wilson",
    "statistical_parity_difference": "scas",
    "equal_opportunity_difference": "scas",
    "accuracy_difference": "scas",
    "disparate_impact": "scas",
    "precision_ratio": "scas",
    "recall_ratio": "scas",
    "average_odds_difference": "components",
    "average_abs_odds_difference": "components",
    "equalized_odds_difference": "components",
    "subgroup_auc": "auc_score",
    "bpsn_auc": "auc_score",
    "bnsp_auc": "auc_score",
    "negative_aeg": "auc_score",
    "positive_aeg": "auc_score",
    "overall_auc": "auc_score",
}

PUBLIC_API = [
    "category_name",
    "DEFAULT_MIN_SAMPLES",
    "Adjustment",
    "Method",
    "Plan",
    "detectable",
    "rows_needed",
    "LABELS",
    "RATES",
    "REGISTRY",
    "REST",
    "STATES",
    "Attribute",
    "Comparison",
    "FairRange",
    "GroupCounts",
    "MetricSpec",
    "MetricValue",
    "ModelValue",
    "Report",
    "ScoreTable",
    "bnsp_auc",
    "bonferroni_level",
    "bpsn_auc",
    "categorical_attribute",
    "coefficient_of_variation",
    "evaluate",
    "generalized_entropy_index",
    "get_metric",
    "indicator_attribute",
    "intersection_attribute",
    "judge",
    "katz_log_interval",
    "merge_tables",
    "metric_names",
    "negative_aeg",
    "newcombe_interval",
    "normal_interval",
    "overall_auc",
    "poisson_bootstrap_interval",
    "positive_aeg",
    "power_mean",
    "registry_as_dicts",
    "resolve_fair_range",
    "subgroup_auc",
    "table_for",
    "theil_index",
    "wilson_interval",
]


@pytest.mark.parametrize("spec", ALL, ids=IDS)
def test_every_metric_is_fully_described(spec):
    assert re.fullmatch(r"[a-z][a-z0-9_]*", spec.name)  # also a Prometheus family name
    assert spec.family in ("classification", "ranking", "model")
    assert spec.level in ("group", "model")
    assert spec.requires and spec.requires <= {"y_pred", "y_true", "y_score"}
    for text in (spec.source, spec.meaning, spec.formula):
        assert isinstance(text, str) and text.strip()
    assert spec.informational or spec.fair_range is not None
    if spec.informational:
        assert spec.fair_range is None
    else:
        assert isinstance(spec.ideal, float), "a metric with a fair range needs an ideal value"
        lo, hi = spec.fair_range.resolve({"overall_auc": 1.0})
        assert lo <= spec.ideal <= hi, "the ideal value must be fair"
        if spec.fair_range.relative_to is not None:
            assert mc.get_metric(spec.fair_range.relative_to).level == "model"
    if spec.level == "group":
        assert spec.support, "a group metric must say which denominators gate it"
    assert spec.interval in ("wilson", "scas", "components", "auc_score", "normal", "transformed", "none")


TASK_SPECS = [m for m in mc.REGISTRY.values() if m.family in TASK_FAMILIES]


@pytest.mark.parametrize("spec", TASK_SPECS, ids=[m.name for m in TASK_SPECS])
def test_every_task_family_metric_is_fully_described(spec):
    assert re.fullmatch(r"[a-z][a-z0-9_]*", spec.name)
    assert spec.level in ("group", "model")
    assert spec.requires
    for text in (spec.source, spec.meaning, spec.formula):
        assert isinstance(text, str) and text.strip()
    if spec.fair_range is not None:
        assert spec.ideal is not None, "a metric with a fair range needs an ideal value"
        lo, hi = spec.fair_range.resolve()
        assert lo <= spec.ideal <= hi, "the ideal value must be fair"
    assert spec.interval in (
        "wilson",
        "scas",
        "normal",
        "fieller",
        "zou",
        "bootstrap",
        "witness",
        "permutation",
        "none",
    )


def test_fair_ranges_are_those_of_metrics_md():
    for name, (lo, hi) in SPEC_RANGES.items():
        rng = mc.get_metric(name).fair_range
        assert rng is not None and rng.relative_to is None, name
        assert (rng.min, rng.max) == (lo, hi), name
    for name in RELATIVE_AUC:
        rng = mc.get_metric(name).fair_range
        assert (rng.min, rng.max, rng.relative_to) == (-0.05, None, "overall_auc")
        assert rng.resolve({"overall_auc": 0.9}) == (pytest.approx(0.85), math.inf)
        assert math.isnan(rng.resolve({})[0])
    assert {m.name for m in ALL if m.informational} == INFORMATIONAL
    assert set(SPEC_RANGES) | set(RELATIVE_AUC) | INFORMATIONAL == BINARY


def test_interval_methods_are_those_of_metrics_md():
    for name, method in SPEC_INTERVALS.items():
        assert mc.get_metric(name).interval == method, name


def test_families_and_levels_partition_the_registry():
    names = mc.metric_names()
    assert names == list(mc.REGISTRY) and len(set(names)) == len(names)
    by_family = [mc.metric_names(family=f) for f in (*BINARY_FAMILIES, *TASK_FAMILIES)]
    assert sorted(name for family in by_family for name in family) == sorted(names)
    assert all(by_family), "every family has metrics"
    assert set(mc.metric_names(family="model")) <= set(mc.metric_names(level="model"))
    bounds = {f"{name}_rounding_error" for name in RELATIVE_AUC}
    assert set(mc.metric_names(family="ranking")) == {*RELATIVE_AUC, *bounds, "negative_aeg", "positive_aeg"}


def test_aliases_resolve():
    assert mc.get_metric("adverse_impact_ratio").name == "disparate_impact"
    assert mc.get_metric("air").name == "disparate_impact"
    # the former name, which promtool's lint refused as a Prometheus family (fairwatch_cohens_d)
    assert mc.get_metric("cohens_d").name == "standardized_selection_rate_difference"
    aliases = [a for m in ALL for a in m.aliases]
    assert len(set(aliases)) == len(aliases) and not set(aliases) & set(mc.REGISTRY)
    attr = mc.indicator_attribute("identity", {"g": [1, 1, 0, 0]})
    table = mc.table_for([0.9, 0.1, 0.8, 0.7], [1, 0, 1, 0], [attr])
    report = mc.evaluate(table, attr.comparisons, metrics=["adverse_impact_ratio"], min_samples=1)
    assert [v.metric for v in report.values] == ["disparate_impact"]
    assert report.values[0].value == pytest.approx(0.5)


@pytest.mark.parametrize("name", ["nope", "Disparate_Impact", "auc", ""])
def test_unknown_metric_names_raise_naming_the_metric(name):
    with pytest.raises(ValueError, match=re.escape(repr(name))):
        mc.get_metric(name)
    with pytest.raises(ValueError, match=re.escape(repr(name))):
        mc.resolve_fair_range(name)
    table = mc.ScoreTable.from_arrays([0.1, 0.9], [0, 1])
    with pytest.raises(ValueError, match=re.escape(repr(name))):
        mc.evaluate(table, [], metrics=["selection_rate", name])


def test_fair_range_overrides():
    assert mc.resolve_fair_range("disparate_impact", {"disparate_impact": (0.9, None)}) == mc.FairRange(
        0.9, None
    )
    assert (
        mc.resolve_fair_range("disparate_impact", {"standardized_selection_rate_difference": (0, 1)})
        == mc.get_metric("disparate_impact").fair_range
    )
    # an override of the relative AUC range is absolute
    assert mc.resolve_fair_range("subgroup_auc", {"subgroup_auc": (0.7, None)}).relative_to is None
    attr = mc.indicator_attribute("identity", {"g": [1, 1, 0, 0]})
    table = mc.table_for([0.9, 0.1, 0.8, 0.7], [1, 0, 1, 0], [attr])
    v = mc.evaluate(
        table,
        attr.comparisons,
        metrics=["disparate_impact"],
        fair_ranges={"disparate_impact": (0.4, None)},
        min_samples=1,
    ).values[0]
    assert (v.fair_min, v.fair_max, v.state) == (0.4, math.inf, "ok")
    with pytest.raises(ValueError, match="above max"):
        mc.FairRange(1.0, 0.5)


def test_fair_range_descriptions():
    assert mc.FairRange(-0.1, 0.1).describe() == "[-0.1, 0.1]"
    assert mc.FairRange(0.0, None).describe() == "[0, +inf]"
    assert mc.get_metric("bpsn_auc").fair_range.describe() == ">= overall_auc - 0.05"


def test_registry_as_dicts_is_json_ready_and_complete():
    rows = mc.registry_as_dicts()
    assert [r["name"] for r in rows] == list(mc.REGISTRY)
    text = json.dumps(rows)
    assert "adverse_impact_ratio" in text
    by_name = {r["name"]: r for r in rows}
    assert by_name["selection_rate"]["fair_range"] == "informational"
    assert (by_name["disparate_impact"]["fair_min"], by_name["disparate_impact"]["fair_max"]) == (0.8, 1.25)
    for row in rows:
        assert row["source"] and row["meaning"] and row["formula"]


def test_public_api_does_not_drift():
    assert sorted(mc.__all__) == sorted(PUBLIC_API)
    assert len(set(mc.__all__)) == len(mc.__all__)
    for name in mc.__all__:
        assert hasattr(mc, name), name
    assert mc.STATES == ("ok", "inconclusive", "violation", "insufficient_data")
    assert mc.LABELS == ("negative", "positive", "unlabeled")
