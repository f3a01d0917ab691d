"""Multiclass family: hand-computed values, loop references, holisticai's code, NaN cases, evaluate()."""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

import numpy as np
import pytest

from metrics_core import multiclass as mcl
from metrics_core.multiclass import kernels as mk
from metrics_core.multiclass import (
    multiclass_all_pairs,
    multiclass_average_odds,
    multiclass_equality_of_opportunity,
    multiclass_statistical_parity,
    multiclass_true_positive_difference,
)
from metrics_core.window.groups import categorical_attribute, indicator_attribute

BASES = ("statistical_parity", "equality_of_opportunity", "average_odds", "true_positive_difference")
PUBLIC = {
    "statistical_parity": lambda yt, yp, g, r=None: multiclass_statistical_parity(yp, g, r),
    "equality_of_opportunity": multiclass_equality_of_opportunity,
    "average_odds": multiclass_average_odds,
    "true_positive_difference": multiclass_true_positive_difference,
}

# holisticai's docstring example (p_attr, y_pred, y_true)
HAI_P = np.array(list("AAAABBBBCC"))
HAI_PRED = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
HAI_TRUE = np.array([0, 1, 1, 0, 1, 0, 2, 1, 2, 1])

# A hand-made 3-class window: group G (7 labeled rows + 2 unlabeled), reference R (3 rows).
# (true, pred) pairs; None = label not yet known.
G_ROWS = [
    ("a", "a"),
    ("a", "b"),
    ("b", "b"),
    ("b", "b"),
    ("b", "a"),
    ("c", "c"),
    ("c", "a"),
    (None, "c"),
    (None, "c"),
]
R_ROWS = [("a", "a"), ("b", "b"), ("c", "c")]


def _window(g_rows, r_rows):
    rows = g_rows + r_rows
    y_true = np.array([t for t, _ in rows], dtype=object)
    y_pred = np.array([p for _, p in rows])
    group = np.array([True] * len(g_rows) + [False] * len(r_rows))
    return y_true, y_pred, group


# --- 1. hand-computed values ------------------------------------------------------------


def test_hand_computed_three_class_window():
    # P(pred | true) columns, G: a -> (1/2, 1/2, 0), b -> (1/3, 2/3, 0), c -> (1/2, 0, 1/2); R: identity.
    # Gaps: a (-1/2, 1/2, 0), b (1/3, -1/3, 0), c (1/2, 0, -1/2).
    y_true, y_pred, group = _window(G_ROWS, R_ROWS)
    # EO: mean of the columns' total variations (1/2, 1/3, 1/2)
    assert multiclass_equality_of_opportunity(y_true, y_pred, group) == pytest.approx(4 / 9, abs=1e-15)
    # AO: row sums of the gaps (1/3, 1/6, -1/2), sum of abs / (2 * 3)
    assert multiclass_average_odds(y_true, y_pred, group) == pytest.approx(1 / 6, abs=1e-15)
    # TPD: diagonal gaps (1/2, 1/3, 1/2)
    assert multiclass_true_positive_difference(y_true, y_pred, group) == pytest.approx(4 / 9, abs=1e-15)
    # SP counts every row: G predicts a, b, c 3 times each, as R does once each -> 0
    assert multiclass_statistical_parity(y_pred, group) == pytest.approx(0.0, abs=1e-15)
    # without the unlabeled rows G predicts (3/7, 3/7, 1/7): TV to (1/3, 1/3, 1/3) = 4/21
    y_true7, y_pred7, group7 = _window(G_ROWS[:7], R_ROWS)
    assert multiclass_statistical_parity(y_pred7, group7) == pytest.approx(4 / 21, abs=1e-15)
    assert multiclass_equality_of_opportunity(y_true7, y_pred7, group7) == pytest.approx(4 / 9, abs=1e-15)


