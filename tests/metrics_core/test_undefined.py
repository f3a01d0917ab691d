"""Undefined is not zero: NaN with a reason and state ``insufficient_data``, never 0 or inf.

Each scenario below is a small window in which some metrics are undefined. The expected
sets of undefined metrics are written out by hand from the definitions of metrics.md, so a
metric that silently returns 0 (holisticai's TPR for a group without positives) or inf (a
ratio over a zero reference rate) fails here.
"""

from __future__ import annotations

import math

import pytest

import metrics_core as mc

# the binary families, evaluated from a score table; each task family's test file covers its own NaN cases
GROUP_METRICS = [
    n for n in mc.metric_names(level="group") if mc.get_metric(n).family in ("classification", "ranking")
]
MODEL_METRICS = mc.metric_names(family="model")
PER_GROUP_RATES = {
    "selection_rate",
    "true_positive_rate",
    "false_positive_rate",
    "false_negative_rate",
    "positive_predictive_value",
    "accuracy",
}
# Everything else depends on the reference too (subgroup AUC only looks inside the group).
COMPARATIVE = set(GROUP_METRICS) - PER_GROUP_RATES - {"subgroup_auc", "subgroup_auc_rounding_error"}


def with_bounds(names: set[str]) -> set[str]:
    """An AUC's rounding bound is undefined exactly where the AUC is (one of its sets is empty)."""
    return names | {f"{n}_rounding_error" for n in names if n in ("subgroup_auc", "bpsn_auc", "bnsp_auc")}


TPR_BASED = {
    "true_positive_rate",
    "false_negative_rate",
    "equal_opportunity_difference",
    "false_negative_rate_difference",
    "average_odds_difference",
    "average_abs_odds_difference",
    "equalized_odds_difference",
    "recall_ratio",
}
FPR_BASED = {
    "false_positive_rate",
    "false_positive_rate_difference",
    "average_odds_difference",
    "average_abs_odds_difference",
    "equalized_odds_difference",
}
LABEL_FREE = {
    "selection_rate",
    "statistical_parity_difference",
    "disparate_impact",
    "four_fifths_ratio",
    "standardized_selection_rate_difference",
    "two_sd_rule",
    "standardized_mean_difference",
}
POWER_MEANS = {"power_mean_subgroup_auc", "power_mean_bpsn_auc", "power_mean_bnsp_auc", "jigsaw_final_score"}
BENEFIT = {"theil_index", "generalized_entropy_index", "coefficient_of_variation"}
nan = math.nan

