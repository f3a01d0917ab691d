"""Score-ranking metrics (seeds 000/001): hand-computed cases, sklearn/scipy references, invariances."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.metrics import roc_auc_score

import metrics_core as mc
from metrics_core.binary.window import BinaryWindow
from tests.metrics_core.reference import (
    auc_score_interval_slow,
    build,
    delong_slow,
    make_window,
    same,
    seed000,
)

RANKING = ("subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg")
Z95 = float(norm.ppf(0.975))


def _indicator_report(score, y, groups, **kwargs):
    attr = mc.indicator_attribute("identity", groups)
    table = mc.table_for(score, y, [attr])
    return mc.evaluate(table, attr.comparisons, min_samples=1, **kwargs)


# --- 1. hand-computed tiny cases -----------------------------------------------------------


def test_seed000_comment_tables():
    """The two tables of seed 000: a subgroup non-toxic comment above a background toxic one
    (BPSN), a subgroup toxic comment below a background non-toxic one (BNSP)."""
    # "I hate you, die!" (toxic), "I am gay!", "What the heck!", "I hate christians!" (toxic)
    score = [0.85, 0.9, 0.45, 0.40]
    y = [1, 0, 0, 1]
    groups = {"homosexual": [0, 1, 0, 0], "christian": [0, 0, 0, 1]}
    report = _indicator_report(score, y, groups)
    # homosexual: D_g- = {0.9}; background positives D+ = {0.85, 0.40}: both pairs misordered
    assert report.get("bpsn_auc", "homosexual").value == 0.0
    # christian: D_g+ = {0.40}; background negatives D- = {0.9, 0.45}: both pairs misordered
    assert report.get("bnsp_auc", "christian").value == 0.0
    # each group holds one class only: its subgroup AUC is undefined, not 0
    assert math.isnan(report.get("subgroup_auc", "homosexual").value)
    assert math.isnan(report.get("subgroup_auc", "christian").value)


# Eight rows, two overlapping indicator groups g = {E, F, G, H} and h = {B, C, E, G}.
#        A     B     C     D     E     F     G     H
SCORE = [0.1, 0.4, 0.35, 0.8, 0.3, 0.9, 0.6, 0.4]
LABEL = [0, 0, 1, 1, 0, 0, 1, 1]
G = [0, 0, 0, 0, 1, 1, 1, 1]
H = [0, 1, 1, 0, 1, 0, 1, 0]
# Counted pair by pair (x over y: 1 if x > y, 1/2 if tied):
#  g: D_g+ = {0.6, 0.4}  D_g- = {0.3, 0.9}   D+ = {0.35, 0.8}  D- = {0.1, 0.4}
#     subgroup  (0.6>0.3, 0.6<0.9, 0.4>0.3, 0.4<0.9)          = 2/4
#     bpsn      (0.35>0.3, 0.35<0.9, 0.8>0.3, 0.8<0.9)        = 2/4
#     bnsp      (0.6>0.1, 0.6>0.4, 0.4>0.1, 0.4=0.4)          = 3.5/4
#     neg AEG   g- over D-: (0.3>0.1, 0.3<0.4, 0.9>0.1, 0.9>0.4) = 3/4, - 1/2
#     pos AEG   g+ over D+: (0.6>0.35, 0.6<0.8, 0.4>0.35, 0.4<0.8) = 2/4, - 1/2
#  h: D_h+ = {0.35, 0.6}  D_h- = {0.4, 0.3}  D+ = {0.8, 0.4}  D- = {0.1, 0.9}
#     subgroup  (0.35<0.4, 0.35>0.3, 0.6>0.4, 0.6>0.3)        = 3/4
#     bpsn      (0.8>0.4, 0.8>0.3, 0.4=0.4, 0.4>0.3)          = 3.5/4
#     bnsp      (0.35>0.1, 0.35<0.9, 0.6>0.1, 0.6<0.9)        = 2/4
#     neg AEG   (0.4>0.1, 0.4<0.9, 0.3>0.1, 0.3<0.9)          = 2/4, - 1/2
#     pos AEG   (0.35<0.8, 0.35<0.4, 0.6<0.8, 0.6>0.4)        = 1/4, - 1/2
HAND = {
    "g": {
        "subgroup_auc": 0.5,
        "bpsn_auc": 0.5,
        "bnsp_auc": 0.875,
        "negative_aeg": 0.25,
        "positive_aeg": 0.0,
    },
    "h": {
        "subgroup_auc": 0.75,
        "bpsn_auc": 0.875,
        "bnsp_auc": 0.5,
        "negative_aeg": 0.0,
        "positive_aeg": -0.25,
    },
}
# overall: positives {0.35, 0.8, 0.6, 0.4} over negatives {0.1, 0.4, 0.3, 0.9}
# 0.35 beats 2, 0.8 beats 3, 0.6 beats 3, 0.4 beats 2 and ties 1: 10.5 / 16
HAND_OVERALL = 10.5 / 16


@pytest.mark.parametrize("group", ["g", "h"])
@pytest.mark.parametrize("metric", RANKING)
def test_worked_example_by_hand(group, metric):
    report = _indicator_report(SCORE, LABEL, {"g": G, "h": H})
    assert report.get(metric, group).value == pytest.approx(HAND[group][metric], abs=1e-15)


@pytest.mark.parametrize("group", ["g", "h"])
def test_worked_example_convenience_functions(group):
    member = G if group == "g" else H
    funcs = {
        "subgroup_auc": mc.subgroup_auc,
        "bpsn_auc": mc.bpsn_auc,
        "bnsp_auc": mc.bnsp_auc,
        "negative_aeg": mc.negative_aeg,
        "positive_aeg": mc.positive_aeg,
    }
    for metric, func in funcs.items():
        assert func(LABEL, SCORE, np.array(member, dtype=bool)) == pytest.approx(
            HAND[group][metric], abs=1e-15
        )
    assert mc.overall_auc(LABEL, SCORE) == pytest.approx(HAND_OVERALL, abs=1e-15)


def test_worked_example_power_means_and_final_score():
    report = _indicator_report(SCORE, LABEL, {"g": G, "h": H})
    # M_-5(a, b) = ((a^-5 + b^-5) / 2)^(-1/5), written out with the hand AUCs above
    m_subgroup = ((0.5**-5 + 0.75**-5) / 2) ** (-1 / 5)
    m_bpsn = ((0.5**-5 + 0.875**-5) / 2) ** (-1 / 5)
    m_bnsp = ((0.875**-5 + 0.5**-5) / 2) ** (-1 / 5)
    assert m_subgroup == pytest.approx(0.5603, abs=1e-4)  # 0.5 and 0.75: pulled to the worst
    final = 0.25 * HAND_OVERALL + 0.25 * (m_subgroup + m_bpsn + m_bnsp)
    assert report.model_value("overall_auc").value == pytest.approx(HAND_OVERALL, abs=1e-15)
    got = {
        "power_mean_subgroup_auc": m_subgroup,
        "power_mean_bpsn_auc": m_bpsn,
        "power_mean_bnsp_auc": m_bnsp,
        "jigsaw_final_score": final,
    }
    for name, expected in got.items():
        assert report.model_value(name, "identity").value == pytest.approx(expected, abs=1e-14), name


def test_power_mean_by_hand():
    # mean of 0.5^-5 = 32 and 1^-5 = 1 is 16.5
    assert mc.power_mean([0.5, 1.0]) == pytest.approx(16.5 ** (-1 / 5), abs=1e-15)
    assert mc.power_mean([0.8, 0.8, 0.8]) == pytest.approx(0.8, abs=1e-15)
    assert mc.power_mean([0.2, 0.6], p=1) == pytest.approx(0.4, abs=1e-15)
    assert mc.power_mean([0.25, 1.0], p=0) == pytest.approx(0.5, abs=1e-15)  # geometric mean
    # p = -5 is dominated by the worst group: far below the arithmetic mean
    assert mc.power_mean([0.5, 0.95, 0.95, 0.95]) == pytest.approx(
        ((32 + 3 * 0.95**-5) / 4) ** -0.2, abs=1e-15
    )
    assert mc.power_mean([0.5, 0.95, 0.95, 0.95]) < 0.65 < np.mean([0.5, 0.95, 0.95, 0.95])
    assert math.isnan(mc.power_mean([0.9, math.nan]))  # as the competition code
    assert math.isnan(mc.power_mean([]))


def test_jigsaw_evaluator_on_random_data():
    """The competition's JigsawEvaluator (seed 001), transcribed, against evaluate()."""
    w = make_window(11, n=600, decimals=2)
    identity = np.column_stack([np.nan_to_num(v) for v in w.indicators.values()])[:, :3]
    y = (w.y >= 0.5).astype(int)
    y_i = (identity >= 0.5).astype(int)

    def power_mean(array):
        return np.power(sum(np.power(array, -5)) / len(array), 1 / -5)

    records = np.zeros((3, y_i.shape[1]))
    for i in range(y_i.shape[1]):
        records[0, i] = roc_auc_score(y[y_i[:, i] == 1], w.score[y_i[:, i] == 1])
        records[1, i] = roc_auc_score(y[y_i[:, i] + y == 1], w.score[y_i[:, i] + y == 1])
        records[2, i] = roc_auc_score(y[y_i[:, i] + y != 1], w.score[y_i[:, i] + y != 1])
    bias = np.average([power_mean(records[0]), power_mean(records[1]), power_mean(records[2])])
    expected = 0.25 * roc_auc_score(y, w.score) + 0.75 * bias

    groups = {name: identity[:, j] for j, name in enumerate(list(w.indicators)[:3])}
    report = _indicator_report(w.score, y, groups)
    assert report.model_value("jigsaw_final_score", "identity").value == pytest.approx(expected, abs=1e-12)
    for k, kind in enumerate(("subgroup", "bpsn", "bnsp")):
        got = report.model_value(f"power_mean_{kind}_auc", "identity").value
        assert got == pytest.approx(power_mean(records[k]), abs=1e-12)