def test_support_is_the_smallest_denominator():
    y_true, y_pred, group = _window(G_ROWS, R_ROWS)
    attr = categorical_attribute("side", np.where(group, "G", "R"), reference="R")
    report = mcl.evaluate({"y_pred": y_pred, "y_true": y_true}, [attr], min_samples=2)
    sp = report.get("multiclass_statistical_parity", "G")
    assert sp.support == 3 and sp.state == "ok"  # rows: G 9, R 3
    eo = report.get("multiclass_equality_of_opportunity", "G")
    assert eo.value == pytest.approx(4 / 9) and eo.support == 1  # R has one labeled row per class
    assert eo.state == "insufficient_data" and eo.reason is None
    assert report.label_coverage == {"side=G": pytest.approx(7 / 9)}


def test_hand_computed_holisticai_example_statistical_parity():
    # A predicts (1/2, 1/4, 1/4), B (1/4, 1/2, 1/4), C (1/2, 0, 1/2): TV(A,B) = TV(A,C) = 1/4, TV(B,C) = 1/2
    assert multiclass_all_pairs(None, HAI_PRED, HAI_P, metric="statistical_parity", aggregation="max") == 0.5
    mean = multiclass_all_pairs(None, HAI_PRED, HAI_P, metric="statistical_parity", aggregation="mean")
    assert mean == pytest.approx(1 / 3, abs=1e-15)
    assert multiclass_statistical_parity(HAI_PRED, HAI_P == "B", HAI_P == "A") == pytest.approx(0.25)
    # A against the rest (B and C predict 1/3 each): (1/6 + 1/12 + 1/12) / 2
    assert multiclass_statistical_parity(HAI_PRED, HAI_P == "A") == pytest.approx(1 / 6)


def test_two_classes_reduce_to_the_binary_metrics():
    rng = np.random.default_rng(3)
    n = 400
    y_true, y_pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
    group = rng.random(n) < 0.4

    def rate(mask, num, den):
        return (mask & num & den).sum() / (mask & den).sum()

    pos, neg, hit = y_true == 1, y_true == 0, y_pred == 1
    d_tpr = rate(group, hit, pos) - rate(~group, hit, pos)
    d_fpr = rate(group, hit, neg) - rate(~group, hit, neg)
    d_sr = hit[group].mean() - hit[~group].mean()
    assert multiclass_statistical_parity(y_pred, group) == pytest.approx(abs(d_sr), abs=1e-12)
    assert multiclass_average_odds(y_true, y_pred, group) == pytest.approx(abs(d_tpr + d_fpr) / 2, abs=1e-12)
    # holisticai's "equality of opportunity" and "true positive difference" both become the
    # average *absolute* odds difference with two classes (TNR gap = -FPR gap)
    expected = (abs(d_tpr) + abs(d_fpr)) / 2
    assert multiclass_equality_of_opportunity(y_true, y_pred, group) == pytest.approx(expected, abs=1e-12)
    assert multiclass_true_positive_difference(y_true, y_pred, group) == pytest.approx(expected, abs=1e-12)


# --- 2. slow, obviously correct references ------------------------------------------------


def ref_distance(base, y_true, y_pred, g, r, classes):
    """Loops over rows and classes; unlabeled rows are None."""

    def dist(rows):
        counts = Counter(p for _, p in rows)
        return {c: counts[c] / len(rows) for c in classes}

    def conditional(rows):
        out = {}
        for j in classes:
            preds = [p for t, p in rows if t == j]
            if preds:
                out[j] = {i: sum(p == i for p in preds) / len(preds) for i in classes}
        return out

    rows_g = [(y_true[i], y_pred[i]) for i in range(len(y_pred)) if g[i]]
    rows_r = [(y_true[i], y_pred[i]) for i in range(len(y_pred)) if r[i]]
    if base == "statistical_parity":
        if not rows_g or not rows_r:
            return math.nan
        dg, dr = dist(rows_g), dist(rows_r)
        return sum(abs(dg[c] - dr[c]) for c in classes) / 2
    cg = conditional([row for row in rows_g if row[0] is not None])
    cr = conditional([row for row in rows_r if row[0] is not None])
    if set(cg) != set(cr) or not cg:
        return math.nan
    shared = sorted(cg)
    if base == "equality_of_opportunity":
        return sum(sum(abs(cg[j][i] - cr[j][i]) for i in classes) / 2 for j in shared) / len(shared)
    if base == "true_positive_difference":
        return sum(abs(cg[j][j] - cr[j][j]) for j in shared) / len(shared)
    total = 0.0
    for i in classes:
        total += abs(sum(cg[j][i] - cr[j][i] for j in shared) / len(shared))
    return total / 2


