"""Recommender metrics: hand-computed cases, slow loop references, holisticai's code, undefined cases.

holisticai's functions are transcribed below (``hai_*``, from holisticai 1.0.14
``bias/metrics/_recommender.py`` and ``utils/_recommender_tools.py``) on dense user x item
matrices; a dense matrix is turned into a log (one row per user and item) to compare.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np
import pytest

import metrics_core as mc
from metrics_core import recommender as rec

NAN = math.nan


# --- holisticai's code, transcribed -----------------------------------------------------------


def hai_mat_to_binary(mat, top=None, thresh=0.5):
    if np.array_equal(mat, mat.astype(bool)):
        return mat
    if top is not None:
        mat = np.nan_to_num(mat, copy=True, nan=-np.inf)
        n_users, n_items = mat.shape
        top_items = np.argsort(mat, axis=1)
        columns = top_items[:, -top:].flatten()
        rows = np.arange(0, n_users).repeat(top, axis=0)
        n_mat = np.zeros((n_users, n_items))
        n_mat[rows, columns] = 1
    else:
        n_mat = mat >= thresh
    return n_mat * 1


def hai_entropy(p, q=None):
    p = np.array(p) / np.sum(p)
    with np.errstate(divide="ignore", invalid="ignore"):
        if q is None:
            return -np.sum(np.where(p != 0, p * np.log(p), 0))
        q = np.array(q) / np.sum(q)
        return np.sum(np.where(p != 0, p * np.log(p / q), 0))


def hai_mad_score(a, b, mat):
    return np.nanmean(mat[a == 1]) - np.nanmean(mat[b == 1])


def hai_exposure_l1(a, b, mat, top=None, thresh=0.5):
    binary = hai_mat_to_binary(mat, top=top, thresh=thresh)
    ca, cb = binary[a == 1].sum(axis=0), binary[b == 1].sum(axis=0)
    da, db = ca / ca.sum(), cb / cb.sum()
    return 0.5 * np.mean(np.abs(da - db)) * len(da)


def hai_exposure_kl(a, b, mat, top=None, thresh=0.5):
    ca = hai_mat_to_binary(mat[a == 1], top=top, thresh=thresh).sum(axis=0)
    cb = hai_mat_to_binary(mat[b == 1], top=top, thresh=thresh).sum(axis=0)
    return hai_entropy(ca / ca.sum(), cb / cb.sum())


def _sk_zero(num, den):  # sklearn's precision/recall/f1 with zero_division="warn": 0
    return num / den if den > 0 else 0.0


def hai_avg_rate(rate, mat_pred, mat_true, top=None, thresh=0.5):
    bp, bt = hai_mat_to_binary(mat_pred, top, thresh), hai_mat_to_binary(mat_true, top, thresh)
    vals = []
    for u in range(mat_pred.shape[0]):
        tp = float(((bp[u] == 1) & (bt[u] == 1)).sum())
        fp = float(((bp[u] == 1) & (bt[u] == 0)).sum())
        fn = float(((bp[u] == 0) & (bt[u] == 1)).sum())
        vals.append(
            {
                "precision": _sk_zero(tp, tp + fp),
                "recall": _sk_zero(tp, tp + fn),
                "f1": _sk_zero(2 * tp, 2 * tp + fp + fn),
            }[rate]
        )
    return np.mean(vals)


def hai_rate_ratio(rate, a, b, mat_pred, mat_true, top=None, thresh=0.5):
    with np.errstate(divide="ignore", invalid="ignore"):
        return hai_avg_rate(rate, mat_pred[a == 1], mat_true[a == 1], top, thresh) / hai_avg_rate(
            rate, mat_pred[b == 1], mat_true[b == 1], top, thresh
        )


def hai_aggregate_diversity(mat, top=None, thresh=0.5):
    count = hai_mat_to_binary(mat, top, thresh).sum(axis=0)
    return (count >= 1).sum() / len(count)


def hai_gini_index(mat, top=None, thresh=0.5):
    nums = hai_mat_to_binary(mat, top, thresh).sum(axis=0)
    freqs = np.sort(nums / nums.sum())
    n = mat.shape[1]
    w = 2 * np.arange(n) - n + 1
    return (w * freqs).sum() / (n - 1)


def hai_exposure_entropy(mat, top=None, thresh=0.5):
    e = hai_mat_to_binary(mat, top, thresh).sum(axis=0)
    return hai_entropy(e / e.sum())


def hai_arp(mat, top=None, thresh=0.5):
    binary = hai_mat_to_binary(mat, top, thresh)
    count = binary.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = (binary * count).sum(axis=1) / binary.sum(axis=1)
    return np.nanmean(val)


# --- helpers -----------------------------------------------------------------------------------


def dense_to_log(mat_pred, mat_true=None):
    """One log row per (user, item) of a dense matrix."""
    n_users, n_items = mat_pred.shape
    data = {
        "user": np.repeat(np.arange(n_users), n_items),
        "item": np.tile(np.arange(n_items), n_users),
        "y_score": mat_pred.reshape(-1).astype(float),
    }
    if mat_true is not None:
        data["y_true"] = mat_true.reshape(-1).astype(float)
    return data


def run(data, sex, *, reference="m", metrics=None, **kw):
    attr = mc.categorical_attribute("sex", sex, reference=reference)
    kw.setdefault("min_samples", 1)
    kw.setdefault("n_resamples", 50)
    return rec.evaluate(data, [attr], metrics=metrics, **kw)


def dense_case(seed, n_users=40, n_items=12):
    rng = np.random.default_rng(seed)
    pred = rng.permutation(n_users * n_items).reshape(n_users, n_items) / (n_users * n_items)  # distinct
    true = (rng.random((n_users, n_items)) < 0.35).astype(float)
    true[:, 0] = 1.0  # every user has a relevant item
    groups = np.where(np.arange(n_users) < 15, "f", "m")
    return pred, true, groups


# --- hand-computed tiny cases ------------------------------------------------------------------

# users 1, 2 are f; 3, 4 are m. Every row is a recommendation (k=None).
TINY = {
    "user": np.array([1, 1, 2, 2, 3, 3, 4, 4]),
    "item": np.array(["a", "b", "a", "c", "b", "c", "b", "b"]),
    "y_score": np.array([0.9, 0.7, 0.8, 0.6, 0.4, 0.2, 0.5, 0.3]),
    "y_true": np.array([1, 0, 1, 1, 1, NAN, 0, 0]),
}
TINY_SEX = np.array(["f", "f", "f", "f", "m", "m", "m", "m"])


def test_tiny_group_metrics_by_hand():
    r = run(TINY, TINY_SEX, k=None)
    # scores: f mean (0.9+0.7+0.8+0.6)/4 = 0.75, m mean (0.4+0.2+0.5+0.3)/4 = 0.35
    assert r.get("recommender_mean_score_difference", "f").value == pytest.approx(0.40, abs=1e-12)
    # exposure f: a 2/4, b 1/4, c 1/4; m: b 3/4, c 1/4 -> TV = 0.5 (0.5 + 0.5 + 0) = 0.5
    assert r.get("exposure_total_variation", "f").value == pytest.approx(0.5, abs=1e-12)
    # KL smoothed 0.5 over items {a, b, c}: p = (2.5, 1.5, 1.5)/5.5, q = (0.5, 3.5, 1.5)/5.5
    p, q = np.array([2.5, 1.5, 1.5]) / 5.5, np.array([0.5, 3.5, 1.5]) / 5.5
    assert r.get("exposure_kl_divergence", "f").value == pytest.approx(
        float(np.sum(p * np.log(p / q))), abs=1e-12
    )
    # precision: user1 1/2, user2 2/2 -> 0.75; user3 1/1 (NaN row unknown), user4 0/2 -> 0.5
    assert r.get("recommender_avg_precision_ratio", "f").value == pytest.approx(0.75 / 0.5, abs=1e-12)
    # recall (relevant logged rows): user1 1/1, user2 2/2 -> 1; user3 1/1, user4 undefined -> 1
    assert r.get("recommender_avg_recall_ratio", "f").value == pytest.approx(1.0, abs=1e-12)
    # f1 = 2 hits / (rec + rel): user1 2/3, user2 1 -> 5/6; user3 2/2 = 1, user4 0/(2+0) = 0 -> 1/2
    assert r.get("recommender_avg_f1_ratio", "f").value == pytest.approx((5 / 6) / 0.5, abs=1e-12)


def test_tiny_model_metrics_by_hand():
    r = run(TINY, TINY_SEX, k=None)
    # exposures a 2, b 4, c 2 over 8
    assert r.model_value("aggregate_diversity", "sex").value == 1.0
    assert r.model_value("exposure_entropy", "sex").value == pytest.approx(
        -(0.5 * math.log(0.25) + 0.5 * math.log(0.5))
    )
    # sorted shares (0.25, 0.25, 0.5), w = (-2, 0, 2): (-0.5 + 1) / 2
    assert r.model_value("exposure_gini_index", "sex").value == pytest.approx(0.25)
    # popularity (distinct users): a 2, b 3, c 2; user lists: 1 (a, b) 2.5, 2 (a, c) 2, 3 (b, c) 2.5, 4 (b, b) 3
    assert r.model_value("average_recommendation_popularity", "sex").value == pytest.approx(2.5)
    r10 = run(TINY, TINY_SEX, k=None, n_items=10)
    assert r10.model_value("aggregate_diversity", "sex").value == pytest.approx(0.3)


def test_top_k_binarisation_by_hand():
    # user 1: scores 0.9 (b), 0.5 (c), 0.5 (a), NaN (d); k = 2 -> b and c (tie 0.5: higher item id first)
    got = rec.recommended([1, 1, 1, 1, 2], ["b", "c", "a", "d", "a"], y_score=[0.9, 0.5, 0.5, NAN, 0.1], k=2)
    assert got.tolist() == [True, True, False, False, True]
    # exact duplicates share a position: both copies of (1, c, 0.5) are in the top 2
    got = rec.recommended([1, 1, 1, 1], ["b", "c", "c", "a"], y_score=[0.9, 0.5, 0.5, 0.5], k=2)
    assert got.tolist() == [True, True, True, False]
    got = rec.recommended([1, 1, 1, 1], ["b", "c", "a", "d"], rank=[3, 1, 2, NAN], k=2)
    assert got.tolist() == [False, True, True, False]
    got = rec.recommended([1, 1, 1], ["b", "c", "a"], y_score=[0.9, 0.5, NAN], threshold=0.5)
    assert got.tolist() == [True, True, False]
    assert rec.recommended([1, 2], ["a", "a"], k=None).tolist() == [True, True]


def test_recall_with_n_relevant():
    # user 1 has 4 relevant items in total, 1 recommended; user 2 has 2, both recommended
    user, recd, y = [1, 1, 2, 2], [1, 1, 1, 1], [1, 0, 1, 1]
    g, r = [1, 1, 0, 0], [0, 0, 1, 1]
    assert rec.recommender_avg_recall_ratio(user, recd, y, g, r, n_relevant=[4, 4, 2, 2]) == 0.25
    # f1 = 2 hits / (recommended + relevant): user 1 2/(2+4), user 2 4/(2+2)
    assert rec.recommender_avg_f1_ratio(user, recd, y, g, r, n_relevant=[4, 4, 2, 2]) == pytest.approx(1 / 3)


# --- slow references on seeded random logs -----------------------------------------------------


def random_log(seed, n_users=60, max_list=12, n_items=25):
    rng = np.random.default_rng(seed)
    rows = defaultdict(list)
    for u in range(n_users):
        for pos in range(int(rng.integers(1, max_list + 1))):
            rows["user"].append(f"u{u}")
            rows["item"].append(int(rng.zipf(1.6) % n_items))
            rows["rank"].append(pos + 1)
            rows["y_score"].append(round(float(rng.random()), 1))  # heavy ties
            rows["y_true"].append(NAN if rng.random() < 0.15 else float(rng.random() < 0.3))
    data = {k: np.array(v) for k, v in rows.items()}
    groups = np.array(["f", "m", "x"])[rng.integers(0, 3, n_users)]
    user_group = {f"u{u}": groups[u] for u in range(n_users)}
    return data, np.array([user_group[u] for u in data["user"]], dtype=object)


def ref_recommended(data, k=None, threshold=None, by="rank"):
    n = len(data["user"])
    if threshold is not None:
        return [data["y_score"][i] >= threshold for i in range(n)]
    if k is None:
        return [True] * n
    out = [False] * n
    per_user = defaultdict(list)
    for i in range(n):
        per_user[data["user"][i]].append(i)
    for rows in per_user.values():
        if by == "rank":
            ordered = sorted(rows, key=lambda i: data["rank"][i])
        else:
            ordered = sorted(rows, key=lambda i: (-data["y_score"][i], -data["item"][i]))
            keys = [(data["y_score"][i], data["item"][i]) for i in ordered]
            ordered = [
                i for j, i in enumerate(ordered) if keys.index(keys[j]) < k
            ]  # duplicates share a place
        for i in ordered[:k] if by == "rank" else ordered:
            out[i] = True
    return out


def ref_group_values(data, recd, in_g, in_r, smoothing=0.5):
    """Every group metric from dicts and loops."""
    n = len(data["user"])
    out = {}
    sg = [data["y_score"][i] for i in range(n) if in_g[i]]
    sr = [data["y_score"][i] for i in range(n) if in_r[i]]
    out["recommender_mean_score_difference"] = sum(sg) / len(sg) - sum(sr) / len(sr)
    cg = Counter(data["item"][i] for i in range(n) if in_g[i] and recd[i])
    cr = Counter(data["item"][i] for i in range(n) if in_r[i] and recd[i])
    window_items = {data["item"][i] for i in range(n) if recd[i]}
    ng, nr = sum(cg.values()), sum(cr.values())
    out["exposure_total_variation"] = 0.5 * sum(abs(cg[i] / ng - cr[i] / nr) for i in window_items)
    m = len(window_items)
    kl = 0.0
    for i in window_items:
        p = (cg[i] + smoothing) / (ng + smoothing * m)
        q = (cr[i] + smoothing) / (nr + smoothing * m)
        kl += p * math.log(p / q)
    out["exposure_kl_divergence"] = kl
    for rate in ("precision", "recall", "f1"):
        means = []
        for side in (in_g, in_r):
            stats = defaultdict(lambda: [0, 0, 0])  # hits, recommended known, relevant
            for i in range(n):
                if not side[i]:
                    continue
                s = stats[data["user"][i]]
                y = data["y_true"][i]
                if math.isnan(y):
                    continue
                s[0] += recd[i] and y == 1
                s[1] += recd[i]
                s[2] += y == 1
            values = []
            for hits, n_rec, n_rel in stats.values():
                den = {"precision": n_rec, "recall": n_rel, "f1": n_rec + n_rel}[rate]
                if den > 0:
                    values.append((2 * hits if rate == "f1" else hits) / den)
            # users whose rows are all of unknown relevance have no entry: undefined too
            means.append(sum(values) / len(values))
        out[f"recommender_avg_{rate}_ratio"] = means[0] / means[1]
    return out


def ref_model_values(data, recd):
    n = len(data["user"])
    counts = Counter(data["item"][i] for i in range(n) if recd[i])
    catalogue = sorted(set(data["item"]))
    out = {"aggregate_diversity": len(counts) / len(catalogue)}
    shares = sorted(counts[i] / sum(counts.values()) for i in catalogue)
    m = len(shares)
    out["exposure_gini_index"] = sum((2 * (j + 1) - m - 1) * f for j, f in enumerate(shares)) / (m - 1)
    out["exposure_entropy"] = -sum(
        c / n_ * math.log(c / n_) for c in counts.values() for n_ in [sum(counts.values())]
    )
    users_of = defaultdict(set)
    lists = defaultdict(list)
    for i in range(n):
        if recd[i]:
            users_of[data["item"][i]].add(data["user"][i])
            lists[data["user"][i]].append(data["item"][i])
    per_user = [sum(len(users_of[i]) for i in items) / len(items) for items in lists.values()]
    out["average_recommendation_popularity"] = sum(per_user) / len(per_user)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    ("options", "by"),
    [
        ({"k": 5}, "rank"),
        ({"k": 3, "drop_rank": True}, "score"),
        ({"threshold": 0.5}, None),
        ({"k": None}, None),
    ],
)
def test_against_loop_reference(seed, options, by):
    data, sex = random_log(seed)
    options = dict(options)
    if options.pop("drop_rank", False):
        data = {k: v for k, v in data.items() if k != "rank"}
    recd = ref_recommended(data, k=options.get("k"), threshold=options.get("threshold"), by=by)
    assert (
        rec.recommended(
            data["user"], data["item"], rank=data.get("rank"), y_score=data["y_score"], **options
        ).tolist()
        == recd
    )
    for reference in ("m", "rest"):
        report = run(data, sex, reference=reference, n_resamples=5, **options)
        for group in ("f", "x"):
            in_g = sex == group
            in_r = (sex == "m") if reference == "m" else (sex != group)
            expected = ref_group_values(data, recd, in_g, in_r)
            for metric, value in expected.items():
                assert report.get(metric, group).value == pytest.approx(value, rel=1e-12, abs=1e-12), metric
        for metric, value in ref_model_values(data, recd).items():
            assert report.model_value(metric, "sex").value == pytest.approx(value, rel=1e-12), metric


def test_public_functions_match_evaluate():
    data, sex = random_log(5)
    recd = rec.recommended(data["user"], data["item"], rank=data["rank"], k=4)
    report = run(data, sex, k=4, n_resamples=5)
    g, r = sex == "f", sex == "m"
    u, i, y = data["user"], data["item"], data["y_true"]
    public = {
        "recommender_mean_score_difference": rec.recommender_mean_score_difference(data["y_score"], g, r),
        "exposure_total_variation": rec.exposure_total_variation(i, recd, g, r),
        "exposure_kl_divergence": rec.exposure_kl_divergence(i, recd, g, r),
        "recommender_avg_precision_ratio": rec.recommender_avg_precision_ratio(u, recd, y, g, r),
        "recommender_avg_recall_ratio": rec.recommender_avg_recall_ratio(u, recd, y, g, r),
        "recommender_avg_f1_ratio": rec.recommender_avg_f1_ratio(u, recd, y, g, r),
    }
    for metric, value in public.items():
        assert report.get(metric, "f").value == pytest.approx(value, rel=1e-12), metric
    model = {
        "aggregate_diversity": rec.aggregate_diversity(i, recd),
        "exposure_gini_index": rec.exposure_gini_index(i, recd),
        "exposure_entropy": rec.exposure_entropy(i, recd),
        "average_recommendation_popularity": rec.average_recommendation_popularity(u, i, recd),
    }
    for metric, value in model.items():
        assert report.model_value(metric, "sex").value == pytest.approx(value, rel=1e-12), metric


def test_row_order_and_label_invariance():
    data, sex = random_log(7)
    data = {k: v for k, v in data.items() if k != "rank"}  # top-k by tied scores
    base = run(data, sex, k=3, n_resamples=5)
    perm = np.random.default_rng(1).permutation(len(sex))
    shuffled = {k: (v[perm] if k != "user" else np.char.add("z", v[perm])) for k, v in data.items()}
    other = run(shuffled, sex[perm], k=3, n_resamples=5)
    for a in base.values:
        assert other.get(a.metric, a.group).value == pytest.approx(a.value, rel=1e-12, abs=1e-15)
    for m in base.model:
        assert other.model_value(m.metric, "sex").value == pytest.approx(m.value, rel=1e-12)


# --- holisticai's code: equal on dense logs, departures pinned --------------------------------


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("binarise", [{"top": 4}, {"thresh": 0.6}])
def test_dense_log_equals_holisticai(seed, binarise):
    pred, true, groups = dense_case(seed)
    a, b = (groups == "f").astype(int), (groups == "m").astype(int)
    top, thresh = binarise.get("top"), binarise.get("thresh", 0.5)
    ours = {"k": top, "threshold": None if top else thresh}
    data = dense_to_log(pred, true)
    sex = np.repeat(groups, pred.shape[1])
    report = run(data, sex, n_resamples=5, **ours)
    hai = {
        "recommender_mean_score_difference": hai_mad_score(a, b, pred),
        "exposure_total_variation": hai_exposure_l1(a, b, pred, top, thresh),
        "recommender_avg_precision_ratio": hai_rate_ratio("precision", a, b, pred, true, top, thresh),
        "recommender_avg_recall_ratio": hai_rate_ratio("recall", a, b, pred, true, top, thresh),
        "recommender_avg_f1_ratio": hai_rate_ratio("f1", a, b, pred, true, top, thresh),
    }
    if top is not None:  # with a threshold some user may get nothing: precision departs (below)
        for metric, value in hai.items():
            assert report.get(metric, "f").value == pytest.approx(value, rel=1e-12), metric
    else:
        assert report.get("exposure_total_variation", "f").value == pytest.approx(
            hai["exposure_total_variation"]
        )
    # KL: plug-in (smoothing 0) equals holisticai whenever it is finite
    hai_kl = hai_exposure_kl(a, b, pred, top, thresh)
    recd = rec.recommended(data["user"], data["item"], y_score=data["y_score"], **ours)
    ours_kl = rec.exposure_kl_divergence(data["item"], recd, sex == "f", sex == "m", smoothing=0)
    if math.isfinite(hai_kl):
        assert ours_kl == pytest.approx(hai_kl, rel=1e-12)
    else:
        assert math.isnan(ours_kl)
    model = {
        "aggregate_diversity": hai_aggregate_diversity(pred, top, thresh),
        "exposure_gini_index": hai_gini_index(pred, top, thresh),
        "exposure_entropy": hai_exposure_entropy(pred, top, thresh),
        "average_recommendation_popularity": hai_arp(pred, top, thresh),
    }
    for metric, value in model.items():
        assert report.model_value(metric, "sex").value == pytest.approx(value, rel=1e-12), metric


def test_holisticai_doc_examples():
    """The numbers printed in holisticai's docstrings, from our functions on the same matrix as a log."""
    pred = np.array(
        [[0.9, 0.8, 0.4, 0.2], [0.7, 0.9, 0.1, 0.7], [0.3, 0.2, 0.3, 0.3], [0.2, 0.1, 0.7, 0.8], [0.8, 0.7, 0.9, 0.1],
         [1.0, 0.9, 0.3, 0.6], [0.8, 0.9, 0.1, 0.1], [0.2, 0.3, 0.1, 0.5], [0.1, 0.2, 0.7, 0.7], [0.2, 0.7, 0.1, 0.2]]
    )  # fmt: skip
    data = dense_to_log(pred)
    g = np.repeat([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], 4).astype(bool)
    u, i, s = data["user"], data["item"], data["y_score"]
    assert rec.recommender_mean_score_difference(s, g, ~g) == pytest.approx(0.00833333333333336)
    at_half = rec.recommended(u, i, y_score=s, threshold=0.5)
    assert rec.average_recommendation_popularity(u, i, at_half) == pytest.approx(5.037037037037036)
    assert hai_arp(pred) == pytest.approx(5.037037037037036)
    # gini_index(top=2) with ties in rows 1, 2, 8 and 9: higher item id first, as holisticai's argsort
    top2 = rec.recommended(u, i, y_score=s, k=2)
    assert hai_gini_index(pred, top=2) == pytest.approx(0.1333333333333333)
    assert rec.exposure_gini_index(i, top2) == pytest.approx(0.1333333333333333)
    assert rec.aggregate_diversity(i, rec.recommended(u, i, y_score=(s - 0.1) / 0.9, threshold=0.8)) == 0.75
    assert rec.exposure_entropy(
        i, rec.recommended(u, i, y_score=(s - 0.1) / 0.9, threshold=0.3)
    ) == pytest.approx(1.3762266043445464)