# (score, label) rows of the group G and of its reference R (the background); threshold 0.5.
MIXED_R = [(0.9, 1), (0.4, 1), (0.7, 0), (0.1, 0), (0.55, 1), (0.35, 0)]
SCENARIOS: dict[str, tuple[list, list, set[str], set[str]]] = {
    # name: (G rows, R rows, undefined group-level metrics, undefined model-level metrics)
    "group_without_positives": (
        [(0.8, 0), (0.3, 0), (0.6, 0), (0.2, 0)],
        MIXED_R,
        with_bounds(TPR_BASED | {"subgroup_auc", "bnsp_auc", "positive_aeg"}),
        {"power_mean_subgroup_auc", "power_mean_bnsp_auc", "jigsaw_final_score"},
    ),
    "group_without_negatives": (
        [(0.8, 1), (0.3, 1), (0.6, 1), (0.2, 1)],
        MIXED_R,
        with_bounds(FPR_BASED | {"subgroup_auc", "bpsn_auc", "negative_aeg"}),
        {"power_mean_subgroup_auc", "power_mean_bpsn_auc", "jigsaw_final_score"},
    ),
    "one_class_window": (
        [(0.8, 0), (0.3, 0), (0.6, 0)],
        [(0.9, 0), (0.2, 0), (0.7, 0)],
        # PPV_R = 0 / 2 selected: the precision ratio has a zero denominator
        with_bounds(TPR_BASED | {"subgroup_auc", "bpsn_auc", "bnsp_auc", "positive_aeg", "precision_ratio"}),
        {"overall_auc"} | POWER_MEANS,
    ),
    "reference_never_selected": (
        [(0.8, 1), (0.3, 0), (0.6, 0), (0.2, 1)],
        [(0.1, 1), (0.2, 0), (0.3, 1), (0.4, 0)],
        # SR_R = 0, TPR_R = 0 and PPV_R has no selected rows at all; four_fifths_ratio is
        # min(SR)/max(SR) = 0, a real (total) disparity, whichever side selects nobody
        {"disparate_impact", "precision_ratio", "recall_ratio"},
        set(),
    ),
    "everything_selected": (
        [(0.8, 1), (0.6, 0), (0.9, 0)],
        [(0.7, 1), (0.5, 0), (0.95, 1), (0.6, 0)],
        {"standardized_selection_rate_difference", "two_sd_rule"},  # pooled sd 0 on both sides
        set(),
    ),
    "nothing_selected": (
        [(0.1, 1), (0.2, 0), (0.3, 0)],
        [(0.4, 1), (0.1, 0), (0.2, 1)],
        {
            "disparate_impact",
            "four_fifths_ratio",
            "standardized_selection_rate_difference",
            "two_sd_rule",
            "positive_predictive_value",
            "precision_ratio",
            "recall_ratio",
        },
        set(),
    ),
    "group_all_selected_reference_none": (
        [(0.8, 1), (0.6, 0), (0.9, 0)],
        [(0.1, 1), (0.2, 0), (0.3, 0)],
        # standardized_selection_rate_difference: pooled sd 0 (each side constant); disparate impact: SR_R = 0
        {"standardized_selection_rate_difference", "disparate_impact", "precision_ratio", "recall_ratio"},
        set(),
    ),
    "constant_scores": (
        [(0.7, 1), (0.7, 0), (0.7, 0)],
        [(0.7, 1), (0.7, 0), (0.7, 1)],
        {"standardized_mean_difference", "standardized_selection_rate_difference", "two_sd_rule"},
        set(),
    ),
    "no_labels_yet": (
        [(0.8, nan), (0.3, nan), (0.6, nan)],
        [(0.9, nan), (0.2, nan), (0.4, nan)],
        set(GROUP_METRICS) - LABEL_FREE,
        {"overall_auc"} | POWER_MEANS | BENEFIT,
    ),
    "every_labeled_row_a_false_negative": (
        [(0.1, 1), (0.3, 1), (0.6, nan)],
        [(0.2, 1), (0.4, 1), (0.9, nan)],
        # no labeled negative anywhere; the only selected rows are unlabeled (no PPV); TPR_R = 0.
        # benefit b = ŷ - y + 1 = 0 for every labeled row: mean 0, the indices divide by it
        with_bounds(
            FPR_BASED
            | {"subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg"}
            | {"positive_predictive_value", "precision_ratio", "recall_ratio"}
        ),
        {"overall_auc"} | POWER_MEANS | BENEFIT,
    ),
    "empty_group": ([], MIXED_R, set(GROUP_METRICS), POWER_MEANS),
}


def _evaluate(g_rows, r_rows, *, min_samples=1):
    rows = g_rows + r_rows
    score = [s for s, _ in rows]
    y = [t for _, t in rows]
    attr = mc.indicator_attribute("identity", {"g": [1] * len(g_rows) + [0] * len(r_rows)})
    table = mc.table_for(score, y, [attr])
    return mc.evaluate(table, attr.comparisons, min_samples=min_samples)


def assert_nan_rule(report: mc.Report) -> None:
    """NaN <=> a non-empty reason; NaN is insufficient_data; never +-inf."""
    for v in report.values:
        assert not math.isinf(v.value), v
        if math.isnan(v.value):
            assert isinstance(v.reason, str) and v.reason.strip(), v
            assert v.state == "insufficient_data", v
        else:
            assert v.reason is None, v
        assert v.state in mc.STATES
    for m in report.model:
        assert not math.isinf(m.value), m
        assert math.isnan(m.value) == bool(m.reason), m