def _random_window(seed, n=300, n_classes=4, unlabeled=0.2):
    rng = np.random.default_rng(seed)
    classes = [f"k{i}" for i in range(n_classes)]
    weights = np.linspace(1, 0.15, n_classes)
    weights /= weights.sum()
    y_true = rng.choice(classes, n, p=weights).astype(object)
    y_pred = np.where(rng.random(n) < 0.6, y_true, rng.choice(classes, n)).astype(str)
    y_true[rng.random(n) < unlabeled] = None
    attr = rng.choice(list("PQRS"), n, p=[0.4, 0.3, 0.2, 0.1])
    return y_true, y_pred, attr, sorted(classes)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("base", BASES)
def test_group_vs_reference_matches_loop_reference(base, seed):
    y_true, y_pred, attr, classes = _random_window(seed)
    for g_name, r_name in [("Q", "P"), ("S", "P"), ("S", None)]:
        g = attr == g_name
        r = ~g if r_name is None else attr == r_name
        expected = ref_distance(base, y_true, y_pred, g, r, classes)
        got = PUBLIC[base](y_true, y_pred, g, r)
        if math.isnan(expected):
            assert math.isnan(got)
        else:
            assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("aggregation", ["mean", "max"])
@pytest.mark.parametrize("base", BASES)
def test_all_pairs_matches_loop_reference(base, aggregation):
    y_true, y_pred, attr, classes = _random_window(5, n=600, n_classes=3, unlabeled=0.1)
    values = [
        ref_distance(base, y_true, y_pred, attr == a, attr == b, classes)
        for a, b in itertools.combinations(sorted(set(attr)), 2)
    ]
    expected = max(values) if aggregation == "max" else sum(values) / len(values)
    got = multiclass_all_pairs(y_true, y_pred, attr, metric=base, aggregation=aggregation)
    assert got == pytest.approx(expected, abs=1e-12)


def test_labels_of_mixed_types_are_one_class():
    # ints for predictions, floats with NaN for labels (a pandas column with missing values)
    y_pred = np.array([1, 2, 1, 2, 1, 1])
    y_true = np.array([1.0, 2.0, np.nan, 2.0, 1.0, 2.0])
    group = np.array([1, 1, 1, 0, 0, 0])
    as_text = multiclass_equality_of_opportunity(
        np.array(["1", "2", None, "2", "1", "2"], dtype=object), y_pred.astype(str), group
    )
    assert multiclass_equality_of_opportunity(y_true, y_pred, group) == pytest.approx(as_text)


# --- 3. holisticai's code, transcribed (holisticai 1.0.14, bias/metrics/_multiclass.py) -----


def hai_confusion_tensor(p_attr, y_pred, y_true, groups, classes):
    class_dict = dict(zip(classes, range(len(classes)), strict=True))
    group_dict = dict(zip(groups, range(len(groups)), strict=True))
    conftens = np.zeros((len(groups), len(classes), len(classes)))
    for x, y, z in zip(p_attr, y_pred, y_true, strict=True):
        conftens[group_dict[x], class_dict[y], class_dict[z]] += 1
    return conftens