# --- 2. references on seeded random data with heavy ties -------------------------------------

WINDOWS = [(seed, decimals) for seed in (0, 1, 2, 3) for decimals in (1, 2)]


@pytest.fixture(scope="module", params=WINDOWS, ids=[f"seed{s}-dec{d}" for s, d in WINDOWS])
def evaluated(request):
    seed, decimals = request.param
    w = make_window(seed, decimals=decimals, unlabeled=0.1)
    built = build(w)
    report = mc.evaluate(
        built.table, built.comparisons, metrics=[*RANKING, "jigsaw_final_score"], min_samples=1
    )
    return w, built, report


def test_windows_have_heavy_ties(evaluated):
    w, built, _ = evaluated
    assert built.table.n_scores <= 101 < w.n  # every score value is shared by many rows
    kinds = {c.reference for c in built.cases}
    assert {"background", "a", "rest", "a|f"} <= kinds


def test_ranking_metrics_equal_seed000_references(evaluated):
    """Every subgroup/BPSN/BNSP AUC equals roc_auc_score on the seed-000 row subsets and every
    AEG equals 1/2 - mannwhitneyu(background, subgroup).statistic / (n1 n2), to 1e-12."""
    w, built, report = evaluated
    checked = 0
    for case in built.cases:
        expected = seed000(w.score, w.y, case.g, case.r)
        for metric in RANKING:
            got = report.get(metric, case.group, case.attribute)
            assert got.reference == case.reference
            assert same(got.value, expected[metric]), (case.attribute, case.group, metric, got, expected)
            checked += not math.isnan(expected[metric])
    assert checked >= 5 * 20  # most comparisons are defined