@pytest.fixture(scope="module")
def scenario_reports():
    return {name: _evaluate(g, r) for name, (g, r, _, _) in SCENARIOS.items()}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_exactly_the_expected_metrics_are_undefined(scenario_reports, name):
    _, _, undefined, undefined_model = SCENARIOS[name]
    report = scenario_reports[name]
    got = {v.metric for v in report.values if math.isnan(v.value)}
    assert got == undefined
    got_model = {m.metric for m in report.model if math.isnan(m.value)}
    assert got_model == undefined_model
    assert_nan_rule(report)


@pytest.mark.parametrize("metric", GROUP_METRICS + MODEL_METRICS)
def test_nan_rule_for_every_metric_in_every_scenario(scenario_reports, metric):
    """Registry-wide: whatever the scenario, a metric is either a finite number, or NaN with
    a reason and state insufficient_data."""
    for report in scenario_reports.values():
        for v in report.values:
            if v.metric == metric:
                assert math.isfinite(v.value) or (math.isnan(v.value) and v.reason), v
                assert not math.isnan(v.value) or v.state == "insufficient_data", v
        for m in report.model:
            if m.metric == metric:
                assert math.isfinite(m.value) or (math.isnan(m.value) and m.reason), m


def test_reasons_say_what_is_missing(scenario_reports):
    r = scenario_reports["group_without_positives"]
    for metric in (
        "true_positive_rate",
        "equal_opportunity_difference",
        "subgroup_auc",
        "bnsp_auc",
        "positive_aeg",
    ):
        assert "group" in r.get(metric, "g").reason and "positive" in r.get(metric, "g").reason, metric
    r = scenario_reports["group_without_negatives"]
    for metric in ("false_positive_rate", "subgroup_auc", "bpsn_auc", "negative_aeg"):
        assert "negative" in r.get(metric, "g").reason, metric
    r = scenario_reports["reference_never_selected"]
    assert "reference" in r.get("disparate_impact", "g").reason
    ff = r.get("four_fifths_ratio", "g")
    assert ff.value == 0.0 and ff.ci_lower == 0.0 and 0.0 < ff.ci_upper <= 1.0
    r = scenario_reports["one_class_window"]
    assert r.model_value("overall_auc").reason
    r = scenario_reports["every_labeled_row_a_false_negative"]
    assert "no labeled rows" not in r.model_value("theil_index").reason  # there are labeled rows


def test_zero_reference_rate_gives_nan_not_inf():
    r = _evaluate([(0.8, 1), (0.6, 0)], [(0.1, 1), (0.2, 0)])
    v = r.get("disparate_impact", "g")
    assert math.isnan(v.value) and math.isnan(v.ci_lower) and math.isnan(v.ci_upper)
    # the reference rate 0 is not a zero group rate: the other way round the ratio is 0
    r = _evaluate([(0.1, 1), (0.2, 0)], [(0.8, 1), (0.6, 0)])
    assert r.get("disparate_impact", "g").value == 0.0
    assert r.get("four_fifths_ratio", "g").value == 0.0


def test_standardized_selection_rate_difference_with_both_sides_all_selected_is_nan():
    r = _evaluate([(0.9, 1), (0.8, 0)], [(0.7, 1), (0.6, 0), (0.95, 0)])
    v = r.get("standardized_selection_rate_difference", "g")
    assert math.isnan(v.value) and "standard deviation" in v.reason
    assert v.state == "insufficient_data"


# --- empty groups ----------------------------------------------------------------------------