def hai_metric(base, p_attr, y_pred, y_true, aggregation_fun="mean"):
    groups = np.sort(np.unique(p_attr))
    if base == "statistical_parity":
        classes = np.sort(np.unique(y_pred))
        sr_mat = np.zeros((len(groups), len(classes)))
        for x, y in zip(p_attr, y_pred, strict=True):
            sr_mat[list(groups).index(x), list(classes).index(y)] += 1
        sr_mat = sr_mat / sr_mat.sum(axis=1).reshape(-1, 1) + 1e-32
    else:
        classes = np.sort(np.unique(np.concatenate((y_pred, y_true))))
        conftens = hai_confusion_tensor(p_attr, y_pred, y_true, groups, classes) + 1e-32
        norm = conftens.sum(axis=1)
    num_groups, num_classes = len(groups), len(classes)
    dist_mat = np.zeros((num_groups, num_groups))
    for k in range(num_groups):
        for j in range(k + 1, num_groups):
            if base == "statistical_parity":
                dist_mat[k, j] = np.abs(sr_mat[k] - sr_mat[j]).sum() / 2
                continue
            confmat_k, confmat_j = conftens[k] / norm[k, :], conftens[j] / norm[j, :]
            if base == "equality_of_opportunity":
                dist_mat[k, j] = np.sum(np.abs(confmat_k - confmat_j)) / (2 * num_classes)
            elif base == "average_odds":
                dist_mat[k, j] = np.abs((confmat_k - confmat_j).sum(axis=1)).sum() / (2 * num_classes)
            else:
                dist_mat[k, j] = np.abs(np.diag(confmat_k - confmat_j)).mean()
    if aggregation_fun == "max":
        return np.max(dist_mat)
    return np.sum(dist_mat) / (num_groups * (num_groups - 1) / 2)


@pytest.mark.parametrize("aggregation", ["mean", "max"])
@pytest.mark.parametrize("base", BASES)
def test_equals_holisticai_when_every_group_has_every_true_class(base, aggregation):
    rng = np.random.default_rng(11)
    n = 2000
    p_attr = rng.choice(list("ABCD"), n)
    y_true = rng.integers(0, 4, n)
    y_pred = np.where(rng.random(n) < 0.6, y_true, rng.integers(0, 4, n))
    ours = multiclass_all_pairs(y_true, y_pred, p_attr, metric=base, aggregation=aggregation)
    assert ours == pytest.approx(hai_metric(base, p_attr, y_pred, y_true, aggregation), abs=1e-12)


@pytest.mark.parametrize("base", ["equality_of_opportunity", "average_odds", "true_positive_difference"])
def test_departure_class_never_true_is_left_out_not_averaged_as_zero(base):
    """A class that is predicted but never the true class: holisticai divides by C, fairwatch by |J|."""
    rng = np.random.default_rng(2)
    n = 1500
    p_attr = rng.choice(list("AB"), n)
    y_true = rng.integers(0, 3, n)  # classes 0, 1, 2 are true; class 3 is only ever predicted
    y_pred = np.where(rng.random(n) < 0.6, y_true, rng.integers(0, 4, n))
    ours = multiclass_all_pairs(y_true, y_pred, p_attr, metric=base)
    theirs = hai_metric(base, p_attr, y_pred, y_true)
    assert ours > 0
    assert theirs == pytest.approx(ours * 3 / 4, abs=1e-12)  # diluted by the zero column of class 3


@pytest.mark.parametrize(
    ("base", "holisticai_value"),
    [
        ("equality_of_opportunity", 0.7962962962962963),
        ("average_odds", 0.16666666666666666),
        ("true_positive_difference", 0.6666666666666666),
    ],
)
def test_departure_class_labeled_on_one_side_is_nan_not_imputed(base, holisticai_value):
    """holisticai's docstring example: group A has no row of true class 2, C none of class 0.

    holisticai's +1e-32 turns the missing column into a uniform 1/C distribution and reports
    a number (its docstring values); fairwatch reports NaN with the reason.
    """
    assert hai_metric(base, HAI_P, HAI_PRED, HAI_TRUE) == pytest.approx(holisticai_value, abs=1e-12)
    assert math.isnan(multiclass_all_pairs(HAI_TRUE, HAI_PRED, HAI_P, metric=base))
    with pytest.raises(
        mk.Undefined, match=r"groups 'A' and 'B': the group 'A' has no labeled rows of true class 2"
    ):
        cells = [mk.cells(*_codes(HAI_PRED[g == HAI_P], HAI_TRUE[g == HAI_P]), 3) for g in "ABC"]
        mk.all_pairs(base, cells, ["A", "B", "C"], (0, 1, 2), "mean")


def _codes(pred, true):
    return pred.astype(np.int64), true.astype(np.int64)