def test_overall_auc_equals_roc_auc_score(evaluated):
    w, _, report = evaluated
    labeled = ~np.isnan(w.y)
    expected = roc_auc_score(w.y[labeled], w.score[labeled])
    assert report.model_value("overall_auc").value == pytest.approx(expected, abs=1e-12)
    assert mc.overall_auc(w.y, w.score) == pytest.approx(expected, abs=1e-12)


def test_convenience_functions_equal_references(evaluated):
    w, built, _ = evaluated
    funcs = {
        "subgroup_auc": mc.subgroup_auc,
        "bpsn_auc": mc.bpsn_auc,
        "bnsp_auc": mc.bnsp_auc,
        "negative_aeg": mc.negative_aeg,
        "positive_aeg": mc.positive_aeg,
    }
    for case in built.cases:
        if case.reference != "background":
            continue  # the functions take one mask: the reference is its complement
        expected = seed000(w.score, w.y, case.g, case.r)
        for metric, func in funcs.items():
            assert same(func(w.y, w.score, case.g), expected[metric]), (case.group, metric)


_SETS = {  # metric -> (X, Y, offset): the AUC of X over Y, as BinaryWindow.auc names the sets
    "subgroup_auc": ("group+", "group-", 0.0),
    "bpsn_auc": ("reference+", "group-", 0.0),
    "bnsp_auc": ("group+", "reference-", 0.0),
    "negative_aeg": ("group-", "reference-", 0.5),
    "positive_aeg": ("group+", "reference+", 0.5),
}