def test_departure_undefined_users_are_left_out():
    """holisticai (sklearn zero_division) scores a user without relevant items recall 0; we leave them out."""
    pred, true, groups = dense_case(3)
    true[0, :] = 0.0  # user 0 (group f) has no relevant item
    a, b = (groups == "f").astype(int), (groups == "m").astype(int)
    data = dense_to_log(pred, true)
    sex = np.repeat(groups, pred.shape[1])
    ours = (
        run(data, sex, k=4, metrics=["recommender_avg_recall_ratio"])
        .get("recommender_avg_recall_ratio", "f")
        .value
    )
    theirs = hai_rate_ratio("recall", a, b, pred, true, top=4)
    fem = np.flatnonzero(groups == "f")
    recall_f = hai_avg_rate("recall", pred[fem], true[fem], top=4)  # includes user 0's 0
    recall_m = hai_avg_rate("recall", pred[groups == "m"], true[groups == "m"], top=4)
    assert theirs == pytest.approx(recall_f / recall_m)
    assert ours == pytest.approx((recall_f * fem.size / (fem.size - 1)) / recall_m)  # mean over the 14 others
    assert ours > theirs


def test_departure_threshold_user_with_nothing_recommended():
    """With a threshold a user may get no recommendation: holisticai's precision 0, ours undefined (left out)."""
    pred, true, groups = dense_case(4)
    pred[1, :] = 0.01  # user 1 (f) gets nothing at threshold 0.6
    a, b = (groups == "f").astype(int), (groups == "m").astype(int)
    data = dense_to_log(pred, true)
    sex = np.repeat(groups, pred.shape[1])
    ours = run(data, sex, threshold=0.6, metrics=["recommender_avg_precision_ratio"])
    theirs = hai_rate_ratio("precision", a, b, pred, true, thresh=0.6)
    assert ours.get("recommender_avg_precision_ratio", "f").value > theirs