def test_departure_from_the_docs_distance_is_total_variation_not_mean_absolute_deviation():
    """The docs call the distance a "mean absolute deviation" (sum / C); the code divides by 2."""
    y_pred = np.array(["a", "b", "c", "a", "a", "a"])
    group = np.array([1, 1, 1, 0, 0, 0])
    gap = np.abs(np.array([1 / 3, 1 / 3, 1 / 3]) - np.array([1.0, 0.0, 0.0])).sum()
    assert multiclass_statistical_parity(y_pred, group) == pytest.approx(gap / 2)  # code: 2/3
    assert gap / 3 != pytest.approx(gap / 2)  # docs' reading: 4/9


# --- 4. undefined values -----------------------------------------------------------------


def test_undefined_values_are_nan_with_a_reason_and_insufficient_data():
    attr = categorical_attribute("race", ["a", "a", "b", "b", "b", "c"], reference="z")  # z absent
    y_pred = ["x", "y", "x", "x", "y", "y"]
    report = mcl.evaluate({"y_pred": y_pred}, [attr], min_samples=1)
    v = report.get("multiclass_statistical_parity", "b")
    assert math.isnan(v.value) and v.reason == "the reference has no rows"
    assert v.state == "insufficient_data" and math.isnan(v.ci_lower)


def test_label_metrics_need_labels_on_both_sides():
    attr = categorical_attribute("race", ["a"] * 4 + ["b"] * 4, reference="a")
    y_pred = ["x", "y", "x", "y", "x", "y", "x", "y"]
    y_true = ["x", "y", "x", "y", None, None, None, None]
    report = mcl.evaluate({"y_pred": y_pred, "y_true": y_true}, [attr], min_samples=1)
    eo = report.get("multiclass_equality_of_opportunity", "b")
    assert math.isnan(eo.value) and eo.reason == "the group has no labeled rows"
    assert eo.state == "insufficient_data" and eo.support == 0
    sp = report.get("multiclass_statistical_parity", "b")
    assert sp.value == 0.0 and sp.reason is None
    assert report.label_coverage == {"race=b": 0.0}
    one_side = mcl.evaluate(
        {"y_pred": y_pred, "y_true": ["x", "y", "x", "y", "x", None, "x", None]}, [attr], min_samples=1
    ).get("multiclass_true_positive_difference", "b")
    assert one_side.reason == "the group has no labeled rows of true class 'y' (the reference has)"
    assert math.isnan(one_side.value) and one_side.state == "insufficient_data"


def test_model_level_needs_two_groups():
    attr = categorical_attribute("race", ["a"] * 5)
    report = mcl.evaluate({"y_pred": [1, 2, 1, 2, 1]}, [attr], min_samples=1)
    mv = report.model_value("multiclass_statistical_parity_mean", "race")
    assert math.isnan(mv.value) and mv.reason == "fewer than two non-empty groups"
    assert math.isnan(multiclass_all_pairs(None, [1, 2], ["a", "a"], metric="statistical_parity"))


# --- 5. evaluate() end to end --------------------------------------------------------------


@pytest.fixture(scope="module")
def window():
    y_true, y_pred, attr, _ = _random_window(7, n=900, n_classes=3, unlabeled=0.15)
    return {"y_pred": y_pred, "y_true": y_true}, attr


