"""Clustering metrics: hand-computed cases, slow loop references, holisticai's code, undefined cases.

holisticai's functions are transcribed below (``hai_*``, from holisticai 1.0.14
``bias/metrics/_clustering.py``) to pin where fairwatch agrees and where it departs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import silhouette_samples

import metrics_core as mc
from metrics_core import clustering as cl

NAN = math.nan


# --- holisticai's code, transcribed -----------------------------------------------------------


def hai_cluster_balance(a, b, y):
    r_tot_a, r_tot_b = a.sum() / len(a), b.sum() / len(b)
    min_ratio = 1
    for c in np.unique(y):
        members = y == c
        n_members = members.sum() + 1.0e-20
        n_a = a[members].sum() + 1.0e-20
        n_b = b[members].sum() + 1.0e-20
        ratio_a = (n_a / n_members) / r_tot_a
        ratio_b = (n_b / n_members) / r_tot_b
        min_ratio = min(min_ratio, min(ratio_a, 1 / ratio_a), min(ratio_b, 1 / ratio_b))
    return min_ratio


def hai_min_cluster_ratio(a, b, y):
    out = np.inf
    for c in np.unique(y):
        members = y == c
        out = min(out, a[members].sum() / (b[members].sum() + 1.0e-32))
    return out


def hai_cluster_dist(y_g, clusters):
    dist = (y_g.reshape(-1, 1) == clusters.reshape(1, -1)).sum(axis=0)
    return dist / dist.sum()


def hai_cluster_dist_l1(a, b, y):
    clusters = np.unique(y)
    da, db = hai_cluster_dist(y[a == 1], clusters), hai_cluster_dist(y[b == 1], clusters)
    return 0.5 * len(da) * np.mean(np.abs(da - db))


def hai_cluster_dist_kl(a, b, y):
    clusters = np.unique(y)
    p, q = hai_cluster_dist(y[a == 1], clusters), hai_cluster_dist(y[b == 1], clusters)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sum(np.where(p != 0, p * np.log(p / q), 0))


def hai_social_fairness_ratio(a, b, data, centroids):
    da, db = data[a == 1][:, None, :], data[b == 1][:, None, :]
    c = centroids[None, :, :]
    dist_a = np.sqrt(((da - c) ** 2).sum(axis=-1)).min(axis=1).mean(axis=0)
    dist_b = np.sqrt(((db - c) ** 2).sum(axis=-1)).min(axis=1).mean(axis=0)
    return dist_a / dist_b


def hai_silhouette_diff(a, b, data, y):
    scores = silhouette_samples(data, y, metric="euclidean")
    return 0.5 * (np.mean(scores[a == 1]) - np.mean(scores[b == 1]))


# --- helpers -----------------------------------------------------------------------------------


def blobs(seed, n=240, k=4, d=3):
    rng = np.random.default_rng(seed)
    cluster = rng.integers(0, k, n)
    x = rng.normal(size=(n, d)) + 3.0 * np.eye(k, d)[cluster]
    race = np.array(["a", "b", "c"], dtype=object)[
        np.where(rng.random(n) < 0.5, cluster % 3, rng.integers(0, 3, n))
    ]  # groups lean to clusters
    return x, cluster, race


def run(data, values, *, reference="rest", metrics=None, **kw):
    attr = mc.categorical_attribute("race", values, reference=reference)
    kw.setdefault("min_samples", 1)
    kw.setdefault("n_resamples", 40)
    return cl.evaluate(data, [attr], metrics=metrics, **kw)


def ref_silhouette(x, y):
    """Rousseeuw's silhouette with plain loops (singleton clusters score 0, as sklearn)."""
    n = len(y)
    out = []
    for i in range(n):
        dist = {}
        for j in range(n):
            if j != i:
                dist.setdefault(y[j], []).append(math.dist(x[i], x[j]))
        own = dist.get(y[i], [])
        if not own:
            out.append(0.0)
            continue
        a = sum(own) / len(own)
        b = min(sum(v) / len(v) for c, v in dist.items() if c != y[i])
        out.append((b - a) / max(a, b))
    return np.array(out)