def test_departure_kl_smoothing():
    """holisticai's plug-in KL is inf when the reference never got an item the group got."""
    pred = np.array([[0.9, 0.1, 0.8], [0.8, 0.2, 0.9], [0.1, 0.9, 0.8], [0.2, 0.8, 0.9]])
    a, b = np.array([1, 1, 0, 0]), np.array([0, 0, 1, 1])
    assert hai_exposure_kl(a, b, pred, top=2) == math.inf  # item 0 only for a
    data = dense_to_log(pred)
    recd = rec.recommended(data["user"], data["item"], y_score=data["y_score"], k=2)
    g = np.repeat(a, 3).astype(bool)
    assert math.isnan(rec.exposure_kl_divergence(data["item"], recd, g, ~g, smoothing=0))
    # smoothing 0.5 over items {0, 1, 2}: group counts (2, 0, 2), reference (0, 2, 2)
    p, q = np.array([2.5, 0.5, 2.5]) / 5.5, np.array([0.5, 2.5, 2.5]) / 5.5
    assert rec.exposure_kl_divergence(data["item"], recd, g, ~g) == pytest.approx(
        float(np.sum(p * np.log(p / q)))
    )
    report = run(data, np.where(g, "f", "m"), k=2, smoothing=0, metrics=["exposure_kl_divergence"])
    v = report.get("exposure_kl_divergence", "f")
    assert math.isnan(v.value) and "infinite" in v.reason and v.state == "insufficient_data"


