"""Inputs real logs produce: numeric categories with NULLs, fractional membership, aliases, unknown labels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import metrics_core as mc


def test_numeric_categories_keep_one_name_whatever_the_dtype() -> None:
    ints = np.array([1, 2, 1, 3, 2, 1])
    floats_with_null = np.array([1.0, 2.0, 1.0, 3.0, 2.0, np.nan])
    objects = floats_with_null.astype(object)  # what a pandas column with a NULL gives
    for values in (ints, floats_with_null, objects):
        attr = mc.categorical_attribute("grade", values, reference="1")
        assert [(c.group, c.reference) for c in attr.comparisons] == [("2", "1"), ("3", "1")]
    assert mc.categorical_attribute("grade", objects, reference=1.0).comparisons[0].reference == "1"
    inter = mc.intersection_attribute(
        {"grade": objects, "sex": ["f", "m", "f", "f", "m", "f"]}, reference=[1, "f"]
    )
    assert all(c.reference == "1&f" for c in inter.comparisons)


def test_pandas_na_is_missing() -> None:
    import pandas as pd

    values = pd.Series(["a", pd.NA, "b"], dtype="string").to_numpy()
    assert mc.categorical_attribute("x", values).n_missing == 1


@pytest.mark.parametrize("dtype", [object, str])
def test_empty_and_blank_text_are_both_missing(dtype: type) -> None:
    values = np.array(["a", "", "  ", "\t", "b", "a"], dtype=dtype)
    attr = mc.categorical_attribute("x", values)
    assert attr.groups == ["a", "b"] and attr.n_missing == 3
    inter = mc.intersection_attribute({"x": values, "y": ["f"] * 6})
    assert inter.groups == ["a&f", "b&f"] and inter.n_missing == 3


def test_max_groups_keeps_the_largest_and_drops_the_rest_before_any_mask() -> None:
    values = np.array(["c"] * 5 + ["a"] * 3 + ["b"] * 3 + ["d"] * 1 + ["ref"] * 4, dtype=object)
    attr = mc.categorical_attribute("x", values, reference="ref", max_groups=2)
    assert attr.groups == ["a", "c"]  # the two largest, b tied with a but later; in name order
    assert sorted(attr.dropped) == ["b", "d"]
    assert sorted(attr.masks) == ["x=a", "x=c", "x=ref"]  # no mask for a dropped group
    rest = mc.categorical_attribute("x", values, max_groups=3, min_size=4)
    assert rest.groups == ["c", "ref"] and sorted(rest.dropped) == ["a", "b", "d"]
    indicator = mc.indicator_attribute(
        "identity", {"m": [1, 0, 0, 0], "f": [1, 1, 1, 0], "o": [1, 1, 0, 0]}, max_groups=2
    )
    assert indicator.groups == ["f", "o"] and indicator.dropped == ("m",)
    assert sorted(indicator.masks) == ["identity=f", "identity=o"]
    with pytest.raises(ValueError, match="max_groups"):
        mc.categorical_attribute("x", values, max_groups=0)


def test_a_hundred_thousand_distinct_values_are_capped_in_one_pass() -> None:
    values = np.array([f"user-{i}" for i in range(100_000)] + ["big"] * 50, dtype=object)
    attr = mc.categorical_attribute("x", values, max_groups=200)
    assert len(attr.comparisons) == 200 and len(attr.dropped) == 100_001 - 200
    assert attr.groups[0] == "big"  # the largest group is kept; the others tie at one row
    assert len(attr.masks) == 201  # 200 groups and the "rest" universe, nothing else


def test_public_ranking_functions_binarise_membership_at_one_half() -> None:
    rng = np.random.default_rng(0)
    score = rng.random(500)
    y = (rng.random(500) < score).astype(int)
    fraction = rng.choice([0.0, 0.1, 0.6, 0.9, np.nan], 500)  # Jigsaw's annotator fractions
    member = fraction >= 0.5
    assert mc.subgroup_auc(y, score, fraction) == pytest.approx(
        roc_auc_score(y[member], score[member]), abs=1e-12
    )


def test_four_fifths_ratio_is_symmetric_when_one_side_selects_nobody() -> None:
    scores = [0.9] * 50 + [0.1] * 50 + [0.1] * 100
    group = [True] * 100 + [False] * 100
    table = mc.ScoreTable.from_arrays(scores, [0] * 200, {"g": group, "r": [not g for g in group]})
    both = [mc.Comparison("a", "g", "g", "r", "r"), mc.Comparison("a", "r", "r", "g", "g")]
    report = mc.evaluate(table, both, metrics=["four_fifths_ratio"], min_samples=1)
    for v in report.values:  # G selects half, R nobody; and the other way round
        assert v.value == 0.0 and v.ci_lower == 0.0 and 0 < v.ci_upper < 0.8 and v.state == "violation"


def test_fair_range_overrides_accept_aliases() -> None:
    assert mc.resolve_fair_range("disparate_impact", {"air": (0.9, 1.1)}) == mc.FairRange(0.9, 1.1)
    with pytest.raises(ValueError, match="nope"):
        mc.resolve_fair_range("disparate_impact", {"nope": (0, 1)})


def test_inequality_indices_skip_unknown_labels_and_refuse_scores() -> None:
    assert mc.theil_index([1, 0, np.nan, 1], [1, 1, 0, 0]) == pytest.approx(
        mc.theil_index([1, 0, 1], [1, 1, 0])
    )
    with pytest.raises(ValueError, match="y_pred must hold 0/1"):
        mc.generalized_entropy_index([1, 0, 1, 0], [0.7, 0.2, 0.9, 0.1])
    assert math.isnan(mc.theil_index([np.nan], [1]))


def test_average_odds_interval_does_not_collapse_when_rates_are_0_or_1() -> None:
    # every positive selected and no negative selected on both sides: all four rates are 0 or 1
    scores = [0.9] * 20 + [0.1] * 20 + [0.9] * 20 + [0.1] * 20
    labels = [1] * 20 + [0] * 20 + [1] * 20 + [0] * 20
    group = [True] * 40 + [False] * 40
    table = mc.ScoreTable.from_arrays(scores, labels, {"g": group})
    v = mc.evaluate(table, [mc.Comparison("a", "g", "g")], metrics=["average_odds_difference"], min_samples=1)
    value = v.get("average_odds_difference", "g")
    assert value.value == 0.0
    assert value.ci_lower < 0.0 < value.ci_upper  # 0 successes in 20 is not certainty