def ref_balance(y, groups, universe):
    """min over groups and clusters of min(r, 1/r), r = (n_gc / n_c) / (n_g / n) within ``universe``."""
    n = sum(universe)
    best = math.inf
    for g in groups:
        n_g = sum(1 for i in range(len(y)) if g[i] and universe[i])
        for c in set(y[i] for i in range(len(y)) if universe[i]):
            n_c = sum(1 for i in range(len(y)) if universe[i] and y[i] == c)
            n_gc = sum(1 for i in range(len(y)) if g[i] and universe[i] and y[i] == c)
            r = (n_gc / n_c) / (n_g / n)
            best = min(best, r if r == 0 else min(r, 1 / r))
    return best


# --- hand-computed tiny cases ------------------------------------------------------------------


def test_tiny_by_hand():
    cluster = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
    race = np.array(["a", "a", "a", "b", "a", "b", "b", "b", "a", "b"], dtype=object)
    x = np.array([[0.0], [1.0], [-1.0], [0.0], [10.0], [10.0], [11.0], [9.0], [20.0], [22.0]])
    r = run({"cluster": cluster, "features": x}, race)
    a = lambda m: r.get(m, "a").value  # noqa: E731
    # a: clusters (3, 1, 1)/5, b: (1, 3, 1)/5 -> TV = 0.5 (0.4 + 0.4 + 0) = 0.4
    assert a("cluster_distribution_total_variation") == pytest.approx(0.4)
    p, q = np.array([3.5, 1.5, 1.5]) / 6.5, np.array([1.5, 3.5, 1.5]) / 6.5
    assert a("cluster_distribution_kl_divergence") == pytest.approx(float(np.sum(p * np.log(p / q))))
    # balance: a's share 1/2 overall; per cluster 3/4, 1/4, 1/2 -> ratios 1.5, 0.5, 1 -> min(0.5, 1/1.5) = 0.5
    assert a("cluster_balance") == pytest.approx(0.5)
    assert r.get("cluster_balance", "b").value == pytest.approx(0.5)
    assert a("min_cluster_ratio") == pytest.approx(1 / 3)  # cluster 1: 1 a, 3 b
    # centres 0, 10, 21: distances a (0, 1, 1, 0, 1) -> 0.6; b (0, 0, 1, 1, 1) -> 0.6
    assert a("social_fairness_ratio") == pytest.approx(1.0)
    s = silhouette_samples(x, cluster)
    assert a("silhouette_difference") == pytest.approx(s[race == "a"].mean() - s[race == "b"].mean())
    assert r.model_value("cluster_balance_all_groups", "race").value == pytest.approx(0.5)


def test_social_fairness_ratio_with_given_centres():
    x = np.array([[0.0, 0.0], [3.0, 4.0], [1.0, 0.0], [0.0, 2.0]])
    g, ref = np.array([1, 1, 0, 0], bool), np.array([0, 0, 1, 1], bool)
    # nearest of the centres (0, 0) and (3, 0): 0, 4 -> 2; 1, 2 -> 1.5
    got = cl.social_fairness_ratio(x, [0, 1, 0, 0], g, ref, centers=[[0.0, 0.0], [3.0, 0.0]])
    assert got == pytest.approx(2 / 1.5)
    report = run(
        {"cluster": [0, 1, 0, 0], "features": x}, ["a", "a", "b", "b"], centers=[[0.0, 0.0], [3.0, 0.0]]
    )
    assert report.get("social_fairness_ratio", "a").value == pytest.approx(2 / 1.5)


# --- slow references on seeded random data -----------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("reference", ["a", "rest"])
def test_against_loop_reference(seed, reference):
    x, cluster, race = blobs(seed, n=90)
    report = run({"cluster": cluster, "features": x}, race, reference=reference, n_resamples=5)
    sil = ref_silhouette(x.tolist(), cluster.tolist())
    centres = np.array([x[cluster == c].mean(axis=0) for c in range(4)])
    dist = np.array([min(math.dist(p, c) for c in centres) for p in x])
    for group in ("b", "c") if reference == "a" else ("a", "b", "c"):
        g = race == group
        r = (race == "a") if reference == "a" else ~g
        expected = {
            "silhouette_difference": sil[g].mean() - sil[r].mean(),
            "social_fairness_ratio": dist[g].mean() / dist[r].mean(),
            "cluster_balance": ref_balance(cluster, [g, r], g | r),
            "min_cluster_ratio": min(
                (cluster[g] == c).sum() / (cluster[r] == c).sum() for c in range(4) if (cluster[r] == c).sum()
            ),
        }
        pg = np.array([(cluster[g] == c).mean() for c in range(4)])
        pr = np.array([(cluster[r] == c).mean() for c in range(4)])
        expected["cluster_distribution_total_variation"] = 0.5 * np.abs(pg - pr).sum()
        sg = np.array([(cluster[g] == c).sum() + 0.5 for c in range(4)])
        sr = np.array([(cluster[r] == c).sum() + 0.5 for c in range(4)])
        sg, sr = sg / sg.sum(), sr / sr.sum()
        expected["cluster_distribution_kl_divergence"] = float(np.sum(sg * np.log(sg / sr)))
        for metric, value in expected.items():
            assert report.get(metric, group).value == pytest.approx(value, rel=1e-10, abs=1e-12), metric
    groups = [race == v for v in ("a", "b", "c")]
    assert report.model_value("cluster_balance_all_groups", "race").value == pytest.approx(
        ref_balance(cluster, groups, [True] * len(race))
    )