def test_departure_gini_follows_code_not_docs():
    """holisticai's docs divide by n * sum(f); its code (and we) by n - 1, so one item taking all gives 1."""
    counts = np.array([0.0, 0.0, 0.0, 8.0])
    n, f = counts.size, np.sort(counts / counts.sum())
    w = 2 * np.arange(1, n + 1) - n - 1
    docs = (w * f).sum() / (n * f.sum())
    ours = rec.exposure_gini_index(["d"] * 8, [True] * 8, n_items=4)
    assert ours == 1.0
    assert docs == pytest.approx(0.75)


def test_departure_zero_reference_ratio_is_nan_not_inf():
    pred, true, groups = dense_case(6)
    true[groups == "m"] = 0.0  # no relevant item in the reference: its average precision is 0
    a, b = (groups == "f").astype(int), (groups == "m").astype(int)
    assert hai_rate_ratio("precision", a, b, pred, true, top=3) == math.inf
    report = run(dense_to_log(pred, true), np.repeat(groups, pred.shape[1]), k=3)
    v = report.get("recommender_avg_precision_ratio", "f")
    assert math.isnan(v.value) and v.reason == "the reference's average precision is 0"
    assert v.state == "insufficient_data"
    v = report.get("recommender_avg_recall_ratio", "f")  # no reference user has a relevant item
    assert math.isnan(v.value) and v.reason == "no user of the reference has a defined recall"