def test_delong_variance_and_score_interval_equal_slow_references(evaluated):
    """Each AUC-family value: DeLong's variance as the slow O(n_x n_y) kernel gives it, and the interval
    of Newcombe's method 5 as scipy's root finder gives it, widened to the logit Wald interval on that
    variance (``reference.auc_score_interval_slow``)."""
    w, built, report = evaluated
    window = BinaryWindow(built.table, built.comparisons, threshold=0.5, level=0.95)
    index = {(s.attribute, s.group, s.reference): i for i, s in enumerate(window.sides)}
    pos, neg = w.y == 1, w.y == 0
    checked = 0
    for case in built.cases:
        g, r = case.g, case.r
        masks = {"group+": g & pos, "group-": g & neg, "reference+": r & pos, "reference-": r & neg}
        i = index[(case.attribute, case.group, case.reference)]
        for metric, (x_name, y_name, offset) in _SETS.items():
            v = report.get(metric, case.group, case.attribute)
            x, y = masks[x_name], masks[y_name]
            if x.sum() < 2 or y.sum() < 2:
                continue
            auc, var = delong_slow(w.score[x], w.score[y])
            assert v.value + offset == pytest.approx(auc, abs=1e-12)
            assert window.auc(x_name, y_name).variance[i] == pytest.approx(var, abs=1e-12, rel=1e-9)
            lo, hi = auc_score_interval_slow(auc, x.sum(), y.sum(), variance=var)
            assert (v.ci_lower + offset, v.ci_upper + offset) == pytest.approx((lo, hi), abs=1e-9), (
                case,
                metric,
            )
            checked += 1
    assert checked >= 60
    labeled = pos | neg
    auc, var = delong_slow(w.score[pos], w.score[neg])
    overall = report.model_value("overall_auc")
    assert overall.value == pytest.approx(auc, abs=1e-12)
    assert (overall.ci_lower, overall.ci_upper) == pytest.approx(
        auc_score_interval_slow(auc, pos.sum(), neg.sum(), variance=var), abs=1e-9
    )
    assert labeled.sum() < w.n  # unlabeled rows were present and ignored


def test_delong_by_hand():
    """X = {0.3, 0.8}, Y = {0.3, 0.1}: kernel rows (1/2, 1) and (1, 1); AUC = 3.5/4.
    V10 = (0.75, 1), V01 = (0.75, 1): S10 = S01 = 2 * 0.125^2 / 1 = 1/32; Var = 1/64 + 1/64."""
    table = mc.table_for(
        [0.3, 0.8, 0.3, 0.1], [1, 1, 0, 0], [mc.indicator_attribute("i", {"all": [1, 1, 1, 1]})]
    )
    window = BinaryWindow(table, [mc.Comparison("i", "all", "i=all")], threshold=0.5, level=0.95)
    fit = window.auc("group+", "group-")
    assert fit.estimate[0] == 0.875 and fit.variance[0] == pytest.approx(1 / 32, abs=1e-15)
    report = _indicator_report([0.3, 0.8, 0.3, 0.1], [1, 1, 0, 0], {"all": [1, 1, 1, 1]})
    v = report.get("subgroup_auc", "all")
    assert v.value == 0.875
    assert (v.ci_lower, v.ci_upper) == pytest.approx(
        auc_score_interval_slow(0.875, 2, 2, variance=1 / 32), abs=1e-12
    )


# --- 3. invariances over the registry ------------------------------------------------------


def _values(report: mc.Report) -> dict[tuple[str, str, str], tuple[float, float, float, str]]:
    out = {}
    for v in report.values:
        out[(v.metric, v.attribute, v.group)] = (v.value, v.ci_lower, v.ci_upper, v.state)
    for m in report.model:
        out[(m.metric, m.attribute, "")] = (m.value, m.ci_lower, m.ci_upper, m.reason or "")
    return out


def _identical(a, b) -> bool:
    return a.keys() == b.keys() and all(
        all(
            (x == y) or (isinstance(x, float) and math.isnan(x) and math.isnan(y))
            for x, y in zip(a[k], b[k], strict=True)
        )
        for k in a
    )


@pytest.fixture(scope="module")
def base_window():
    return make_window(5, n=500, decimals=1, unlabeled=0.1)


@pytest.fixture(scope="module")
def base_values(base_window):
    built = build(base_window)
    return _values(mc.evaluate(built.table, built.comparisons, min_samples=5))


def test_every_registry_metric_is_evaluated(base_values):
    binary = {n for n, m in mc.REGISTRY.items() if m.family in ("classification", "ranking", "model")}
    assert {k[0] for k in base_values} == binary