def test_public_functions_match_evaluate():
    x, cluster, race = blobs(3)
    report = run({"cluster": cluster, "features": x}, race, reference="a", n_resamples=5)
    g, r = race == "b", race == "a"
    public = {
        "social_fairness_ratio": cl.social_fairness_ratio(x, cluster, g, r),
        "silhouette_difference": cl.silhouette_difference(x, cluster, g, r),
        "cluster_balance": cl.cluster_balance(cluster, g, r),
        "min_cluster_ratio": cl.min_cluster_ratio(cluster, g, r),
        "cluster_distribution_total_variation": cl.cluster_distribution_total_variation(cluster, g, r),
        "cluster_distribution_kl_divergence": cl.cluster_distribution_kl_divergence(cluster, g, r),
    }
    for metric, value in public.items():
        assert report.get(metric, "b").value == pytest.approx(value, rel=1e-12), metric
    masks = [race == v for v in ("a", "b", "c")]
    assert report.model_value("cluster_balance_all_groups", "race").value == pytest.approx(
        cl.cluster_balance_all_groups(cluster, masks)
    )


def test_row_order_and_label_invariance():
    x, cluster, race = blobs(4, n=150)
    base = run({"cluster": cluster, "features": x}, race, n_resamples=5)
    perm = np.random.default_rng(2).permutation(len(race))
    labels = np.array(["k0", "k1", "k2", "k3"])[cluster]
    other = run({"cluster": labels[perm], "features": x[perm]}, race[perm], n_resamples=5)
    for v in base.values:
        assert other.get(v.metric, v.group).value == pytest.approx(v.value, rel=1e-10, abs=1e-12), v.metric


# --- holisticai's code: equal vs rest, departures pinned ---------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_groups_equal_holisticai(seed):
    """G vs rest (G and R cover every row): our values are holisticai's, the silhouette doubled."""
    x, cluster, race = blobs(seed)
    race = np.where(race == "a", "a", "o")
    a, b = (race == "a").astype(int), (race == "o").astype(int)
    report = run({"cluster": cluster, "features": x}, race, n_resamples=5)
    centres = np.array([x[cluster == c].mean(axis=0) for c in np.unique(cluster)])
    hai = {
        "cluster_balance": hai_cluster_balance(a, b, cluster),
        "min_cluster_ratio": hai_min_cluster_ratio(a, b, cluster),
        "cluster_distribution_total_variation": hai_cluster_dist_l1(a, b, cluster),
        "social_fairness_ratio": hai_social_fairness_ratio(a, b, x, centres),
        "silhouette_difference": 2 * hai_silhouette_diff(a, b, x, cluster),
    }
    for metric, value in hai.items():
        assert report.get(metric, "a").value == pytest.approx(value, rel=1e-12), metric
    plug_in = cl.cluster_distribution_kl_divergence(cluster, a == 1, b == 1, smoothing=0)
    assert plug_in == pytest.approx(hai_cluster_dist_kl(a, b, cluster), rel=1e-12)
    assert report.model_value("cluster_balance_all_groups", "race").value == pytest.approx(
        hai_cluster_balance(a, b, cluster), rel=1e-12
    )


def test_departure_silhouette_is_not_halved():
    x, cluster, race = blobs(5)
    a, b = (race == "a").astype(int), (race != "a").astype(int)
    theirs = hai_silhouette_diff(a, b, x, cluster)
    ours = cl.silhouette_difference(x, cluster, a == 1, b == 1)
    assert ours == pytest.approx(2 * theirs, rel=1e-12)
    assert abs(ours) > abs(theirs) > 0


