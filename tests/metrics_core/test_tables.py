"""Score tables: exact counts, merging panes, aggregated rows, input validation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import metrics_core as mc
from tests.metrics_core.reference import build, make_window

LABEL_OF = {0.0: 0, 1.0: 1}  # NaN -> column 2


def direct_counts(score, y, rows=None):
    """Distinct scores and (negative, positive, unlabeled) counts by plain looping."""
    score, y = np.asarray(score, dtype=float), np.asarray(y, dtype=float)
    rows = np.arange(score.size) if rows is None else np.flatnonzero(rows)
    out: dict[float, list[int]] = {}
    for i in rows:
        cell = out.setdefault(float(score[i]) + 0.0, [0, 0, 0])
        cell[2 if math.isnan(y[i]) else LABEL_OF[float(y[i])]] += 1
    keys = sorted(out)
    return np.array(keys), np.array([out[k] for k in keys], dtype=float).reshape(-1, 3)


def assert_tables_equal(a: mc.ScoreTable, b: mc.ScoreTable) -> None:
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.counts, b.counts)
    assert set(a.groups) == set(b.groups)
    for name in a.groups:
        np.testing.assert_array_equal(a.groups[name].ids, b.groups[name].ids, err_msg=name)
        np.testing.assert_array_equal(a.groups[name].counts, b.groups[name].counts, err_msg=name)


def report_values(report: mc.Report):
    rows = {
        (v.metric, v.attribute, v.group): (v.value, v.ci_lower, v.ci_upper, v.state) for v in report.values
    }
    rows |= {(m.metric, m.attribute, ""): (m.value, m.ci_lower, m.ci_upper, "") for m in report.model}
    return rows


def assert_reports_equal(a: mc.Report, b: mc.Report) -> None:
    va, vb = report_values(a), report_values(b)
    assert va.keys() == vb.keys()
    for key in va:
        for x, y in zip(va[key], vb[key], strict=True):
            assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), (
                key,
                va[key],
                vb[key],
            )


# --- the table counts what it should -------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_table_counts_equal_direct_counts(seed):
    w = make_window(seed, n=400, decimals=2, unlabeled=0.1)
    masks = {name: np.nan_to_num(col) >= 0.5 for name, col in w.indicators.items()}
    table = mc.ScoreTable.from_arrays(w.score, w.y, masks)
    scores, counts = direct_counts(w.score, w.y)
    np.testing.assert_array_equal(table.scores, scores)
    np.testing.assert_array_equal(table.counts, counts)
    assert table.scores.dtype == np.float64 and np.all(np.diff(table.scores) > 0)
    for name, mask in masks.items():
        g_scores, g_counts = direct_counts(w.score, w.y, mask)
        grp = table.group(name)
        np.testing.assert_array_equal(table.scores[grp.ids], g_scores)
        np.testing.assert_array_equal(grp.counts, g_counts)
        np.testing.assert_array_equal(grp.total, g_counts.sum(axis=0))


def _adversarial_scores(kind: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """Score sets that break sort keys built from float bit patterns, if anything does."""
    if kind == "ulp_neighbours":
        base = rng.choice([0.5, 1.0, 1e-300, -0.3, 0.1, 2.0**-1022, -(2.0**52), 123456.789], n)
        steps = rng.integers(0, 3, n)
        out = base.copy()
        for k in range(2):  # 0, 1 or 2 ulps above the base value
            out = np.where(steps > k, np.nextafter(out, np.inf), out)
        return out
    if kind == "mixed_sign_wide":
        return rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-300, 300, n)
    if kind == "subnormal_and_zeros":
        return rng.choice([-1.0, 1.0], n) * rng.integers(0, 60, n) * 5e-324
    if kind == "large_integers":
        return (2.0**53 - rng.integers(0, 40, n)) * rng.choice([-1.0, 1.0], n)
    if kind == "all_distinct":
        return rng.normal(size=n)
    return rng.choice([-1.0, -0.0, 0.0, 1e-12, 1.0, 1.0 + 2**-52], n)


KINDS = ["ulp_neighbours", "mixed_sign_wide", "subnormal_and_zeros", "large_integers", "all_distinct", "few"]


@pytest.mark.parametrize("kind", KINDS)
def test_table_is_exact_for_adversarial_scores(kind):
    """Distinct scores and counts equal numpy's unique/bincount: equal scores tie, scores one
    ulp apart stay apart, -0.0 is 0.0, whatever the sign and exponent."""
    rng = np.random.default_rng(KINDS.index(kind))
    n = 20000
    score = _adversarial_scores(kind, rng, n)
    y = rng.choice([0.0, 1.0, np.nan], n, p=[0.5, 0.4, 0.1])
    masks = {f"g{j}": rng.random(n) < p for j, p in enumerate((0.5, 0.05, 0.001))}
    table = mc.ScoreTable.from_arrays(score, y, masks)

    distinct, inverse = np.unique(score + 0.0, return_inverse=True)
    label = np.where(np.isnan(y), 2, np.nan_to_num(y)).astype(int)
    expected = np.bincount(inverse * 3 + label, minlength=3 * distinct.size).reshape(-1, 3)
    np.testing.assert_array_equal(table.scores, distinct)
    assert not np.signbit(table.scores[table.scores == 0]).any()
    np.testing.assert_array_equal(table.counts, expected)
    for name, mask in masks.items():
        g = np.bincount(inverse[mask] * 3 + label[mask], minlength=3 * distinct.size).reshape(-1, 3)
        ids = np.flatnonzero(g.any(axis=1))
        np.testing.assert_array_equal(table.group(name).ids, ids, err_msg=name)
        np.testing.assert_array_equal(table.group(name).counts, g[ids], err_msg=name)

    labeled = ~np.isnan(y)
    assert mc.overall_auc(y, score) == pytest.approx(roc_auc_score(y[labeled], score[labeled]), abs=1e-12)
    weight = rng.integers(0, 4, n)
    weighted = mc.ScoreTable.from_arrays(score, y, masks, sample_weight=weight)
    rows = np.repeat(np.arange(n), weight)
    repeated = mc.ScoreTable.from_arrays(score[rows], y[rows], {k: v[rows] for k, v in masks.items()})
    # zero weights may leave a score with no rows in the weighted table: compare the occupied ones
    occupied = weighted.counts.sum(axis=1) > 0
    np.testing.assert_array_equal(weighted.scores[occupied], repeated.scores)
    np.testing.assert_array_equal(weighted.counts[occupied], repeated.counts)


# --- merging panes -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_merged_panes_equal_the_concatenated_window(seed):
    w = make_window(seed, n=600, decimals=2, unlabeled=0.1)
    pane = np.random.default_rng(seed).integers(0, 3, size=w.n)
    parts = [build(w.take(np.flatnonzero(pane == k))) for k in range(3)]
    merged = mc.merge_tables([p.table for p in parts])
    order = np.concatenate([np.flatnonzero(pane == k) for k in range(3)])
    whole = build(w.take(order))
    assert_tables_equal(merged, whole.table)
    assert_reports_equal(
        mc.evaluate(merged, whole.comparisons, min_samples=5),
        mc.evaluate(whole.table, whole.comparisons, min_samples=5),
    )


def test_merge_with_groups_and_scores_missing_from_some_panes():
    a = mc.ScoreTable.from_arrays([0.1, 0.5, 0.5], [0, 1, math.nan], {"g": [1, 1, 0], "only_a": [0, 1, 1]})
    b = mc.ScoreTable.from_arrays([0.5, 0.7, 0.2], [0, 1, 1], {"g": [1, 0, 1]})
    merged = mc.merge_tables([a, b])
    whole = mc.ScoreTable.from_arrays(
        [0.1, 0.5, 0.5, 0.5, 0.7, 0.2],
        [0, 1, math.nan, 0, 1, 1],
        {"g": [1, 1, 0, 1, 0, 1], "only_a": [0, 1, 1, 0, 0, 0]},
    )
    assert_tables_equal(merged, whole)
    assert merged.scores.tolist() == [0.1, 0.2, 0.5, 0.7]
    assert merged.counts.tolist() == [[1, 0, 0], [0, 1, 0], [1, 1, 1], [0, 1, 0]]
    assert merged.group("g").counts.tolist() == [[1, 0, 0], [0, 1, 0], [1, 1, 0]]
    assert merged.group("only_a").ids.tolist() == [2]


def test_merge_is_associative_and_keeps_binned():
    tables = [
        mc.ScoreTable.from_arrays([0.1 * k, 0.3], [k % 2, 1], {"g": [1, 0]}, binned=k == 1) for k in range(3)
    ]
    left = mc.merge_tables([mc.merge_tables(tables[:2]), tables[2]])
    right = mc.merge_tables([tables[0], mc.merge_tables(tables[1:])])
    assert_tables_equal(left, right)
    assert_tables_equal(mc.merge_tables(tables), left)
    assert left.binned and not mc.merge_tables([tables[0], tables[2]]).binned
    assert_tables_equal(mc.merge_tables(tables[:1]), tables[0])
    with pytest.raises(ValueError, match="at least one"):
        mc.merge_tables([])


# --- aggregated rows (a database GROUP BY) ---------------------------------------------------


@pytest.mark.parametrize("seed", [0, 3])
def test_aggregated_rows_give_the_same_table_and_values(seed):
    w = make_window(seed, n=2000, decimals=1, unlabeled=0.1)
    masks = {name: np.nan_to_num(col) >= 0.5 for name, col in w.indicators.items()}
    masks |= {f"race={v}": w.race == v for v in ("a", "b", "c", "d")}
    raw = mc.ScoreTable.from_arrays(w.score, w.y, masks)

    frame = pd.DataFrame({"score": w.score, "label": w.y, **masks})
    grouped = frame.groupby(["score", "label", *masks], dropna=False).size().reset_index(name="n")
    assert len(grouped) < w.n / 3  # really aggregated: many rows per (score, label, flags)
    agg = mc.ScoreTable.from_aggregated(
        grouped["score"].to_numpy(),
        grouped["label"].to_numpy(),
        grouped["n"].to_numpy(),
        {name: grouped[name].to_numpy() for name in masks},
    )
    assert_tables_equal(agg, raw)

    comparisons = [mc.Comparison("identity", name, name) for name in w.indicators]
    comparisons += [mc.Comparison("race", v, f"race={v}", "a", "race=a") for v in ("b", "c", "d")]
    assert_reports_equal(
        mc.evaluate(agg, comparisons, min_samples=5), mc.evaluate(raw, comparisons, min_samples=5)
    )


def test_aggregated_rows_with_zero_counts_change_no_value():
    score = [0.2, 0.2, 0.4, 0.6, 0.6, 0.9]
    y = [0, 1, 0, 1, 0, 1]
    member = [1, 0, 1, 1, 0, 1]
    comps = [mc.Comparison("identity", "g", "g")]
    raw = mc.ScoreTable.from_arrays(score, y, {"g": member})
    with_zero = mc.ScoreTable.from_aggregated(
        [*score, 0.3, 0.3], [*y, 1, 0], [1] * 6 + [0, 0], {"g": [*member, 1, 0]}
    )
    assert_reports_equal(mc.evaluate(with_zero, comps, min_samples=1), mc.evaluate(raw, comps, min_samples=1))


def test_sample_weight_equals_repeated_rows():
    score, y, member = [0.3, 0.6, 0.6, 0.8], [0, 0, 1, 1], [1, 0, 1, 0]
    weight = [3, 1, 2, 4]
    weighted = mc.ScoreTable.from_arrays(score, y, {"g": member}, sample_weight=weight)
    repeated = mc.ScoreTable.from_arrays(
        np.repeat(score, weight), np.repeat(y, weight), {"g": np.repeat(member, weight)}
    )
    assert_tables_equal(weighted, repeated)


# --- signed zero, NaN and bad labels --------------------------------------------------------


def test_negative_and_positive_zero_are_one_score():
    table = mc.ScoreTable.from_arrays([-0.0, 0.0, 0.5, -0.0], [1, 0, 1, 0], {"g": [1, 0, 0, 1]})
    assert table.n_scores == 2
    assert table.counts.tolist() == [[2, 1, 0], [0, 1, 0]]
    assert table.group("g").counts.tolist() == [[1, 1, 0]]
    assert not np.signbit(table.scores).any()
    # a tie, as sklearn counts it: -0.0 == 0.0
    assert mc.overall_auc([1, 0], [-0.0, 0.0]) == 0.5
    agg = mc.ScoreTable.from_aggregated([-0.0, 0.0], [1, 1], [2, 3])
    assert agg.n_scores == 1 and agg.counts.tolist() == [[0, 5, 0]]
    merged = mc.merge_tables([mc.ScoreTable.from_arrays([-0.0], [1]), mc.ScoreTable.from_arrays([0.0], [0])])
    assert merged.n_scores == 1 and merged.counts.tolist() == [[1, 1, 0]]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_score_raises_naming_y_score(bad):
    score, y = [0.1, bad, 0.3], [0, 1, 1]
    calls = [
        lambda: mc.ScoreTable.from_arrays(score, y),
        lambda: mc.ScoreTable.from_aggregated(score, y, [1, 1, 1]),
        lambda: mc.table_for(score, y, [mc.indicator_attribute("i", {"g": [1, 0, 1]})]),
        lambda: mc.overall_auc(y, score),
        lambda: mc.subgroup_auc(y, score, [True, True, False]),
        lambda: mc.bpsn_auc(y, score, [True, True, False]),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="y_score"):
            call()


@pytest.mark.parametrize("bad", [2, 0.5, -1, 1.0000001])
def test_labels_other_than_0_1_nan_raise_naming_y_true(bad):
    with pytest.raises(ValueError, match="y_true"):
        mc.ScoreTable.from_arrays([0.1, 0.2, 0.3], [0, bad, 1])
    with pytest.raises(ValueError, match="y_true"):
        mc.ScoreTable.from_aggregated([0.1, 0.2], [bad, 1], [1, 1])
    with pytest.raises(ValueError, match="y_true"):
        mc.overall_auc([0, bad, 1], [0.1, 0.2, 0.3])


def test_label_forms_accepted():
    expected = mc.ScoreTable.from_arrays([0.1, 0.2, 0.3], [0.0, math.nan, 1.0])
    for y in ([0, None, 1], np.array([0, np.nan, 1]), [False, None, True]):
        got = mc.ScoreTable.from_arrays([0.1, 0.2, 0.3], y)
        np.testing.assert_array_equal(got.counts, expected.counts)
    with pytest.raises(TypeError, match="y_true"):
        mc.ScoreTable.from_arrays([0.1, 0.2], ["yes", "no"])


def test_shape_and_argument_errors_name_the_argument():
    with pytest.raises(ValueError, match="y_true"):
        mc.ScoreTable.from_arrays([0.1, 0.2, 0.3], [0, 1])
    with pytest.raises(ValueError, match="y_score"):
        mc.ScoreTable.from_arrays([[0.1, 0.2]], [0, 1])
    with pytest.raises(ValueError, match="sample_weight"):
        mc.ScoreTable.from_arrays([0.1, 0.2], [0, 1], sample_weight=[1, -1])
    with pytest.raises(ValueError, match="'g'"):
        mc.ScoreTable.from_arrays([0.1, 0.2], [0, 1], {"g": [True]})
    with pytest.raises(TypeError, match="'g'"):
        mc.ScoreTable.from_arrays([0.1, 0.2], [0, 1], {"g": [0, 2]})
    with pytest.raises(KeyError, match="nope"):
        mc.ScoreTable.from_arrays([0.1, 0.2], [0, 1]).group("nope")


@pytest.mark.parametrize("seed", range(4))
def test_a_comparisons_grid_is_the_union_of_its_sides_ids(seed: int) -> None:
    """The grid of a group and its reference: their ids merged, each once, in order (np.union1d says)."""
    from metrics_core.window.grid import _union

    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 400, 2) if seed else np.array([0, 7])  # an empty side too
    a, b = (np.unique(rng.integers(0, 500, int(s))).astype(np.int64) for s in sizes)
    assert _union(a, b).tolist() == np.union1d(a, b).tolist()