@pytest.mark.parametrize("order", ["shuffled", "by_label", "by_label_desc", "reversed"])
def test_row_order_invariance(base_window, base_values, order):
    """Shuffling the rows (or sorting them by label, the worst case for position ranks)
    leaves every value, interval bound and state of every registry metric identical."""
    w = base_window
    rng = np.random.default_rng(99)
    rows = {
        "shuffled": rng.permutation(w.n),
        "by_label": np.argsort(np.nan_to_num(w.y, nan=2.0), kind="stable"),
        "by_label_desc": np.argsort(-np.nan_to_num(w.y, nan=2.0), kind="stable"),
        "reversed": np.arange(w.n)[::-1],
    }[order]
    built = build(w.take(rows))
    assert _identical(_values(mc.evaluate(built.table, built.comparisons, min_samples=5)), base_values)


def test_list_input_equals_array_input(base_window, base_values):
    w = base_window
    attributes = [
        mc.indicator_attribute("identity", {k: v.tolist() for k, v in w.indicators.items()}),
        mc.categorical_attribute("race", w.race.tolist(), reference="a"),
        mc.categorical_attribute("race_vs_rest", w.race.tolist(), reference="rest"),
        mc.intersection_attribute({"race": w.race.tolist(), "sex": w.sex.tolist()}),
        mc.intersection_attribute(
            {"race": w.race.tolist(), "sex": w.sex.tolist()}, reference=("a", "f"), separator="|"
        ),
    ]
    y = [None if math.isnan(v) else int(v) for v in w.y]
    table = mc.table_for(w.score.tolist(), y, attributes)
    comparisons = [c for a in attributes for c in a.comparisons]
    assert _identical(_values(mc.evaluate(table, comparisons, min_samples=5)), base_values)


def test_group_relabelling_invariance(base_window, base_values):
    """Renaming categorical values and indicator columns renames the groups, nothing else."""
    w = base_window
    rename = {"a": "p", "b": "q", "c": "r", "d": "s", "f": "x", "m": "y"}
    race = np.array([None if v is None else rename[v] for v in w.race], dtype=object)
    sex = np.array([None if v is None else rename[v] for v in w.sex], dtype=object)
    indicators = {f"col_{k}": v for k, v in w.indicators.items()}
    attributes = [
        mc.indicator_attribute("identity", indicators),
        mc.categorical_attribute("race", race, reference="p"),
        mc.categorical_attribute("race_vs_rest", race, reference="rest"),
        mc.intersection_attribute({"race": race, "sex": sex}),
        mc.intersection_attribute({"race": race, "sex": sex}, reference=("p", "x"), separator="|"),
    ]
    table = mc.table_for(w.score, w.y, attributes)
    comparisons = [c for a in attributes for c in a.comparisons]
    renamed = _values(mc.evaluate(table, comparisons, min_samples=5))
    back = {v: k for k, v in rename.items()}

    def original(group: str) -> str:
        if group.startswith("col_"):
            return group[4:]
        for sep in "&|":
            if sep in group:
                return sep.join(back[part] for part in group.split(sep))
        return back.get(group, group)

    mapped = {(m, a, original(g) if g else g): v for (m, a, g), v in renamed.items()}
    assert _identical(mapped, base_values)


# --- 4. float64 end to end -------------------------------------------------------------------


def test_scores_keep_float64_precision():
    """metrics.md 6: float32 would merge 0.5 and 0.5 + 1e-12 into a tie (AUC 0.5)."""
    score = np.array([0.5, 0.5 + 1e-12, 0.5 + 2e-12, 0.5])
    y = [0, 1, 1, 0]
    table = mc.ScoreTable.from_arrays(score, y)
    assert table.scores.dtype == np.float64
    assert table.n_scores == 3
    assert mc.overall_auc(y, score) == 1.0
    report = _indicator_report(score, y, {"g": [1, 1, 0, 0]})
    assert report.get("subgroup_auc", "g").value == 1.0
    assert report.model_value("overall_auc").value == 1.0


def test_float32_input_is_widened_not_rounded():
    s32 = np.array([0.1, 0.7, 0.30000001, 0.3], dtype=np.float32)
    table = mc.ScoreTable.from_arrays(s32, [0, 1, 1, 0])
    assert table.scores.dtype == np.float64
    assert sorted(table.scores.tolist()) == sorted({float(v) for v in s32})
    assert mc.overall_auc([0, 1, 1, 0], s32) == roc_auc_score([0, 1, 1, 0], s32.astype(np.float64))