# --- undefined cases and evaluate() -----------------------------------------------------------


def test_empty_reference_and_unscored_rows():
    data = dict(TINY)
    data["y_score"] = np.array([0.9, 0.7, 0.8, 0.6, NAN, NAN, NAN, NAN])
    report = run(data, TINY_SEX, k=None)
    v = report.get("recommender_mean_score_difference", "f")
    assert (
        math.isnan(v.value)
        and v.reason == "the reference has no scored row"
        and v.state == "insufficient_data"
    )
    absent = run(TINY, TINY_SEX, reference="z", k=None)  # a reference value absent from the window
    for v in absent.values:
        assert math.isnan(v.value) and v.reason and v.state == "insufficient_data", v.metric


def test_nothing_recommended_model_metrics():
    report = run(TINY, TINY_SEX, threshold=2.0)
    for name in ("exposure_gini_index", "exposure_entropy", "average_recommendation_popularity"):
        m = report.model_value(name, "sex")
        assert math.isnan(m.value) and m.reason == "nothing was recommended in the window", name
    assert report.model_value("aggregate_diversity", "sex").value == 0.0  # a true 0: nothing shown
    v = report.get("exposure_total_variation", "f")
    assert math.isnan(v.value) and v.reason == "the group has no observation to form a distribution"