@pytest.mark.parametrize("reference", ["P", "rest"])
def test_evaluate_matches_the_public_functions(window, reference):
    data, attr_values = window
    attr = categorical_attribute("race", attr_values, reference=reference)
    report = mcl.evaluate(data, [attr], n_resamples=100, min_samples=20)
    assert {v.metric for v in report.values} == {s.name for s in mcl.SPECS if s.level == "group"}
    for c in attr.comparisons:
        g = attr_values == c.group
        r = ~g if reference == "rest" else attr_values == reference
        for base in BASES:
            v = report.get(f"multiclass_{base}", c.group)
            assert v.reference == reference
            assert v.value == pytest.approx(PUBLIC[base](data["y_true"], data["y_pred"], g, r), abs=1e-12)
            assert 0.0 <= v.ci_lower <= v.ci_upper <= 1.0
            assert (v.fair_min, v.fair_max) == (0.0, 0.1)
            if v.support >= 20:  # labeled rows of the rarest true class, on the smaller side
                assert v.state in ("ok", "inconclusive", "violation")
            else:
                assert v.state == "insufficient_data"
            assert v.n_group == g.sum() and v.n_reference == r.sum()
    for base, agg in itertools.product(BASES, ("mean", "max")):
        mv = report.model_value(f"multiclass_{base}_{agg}", "race")
        expected = multiclass_all_pairs(
            data["y_true"], data["y_pred"], attr_values, metric=base, aggregation=agg
        )
        assert mv.value == pytest.approx(expected, abs=1e-12)  # rest or named reference: the same groups
    labeled = np.array([t is not None for t in data["y_true"]])
    assert report.label_coverage["race=Q"] == pytest.approx(labeled[attr_values == "Q"].mean())


def test_evaluate_detects_a_shifted_group_and_passes_a_fair_one():
    rng = np.random.default_rng(4)
    n = 6000
    attr_values = rng.choice(["fair", "ref", "shifted"], n)
    y_true = rng.choice(["a", "b", "c"], n)
    keep = rng.random(n) < np.where(attr_values == "shifted", 0.4, 0.9)
    y_pred = np.where(keep, y_true, rng.choice(["a", "b", "c"], n))
    attr = categorical_attribute("g", attr_values, reference="ref")
    report = mcl.evaluate({"y_pred": y_pred, "y_true": y_true}, [attr], n_resamples=200)
    assert report.get("multiclass_equality_of_opportunity", "shifted").state == "violation"
    assert report.get("multiclass_true_positive_difference", "shifted").state == "violation"
    assert report.get("multiclass_equality_of_opportunity", "fair").state == "ok"
    assert report.get("multiclass_statistical_parity", "fair").state == "ok"


def test_evaluate_is_deterministic_and_row_order_invariant(window):
    data, attr_values = window
    perm = np.random.default_rng(0).permutation(len(attr_values))
    shuffled = {k: np.asarray(v)[perm] for k, v in data.items()}
    a = mcl.evaluate(data, [categorical_attribute("race", attr_values)], n_resamples=50)
    b = mcl.evaluate(data, [categorical_attribute("race", attr_values)], n_resamples=50)
    c = mcl.evaluate(shuffled, [categorical_attribute("race", attr_values[perm])], n_resamples=50)
    assert repr(a) == repr(b)
    for va, vc in zip(a.values, c.values, strict=True):
        assert va.value == pytest.approx(vc.value, abs=1e-12)
        assert (va.ci_lower, va.ci_upper) == pytest.approx(
            (vc.ci_lower, vc.ci_upper), abs=1e-12
        )  # count cells


def test_evaluate_with_overlapping_indicator_groups():
    y_pred = np.array(["a", "b", "a", "b", "a", "a"])
    attr = indicator_attribute("identity", {"x": [1, 1, 1, 0, 0, 0], "y": [0, 1, 1, 1, 0, 0]})
    report = mcl.evaluate({"y_pred": y_pred}, [attr], min_samples=1)
    v = report.get("multiclass_statistical_parity", "y")
    assert v.reference == "background"
    assert v.value == pytest.approx(multiclass_statistical_parity(y_pred, [0, 1, 1, 1, 0, 0]))
    mv = report.model_value("multiclass_statistical_parity_max", "identity")
    # the two (overlapping) groups x = (a, b, a), y = (b, a, b)
    assert mv.value == pytest.approx(1 / 3)