def test_categorical_reference_absent_from_the_window():
    """reference="a" but no row has race a: every comparison is undefined (not an error),
    while the group's own rates (and subgroup AUC) stay defined and are judged by the
    group's own denominators."""
    race = ["b", "b", "c", "c", "b", "c"]
    attr = mc.categorical_attribute("race", race, reference="a")
    table = mc.table_for([0.9, 0.2, 0.7, 0.4, 0.6, 0.1], [1, 0, 1, 0, 0, 1], [attr])
    report = mc.evaluate(table, attr.comparisons, min_samples=1)
    assert {(v.group, v.reference) for v in report.values} == {("b", "a"), ("c", "a")}
    for v in report.values:
        if v.metric in COMPARATIVE:
            assert math.isnan(v.value) and "reference" in v.reason, v
            assert v.state == "insufficient_data" and v.n_reference == 0
        else:
            assert math.isfinite(v.value), v
            assert v.state != "insufficient_data", v  # the group has rows of both labels
    assert_nan_rule(report)
    rate = report.get("selection_rate", "b")
    assert rate.value == pytest.approx(2 / 3) and rate.support == 3


@pytest.mark.parametrize("metric", GROUP_METRICS)
def test_empty_indicator_group_is_undefined_for_every_metric(scenario_reports, metric):
    v = scenario_reports["empty_group"].get(metric, "g")
    assert math.isnan(v.value) and v.reason and v.state == "insufficient_data"
    assert v.n_group == 0 and v.support == 0


# --- min_samples gating ------------------------------------------------------------------------


def test_defined_values_below_min_samples_are_insufficient_data():
    g = [(0.9, 1), (0.2, 0), (0.8, 0), (0.1, 1)]
    r = [(0.7, 1), (0.3, 0)] * 20
    report = _evaluate(g, r, min_samples=5)
    for v in report.values:
        assert math.isfinite(v.value), v
        assert v.state == "insufficient_data", v  # the group has 4 rows, 2 positives, 2 negatives
        assert v.reason is None
    report = _evaluate(g * 10, r, min_samples=5)
    assert all(v.state != "insufficient_data" for v in report.values)


def test_support_is_the_smallest_denominator():
    g = [(0.9, 1), (0.2, 0), (0.8, 0), (0.1, 0), (0.6, nan)]
    r = [(0.7, 1), (0.3, 0), (0.4, 1)]
    report = _evaluate(g, r)
    assert report.get("selection_rate", "g").support == 5
    assert report.get("true_positive_rate", "g").support == 1  # one labeled positive in G
    assert report.get("equal_opportunity_difference", "g").support == 1
    assert report.get("false_positive_rate_difference", "g").support == 1  # one negative in R
    assert report.get("average_odds_difference", "g").support == 1
    assert report.get("statistical_parity_difference", "g").support == 3
    assert report.get("subgroup_auc", "g").support == 1
    assert report.get("negative_aeg", "g").support == 1
    assert report.get("positive_aeg", "g").support == 1


def test_single_row_auc_has_a_value_and_a_wide_interval():
    """One row on each side: no DeLong variance, but the score interval (Newcombe's method 5) exists."""
    report = _evaluate([(0.9, 1), (0.2, 0)], [(0.7, 1), (0.3, 0), (0.4, 1)])
    v = report.get("subgroup_auc", "g")
    assert v.value == 1.0 and v.reason is None
    assert v.ci_upper == 1.0 and v.ci_lower < 0.3  # two rows tell almost nothing


def test_a_report_as_a_data_frame_keeps_nan_and_its_reason() -> None:
    """In a notebook: one row per value, NaN kept (never 0), the reason beside it; HTML for display."""
    report = mc.Report(
        (
            mc.MetricValue(
                "g", "a", "rest", "disparate_impact", 0.9, 0.8, 1.0, 0.8, 1.25, "ok", 500, 5000, 500
            ),
            mc.MetricValue(
                "g",
                "b",
                "rest",
                "disparate_impact",
                math.nan,
                math.nan,
                math.nan,
                0.8,
                1.25,
                "insufficient_data",
                0,
                5000,
                0,
                reason="group has no rows",
            ),
        )
    )
    frame = report.to_pandas()
    assert list(frame["group"]) == ["a", "b"] and frame["value"].iloc[0] == 0.9
    assert math.isnan(frame["value"].iloc[1]) and frame["reason"].iloc[1] == "group has no rows"
    html = report._repr_html_()
    assert "<table" in html and "group has no rows" in html and "NaN" in html