def test_evaluate_states_support_and_intervals():
    data, sex = random_log(11, n_users=150)
    report = run(data, sex, k=5, min_samples=30, n_resamples=100)
    for v in report.values:
        assert v.reference == "m"
        if math.isfinite(v.value):
            assert v.ci_lower <= v.ci_upper, v.metric
        if v.metric.startswith("exposure"):
            recd = rec.recommended(data["user"], data["item"], rank=data["rank"], k=5)
            per_item = (
                min(recd[sex == v.group].sum(), recd[sex == "m"].sum()) / np.unique(data["item"][recd]).size
            )
            assert v.support == pytest.approx(per_item)
        if v.metric == "recommender_mean_score_difference":
            assert v.support == min(np.unique(data["user"][sex == s]).size for s in (v.group, "m"))
            assert v.ci_lower <= v.value <= v.ci_upper
        if v.support < 30:
            assert v.state == "insufficient_data"
    again = run(data, sex, k=5, min_samples=30, n_resamples=100)
    assert again.values == report.values  # fixed seed


def test_user_bootstrap_resamples_users_not_rows():
    """Ten identical copies of every row change nothing: the unit of resampling is the user."""
    data, sex = random_log(12)
    one = run(data, sex, metrics=["recommender_mean_score_difference"], n_resamples=60)
    tenfold = {k: np.repeat(v, 10) for k, v in data.items()}
    ten = run(tenfold, np.repeat(sex, 10), metrics=["recommender_mean_score_difference"], n_resamples=60)
    a, b = (
        one.get("recommender_mean_score_difference", "f"),
        ten.get("recommender_mean_score_difference", "f"),
    )
    assert (a.value, a.support) == pytest.approx((b.value, b.support))
    assert (a.ci_lower, a.ci_upper) == pytest.approx((b.ci_lower, b.ci_upper))


