"""Plain words (monitor.evaluation.wording): the rates behind a value, its interval and range, per day.
Hand-built values; the rates behind a difference and a ratio are checked by arithmetic."""

from __future__ import annotations

import math

import pytest

from metrics_core import MetricValue
from monitor.evaluation.results import Words
from monitor.evaluation.wording import metric_name, per_day, plain_value, reference_text

LOANS = Words("approval", "applicants")


def _value(
    metric: str, value: float, lo: float, hi: float, fair: tuple[float, float], reference: str = "White"
) -> MetricValue:
    return MetricValue(
        "race", "Black", reference, metric, value, lo, hi, *fair, "violation", 1900, 7000, 1900
    )


def test_a_ratio_and_a_difference_quote_both_groups_rates() -> None:
    rates = {("race", "Black", "White", "selection_rate"): 0.40}
    ratio = plain_value(
        _value("disparate_impact", 0.40 / 0.59, 0.62, 0.74, (0.8, 1.25)), words=LOANS, rates=rates
    )
    assert ratio == (
        "the approval rate of Black applicants was 40% against 59% for White "
        "(disparate impact 0.678, 95% interval 0.62 to 0.74, fair range [0.8, 1.25])"
    )
    difference = plain_value(
        _value("statistical_parity_difference", -0.19, -0.21, -0.17, (-0.1, 0.1)), words=LOANS, rates=rates
    )
    assert "was 40% against 59% for White (statistical parity difference -0.19," in difference
    tpr = {("race", "Black", "rest", "true_positive_rate"): 0.055}
    eo = plain_value(
        _value("equal_opportunity_difference", -0.02, -0.03, -0.01, (-0.1, 0.1), "rest"),
        rates=tpr,
        confidence=0.9,
    )
    assert eo.startswith("the true positive rate of Black rows was 5.5% against 7.5% for the rest (")
    assert "90% interval" in eo


def test_a_value_without_rates_reads_as_its_metric() -> None:
    auc = plain_value(_value("bpsn_auc", 0.71, 0.68, 0.74, (0.75, math.inf)), words=LOANS)
    assert (
        auc
        == "the BPSN AUC of Black applicants against White was 0.71 (95% interval 0.68 to 0.74, fair range at least 0.75)"
    )
    # a ratio whose group rate is unknown, or of a value of 0, has no rates to quote
    assert plain_value(_value("disparate_impact", 0.0, 0.0, 0.1, (0.8, 1.25))).startswith(
        "the disparate impact of"
    )


@pytest.mark.parametrize(
    ("reference", "said"), [("White", "White"), ("rest", "the rest"), ("background", "the other rows")]
)
def test_references_in_words(reference: str, said: str) -> None:
    assert reference_text(reference) == said


def test_names_and_sizes() -> None:
    assert metric_name("subgroup_auc") == "subgroup AUC" and metric_name("negative_aeg") == "negative AEG"
    assert per_day(1900, 7, LOANS) == "about 271 applicants a day"
    assert per_day(1900, 0, LOANS) == "" and per_day(math.nan, 1, LOANS) == ""


def test_the_size_a_day_is_the_groups_rows_not_its_effective_sample() -> None:
    """Under sampling weights a value's n_group is its Kish effective size (1,752 here); the people a
    day are the rows the window's group stands for (87,600) - a review's case."""
    from dataclasses import replace
    from datetime import UTC, datetime

    from monitor.evaluation.results import GroupStats, ModelEvaluation
    from monitor.evaluation.wording import plain_finding
    from tests.monitor.test_exporter import window_result

    value = replace(_value("disparate_impact", 0.5, 0.4, 0.6, (0.8, 1.25)), n_group=1752)
    window = replace(window_result("1h", [value]), groups=(GroupStats("race", "Black", "White", 3_650, 0),))
    evaluation = ModelEvaluation("loans", datetime(2026, 3, 2, tzinfo=UTC), 0.0, (window,), 0, words=LOANS)
    # a 1-hour window: 3,650 rows an hour are 87,600 a day
    assert plain_finding(value, window, evaluation, confidence=0.95).endswith("about 87,600 applicants a day")