def test_departure_named_reference_counts_in_g_and_r_only():
    """holisticai divides by every row given; with a named reference we count in G and R only."""
    cluster = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 2])
    race = np.array(["b", "a", "a", "b", "a", "a", "c", "c", "c", "c"], dtype=object)
    a, b = (race == "b").astype(int), (race == "a").astype(int)  # G = b, R = a
    ours = run({"cluster": cluster}, race, reference="a")
    # cluster 2 holds only c: holisticai's min ratio sees 0 / (0 + 1e-32) = 0 there
    assert hai_min_cluster_ratio(a, b, cluster) == 0.0
    assert ours.get("min_cluster_ratio", "b").value == pytest.approx(0.5)
    # holisticai's balance: shares over all 10 rows, so cluster 2 gives ~1e-20 for both groups
    assert hai_cluster_balance(a, b, cluster) < 1e-15
    assert ours.get("cluster_balance", "b").value == pytest.approx(1.0)  # 1/3 of each cluster in G and R
    # vs rest the population is the whole window, as in holisticai
    rest = run({"cluster": cluster}, race)
    g = (race == "b").astype(int)
    assert rest.get("cluster_balance", "b").value == pytest.approx(
        hai_cluster_balance(g, 1 - g, cluster), abs=1e-15
    )


def test_departure_zero_cells_are_exact_and_kl_not_inf():
    cluster = np.array([0, 0, 1, 1, 2, 2])
    race = np.array(["a", "a", "a", "b", "b", "b"], dtype=object)
    a, b = (race == "a").astype(int), (race == "b").astype(int)
    assert 0 < hai_cluster_balance(a, b, cluster) < 1e-15  # holisticai's 1e-20 epsilon
    assert cl.cluster_balance(cluster, a == 1, b == 1) == 0.0  # a is absent from cluster 2: a true 0
    assert hai_cluster_dist_kl(a, b, cluster) == math.inf  # cluster 0 has a but no b
    assert math.isnan(cl.cluster_distribution_kl_divergence(cluster, a == 1, b == 1, smoothing=0))
    report = run({"cluster": cluster}, race, reference="b", smoothing=0)
    v = report.get("cluster_distribution_kl_divergence", "a")
    assert math.isnan(v.value) and "infinite" in v.reason and v.state == "insufficient_data"
    smoothed = run({"cluster": cluster}, race, reference="b").get("cluster_distribution_kl_divergence", "a")
    p, q = np.array([2.5, 1.5, 0.5]) / 4.5, np.array([0.5, 1.5, 2.5]) / 4.5
    assert smoothed.value == pytest.approx(float(np.sum(p * np.log(p / q))))


# --- silhouette subsample ----------------------------------------------------------------------


def test_silhouette_subsample_support_and_values():
    x, cluster, race = blobs(6, n=400)
    report = run(
        {"cluster": cluster, "features": x}, race, metrics=["silhouette_difference"], max_rows=120, seed=3
    )
    rows = np.sort(np.random.default_rng(3).choice(400, size=120, replace=False))
    s = np.full(400, np.nan)
    s[rows] = silhouette_samples(x[rows], cluster[rows])
    for group in ("a", "b", "c"):
        g = race == group
        v = report.get("silhouette_difference", group)
        assert v.value == pytest.approx(np.nanmean(s[g]) - np.nanmean(s[~g]), rel=1e-12)
        assert v.support == min(np.count_nonzero(~np.isnan(s[g])), np.count_nonzero(~np.isnan(s[~g])))
        assert v.support < g.sum()
    full = run({"cluster": cluster, "features": x}, race, metrics=["silhouette_difference"])
    assert full.get("silhouette_difference", "a").support == min((race == "a").sum(), (race != "a").sum())


# --- undefined cases and evaluate() -----------------------------------------------------------