def test_evaluate_selects_metrics_by_the_data_it_has():
    attr = categorical_attribute("race", ["a", "b", "a", "b"])
    report = mcl.evaluate({"y_pred": [1, 2, 1, 1]}, [attr], min_samples=1)
    assert {v.metric for v in report.values} == {"multiclass_statistical_parity"}
    assert {m.metric for m in report.model} == {
        "multiclass_statistical_parity_mean",
        "multiclass_statistical_parity_max",
    }
    with pytest.raises(
        ValueError, match=re.escape("'multiclass_average_odds' needs the data key(s) ['y_true']")
    ):
        mcl.evaluate({"y_pred": [1, 2, 1, 1]}, [attr], metrics=["multiclass_average_odds"])
    with pytest.raises(ValueError, match=re.escape("'statistical_parity_difference'")):
        mcl.evaluate({"y_pred": [1, 2, 1, 1]}, [attr], metrics=["statistical_parity_difference"])
    with pytest.raises(TypeError, match="quantiles"):
        mcl.evaluate({"y_pred": [1, 2, 1, 1]}, [attr], quantiles=[0.5])
    with pytest.raises(ValueError, match="y_pred has 1 missing values"):
        mcl.evaluate({"y_pred": [1, 2, None, 1]}, [attr])
    with pytest.raises(ValueError, match="class 3, which is not in classes"):
        mcl.evaluate({"y_pred": [1, 2, 3, 1]}, [attr], classes=[1, 2])


def test_specs_are_complete():
    names = [s.name for s in mcl.SPECS]
    assert len(names) == len(set(names)) == 12
    for s in mcl.SPECS:
        assert s.family == "multiclass" and s.computation == "groupwise"
        assert s.fair_range is not None and (s.fair_range.min, s.fair_range.max) == (0.0, 0.1)
        assert s.ideal == 0.0 and s.source and s.meaning and s.formula
        assert s.requires <= set(mcl.INPUTS) and "y_pred" in s.requires
        assert s.interval == ("bootstrap" if s.level == "group" else "none")
        assert s.level == "model" or s.support


def test_counted_entries_weigh_as_the_rows_they_stand_for():
    """Distinct (prediction, label, group) entries with a row count each: every value, interval,
    size and coverage is that of the rows themselves."""
    rng = np.random.default_rng(4)
    n = 2000
    pred = rng.choice(["a", "b", "c"], n)
    true = rng.choice(["a", "b", "c", None], n, p=[0.3, 0.3, 0.2, 0.2])
    race = rng.choice(["x", "y", "z"], n, p=[0.5, 0.3, 0.2])
    rows = mcl.evaluate(
        {"y_pred": pred, "y_true": true}, [categorical_attribute("race", race.tolist(), reference="x")]
    )
    keys = np.array([f"{p}|{t}|{r}" for p, t, r in zip(pred, true, race, strict=True)])
    distinct, first, count = np.unique(keys, return_index=True, return_counts=True)
    assert distinct.size < 40
    counted = mcl.evaluate(
        {"y_pred": pred[first], "y_true": true[first], "sample_weight": count},
        [categorical_attribute("race", race[first].tolist(), reference="x")],
    )
    assert counted.values == rows.values
    assert counted.model == rows.model
    assert rows.label_coverage and counted.label_coverage == pytest.approx(rows.label_coverage)
    assert counted.get("multiclass_statistical_parity", "y").n_group == (race == "y").sum()


def test_entries_of_weight_zero_make_no_group():
    """An attribute's group whose entries all stand for no row is absent, as it would be in the rows."""
    pred, true = np.array(["a", "b", "a", "b", "a", "c"]), np.array(["a", "a", "b", "b", "a", "c"])
    race = np.array(["x", "x", "y", "y", "z", "z"])
    weight = np.array([3, 2, 1, 4, 0, 0])
    weighted = mcl.evaluate(
        {"y_pred": pred, "y_true": true, "sample_weight": weight.astype(float)},
        [categorical_attribute("race", race.tolist(), reference="x")],
        min_samples=1,
    )
    rows = mcl.evaluate(
        {"y_pred": np.repeat(pred, weight), "y_true": np.repeat(true, weight)},
        [categorical_attribute("race", np.repeat(race, weight).tolist(), reference="x")],
        min_samples=1,
    )
    for name in ("multiclass_statistical_parity_mean", "multiclass_statistical_parity_max"):
        value = weighted.model_value(name, "race").value
        assert not math.isnan(value) and value == pytest.approx(rows.model_value(name, "race").value)