def test_distance_interval_reaches_below_the_biased_plug_in():
    """Two samples of one item distribution: the plug-in TV is biased up, far above the true 0. The
    lower end (held-out witness bound, tests/metrics_core/test_exposure_bound.py) reaches back to 0;
    the upper end, the plug-in's bootstrap percentile, lies above the plug-in."""
    rng = np.random.default_rng(3)
    n_users = 200
    user = np.repeat(np.arange(n_users), 5)
    item = rng.integers(0, 40, user.size)
    sex = np.where(user % 2 == 0, "f", "m")
    report = run(
        {"user": user, "item": item}, sex, k=None, n_resamples=100, metrics=["exposure_total_variation"]
    )
    v = report.get("exposure_total_variation", "f")
    assert v.value > 0.1  # noise floor ~ 0.4 sqrt(40 (1/500 + 1/500)) = 0.16
    assert v.ci_lower == 0.0 < v.value < v.ci_upper and v.state == "inconclusive"


def test_selection_and_argument_errors():
    with pytest.raises(ValueError, match="unknown recommender metric 'nope'"):
        run(TINY, TINY_SEX, metrics=["nope"])
    with pytest.raises(TypeError, match="sequence of names"):
        run(TINY, TINY_SEX, metrics="exposure_entropy")
    no_labels = {k: v for k, v in TINY.items() if k != "y_true"}
    with pytest.raises(ValueError, match=r"needs the data key\(s\) \['y_true'\]"):
        run(no_labels, TINY_SEX, metrics=["recommender_avg_precision_ratio"])
    names = {v.metric for v in run(no_labels, TINY_SEX, k=None).values}
    assert names == {
        "recommender_mean_score_difference",
        "exposure_total_variation",
        "exposure_kl_divergence",
    }
    unranked = {k: TINY[k] for k in ("user", "item")}
    with pytest.raises(ValueError, match="binarisation needs 'rank' or 'y_score'"):
        run(unranked, TINY_SEX, metrics=["exposure_total_variation"])
    assert {m.metric for m in run(unranked, TINY_SEX).model} == set()  # nothing to binarise with
    with pytest.raises(ValueError, match="k must be a positive integer"):
        rec.recommended([1], ["a"], rank=[1], k=0)
    with pytest.raises(ValueError, match="rank must be 1-based"):
        rec.recommended([1], ["a"], rank=[0], k=1)
    with pytest.raises(ValueError, match="n_items must be an integer"):
        run(TINY, TINY_SEX, k=None, n_items=2)
    with pytest.raises(ValueError, match="n_relevant is below"):
        run({**TINY, "n_relevant": np.zeros(8)}, TINY_SEX, k=None)
    with pytest.raises(ValueError, match="attribute 'sex' has masks of shape"):
        rec.evaluate(TINY, [mc.categorical_attribute("sex", ["f", "m"])])


def test_specs_contract():
    names = [s.name for s in rec.SPECS]
    assert len(set(names)) == len(names)
    # registered once, as declared: no other family took the name
    assert all(
        n in mc.REGISTRY and mc.REGISTRY[n].family == spec.family
        for n, spec in zip(names, rec.SPECS, strict=True)
    )
    for s in rec.SPECS:
        assert s.family == "recommender" and s.computation == "groupwise" and s.source and s.meaning
        assert s.requires <= set(rec.INPUTS)
        assert (s.fair_range is None) == (s.level == "model")