def test_undefined_cases():
    x = np.array([[0.0], [1.0], [2.0], [3.0]])
    one = run({"cluster": [7, 7, 7, 7], "features": x}, ["a", "a", "b", "b"])
    v = one.get("silhouette_difference", "a")
    assert math.isnan(v.value) and "2 to n-1 clusters" in v.reason and v.state == "insufficient_data"
    assert one.get("cluster_balance", "a").value == 1.0  # one cluster: perfectly balanced, not undefined
    on_centre = run(
        {"cluster": [0, 0, 1, 1], "features": x}, ["a", "b", "a", "b"], centers=[[1.0], [3.0], [0.0]]
    )
    v = on_centre.get("social_fairness_ratio", "a")
    assert math.isnan(v.value) and v.reason == "the reference's mean distance to the nearest centre is 0"
    absent = run({"cluster": [0, 1, 0, 1], "features": x}, ["a", "a", "b", "b"], reference="z")
    for v in absent.values:
        assert math.isnan(v.value) and v.reason and v.state == "insufficient_data", v.metric
    assert math.isnan(cl.cluster_balance([0, 1], [False, False], [True, True]))
    assert math.isnan(cl.min_cluster_ratio([0, 1], [True, True], [False, False]))


def test_evaluate_states_support_and_intervals():
    x, cluster, race = blobs(8, n=600)
    report = run({"cluster": cluster, "features": x}, race, reference="a", min_samples=30, n_resamples=60)
    for v in report.values:
        assert v.reference == "a" and v.group in ("b", "c")
        n_small = min((race == v.group).sum(), (race == "a").sum())
        if v.metric in ("social_fairness_ratio", "silhouette_difference"):
            assert v.support == n_small
            assert v.ci_lower <= v.value <= v.ci_upper
        else:
            assert v.support == n_small / 4  # rows per cluster
        assert v.ci_lower <= v.ci_upper
        assert v.state != "insufficient_data"
    assert (
        run({"cluster": cluster, "features": x}, race, reference="a", min_samples=30, n_resamples=60)
        == report
    )


def test_distance_interval_is_basic_bootstrap():
    """Same distribution over 20 clusters: plug-in TV is biased up, the basic interval reaches below it."""
    rng = np.random.default_rng(4)
    cluster = rng.integers(0, 20, 800)
    race = np.where(rng.random(800) < 0.5, "a", "b")
    report = run({"cluster": cluster}, race, reference="b", metrics=["cluster_distribution_total_variation"])
    v = report.get("cluster_distribution_total_variation", "a")
    assert v.ci_lower < v.value - (v.ci_upper - v.value) / 2  # shifted down against the upward bias
    assert v.ci_lower >= 0.0


def test_selection_and_argument_errors():
    x, cluster, race = blobs(9, n=30)
    with pytest.raises(ValueError, match="unknown clustering metric 'nope'"):
        run({"cluster": cluster}, race, metrics=["nope"])
    with pytest.raises(TypeError, match="sequence of names"):
        run({"cluster": cluster}, race, metrics="cluster_balance")
    twice = run({"cluster": cluster}, race, metrics=["cluster_balance", "cluster_balance"])
    assert len(twice.values) == 3  # one per group
    with pytest.raises(ValueError, match=r"needs the data key\(s\) \['features'\]"):
        run({"cluster": cluster}, race, metrics=["silhouette_difference"])
    names = {v.metric for v in run({"cluster": cluster}, race).values}
    assert names == {s.name for s in cl.SPECS if s.level == "group"} - {
        "social_fairness_ratio",
        "silhouette_difference",
    }
    with pytest.raises(ValueError, match="centers must be a finite"):
        run({"cluster": cluster, "features": x}, race, centers=[[0.0, 0.0]])
    bad = x.copy()
    bad[0, 0] = NAN
    with pytest.raises(ValueError, match="features has non-finite values"):
        run({"cluster": cluster, "features": bad}, race)
    with pytest.raises(ValueError, match="features must have shape"):
        run({"cluster": cluster, "features": x[:, 0]}, race)
    with pytest.raises(ValueError, match="max_rows must be an integer"):
        run({"cluster": cluster, "features": x}, race, max_rows=1)
    with pytest.raises(ValueError, match="cluster has 1 missing values"):
        run({"cluster": np.where(np.arange(30) == 0, NAN, cluster)}, race)


def test_specs_contract():
    names = [s.name for s in cl.SPECS]
    assert len(set(names)) == len(names)
    # registered once, as declared: no other family took the name
    assert all(
        n in mc.REGISTRY and mc.REGISTRY[n].family == spec.family
        for n, spec in zip(names, cl.SPECS, strict=True)
    )
    for s in cl.SPECS:
        assert s.family == "clustering" and s.computation == "groupwise" and s.source and s.meaning
        assert s.requires <= set(cl.INPUTS)
