"""The task families' intervals at scale: analytic forms, and the row bootstrap drawn as counts over cells.

References are independent of the code under test: a brute-force search of Fieller's set,
each side's Fisher-z interval combined by hand, the row and user bootstraps written as the
slow loops they replace, and coverage over simulated windows whose true value is known.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from metrics_core import clustering, recommender, regression
from metrics_core.engine.cells import Cells, cell_bootstrap
from metrics_core.engine.groupwise import Resampling
from metrics_core.regression import kernels as rk
from metrics_core.stats.moments import correlation_difference_interval, fieller_interval
from metrics_core.window.groups import categorical_attribute

Z = stats.norm.ppf(0.975)


def _grid_fieller(a: float, va: float, b: float, vb: float) -> tuple[float, float]:
    t = np.linspace(-5, 5, 2_000_001)
    inside = t[(a - t * b) ** 2 <= Z * Z * (va + t * t * vb)]
    return float(inside.min()), float(inside.max())


@pytest.mark.parametrize(
    ("a", "va", "b", "vb"),
    [(2.0, 0.01, 4.0, 0.04), (1.0, 0.2, 1.5, 0.1), (0.3, 0.01, 0.2, 0.002), (-0.5, 0.02, 1.0, 0.01)],
)
def test_fieller_is_the_set_its_pivot_accepts(a, va, b, vb):
    lo, hi = fieller_interval(a, va, b, vb)
    ref = _grid_fieller(a, va, b, vb)
    assert (lo, hi) == pytest.approx(ref, abs=1e-5)


def test_fieller_is_unbounded_when_the_denominator_may_be_zero():
    assert fieller_interval(1.0, 0.01, 0.1, 0.01, lower_bound=0.0) == (0.0, math.inf)
    assert all(math.isnan(x) for x in fieller_interval(1.0, math.nan, 2.0, 0.1))


def test_zou_combines_the_fisher_intervals():
    def fisher(r, n):
        return math.tanh(math.atanh(r) - Z / math.sqrt(n - 3)), math.tanh(
            math.atanh(r) + Z / math.sqrt(n - 3)
        )

    (l1, u1), (l2, u2) = fisher(0.6, 80), fisher(0.2, 150)
    lo, hi = correlation_difference_interval(0.6, 80, 0.2, 150)
    assert lo == pytest.approx(0.4 - math.hypot(0.6 - l1, u2 - 0.2))
    assert hi == pytest.approx(0.4 + math.hypot(u1 - 0.6, 0.2 - l2))
    assert all(math.isnan(x) for x in correlation_difference_interval(0.5, 3, 0.1, 100))


# --- regression: the analytic intervals cover, and match the row bootstrap they replace ---------

ANALYTIC = [
    "regression_average_score_ratio",
    "regression_zscore_difference",
    "regression_rmse_ratio",
    "regression_mae_ratio",
    "regression_correlation_difference",
]


def _regression_window(rng: np.random.Generator, n_g: int, n_r: int):
    sex = np.array(["f"] * n_g + ["m"] * n_r)
    y = rng.normal(3.0, 1.0, n_g + n_r)
    score = np.where(sex == "f", 1.1, 1.0) * y + rng.normal(0.0, np.where(sex == "f", 0.6, 0.5))
    return {"y_score": score, "y_true": y}, categorical_attribute("sex", sex.tolist(), reference="m")


def _truth() -> dict[str, float]:
    """Each analytic metric's population value, from one very large window."""
    data, sex = _regression_window(np.random.default_rng(99), 400_000, 400_000)
    report = regression.evaluate(data, [sex], metrics=ANALYTIC)
    return {name: report.get(name, "f").value for name in ANALYTIC}


def test_analytic_regression_intervals_cover_the_true_value():
    truth = _truth()
    rng = np.random.default_rng(5)
    hits = dict.fromkeys(ANALYTIC, 0)
    windows = 400
    for _ in range(windows):
        data, sex = _regression_window(rng, 300, 600)
        report = regression.evaluate(data, [sex], metrics=ANALYTIC)
        for name in ANALYTIC:
            v = report.get(name, "f")
            hits[name] += v.ci_lower <= truth[name] <= v.ci_upper
    for name, k in hits.items():  # 95% nominal; 400 windows: binomial sd 1.1%
        assert 0.915 <= k / windows <= 0.985, (name, k / windows)


def _row_bootstrap(statistic, g, r, n_resamples, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_resamples):
        gi, ri = rng.integers(0, len(g[0]), len(g[0])), rng.integers(0, len(r[0]), len(r[0]))
        out.append(statistic([a[gi] for a in g], [a[ri] for a in r]))
    return np.quantile(out, [0.025, 0.975])


def test_analytic_intervals_agree_with_the_row_bootstrap_they_replace():
    data, sex = _regression_window(np.random.default_rng(7), 2000, 4000)
    report = regression.evaluate(data, [sex], metrics=ANALYTIC)
    f = np.arange(6000) < 2000
    g, r = [data["y_score"][f], data["y_true"][f]], [data["y_score"][~f], data["y_true"][~f]]

    def corr(s, t):
        return np.corrcoef(s, t)[0, 1]

    def pooled_d(a, b):
        ss = ((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum()
        return (a.mean() - b.mean()) / math.sqrt(ss / (a.size + b.size - 2))

    slow = {
        "regression_average_score_ratio": lambda g, r: g[0].mean() / r[0].mean(),
        "regression_zscore_difference": lambda g, r: pooled_d(g[0], r[0]),
        "regression_rmse_ratio": lambda g, r: math.sqrt(
            ((g[1] - g[0]) ** 2).mean() / ((r[1] - r[0]) ** 2).mean()
        ),
        "regression_mae_ratio": lambda g, r: np.abs(g[1] - g[0]).mean() / np.abs(r[1] - r[0]).mean(),
        "regression_correlation_difference": lambda g, r: corr(*g) - corr(*r),
    }
    for name, statistic in slow.items():
        v = report.get(name, "f")
        lo, hi = _row_bootstrap(statistic, g, r, 1000)
        width = hi - lo
        assert v.ci_lower == pytest.approx(lo, abs=0.1 * width), name
        assert v.ci_upper == pytest.approx(hi, abs=0.1 * width), name


# --- the rank statistics over cells ---------------------------------------------------------


def _sides(rng: np.random.Generator, n: int, decimals: int | None):
    s = rng.normal(size=n)
    if decimals is not None:
        s = np.round(s, decimals)
    f = rng.random(n) < 0.3
    s[f] += 0.2
    return s, f


@pytest.mark.parametrize("decimals", [1, 2])
def test_exact_cells_give_the_rows_rank_statistics(decimals):
    rng = np.random.default_rng(decimals)
    for _ in range(5):
        s, f = _sides(rng, 3000, decimals)
        ordered = np.sort(s)
        starts, exact = rk.cell_starts(ordered)
        assert exact
        c_g, c_r = rk.cell_counts(s[f], starts), rk.cell_counts(s[~f], starts)
        g, r = {"y_score": s[f]}, {"y_score": s[~f]}
        assert rk.max_statistical_parity_of_counts(c_g, c_r) == pytest.approx(
            rk.max_statistical_parity(g, r), abs=1e-12
        )
        reach = rk.quantile_reach(starts, ordered)
        assert rk.statistical_parity_auc_of_counts(c_g, c_r, reach) == pytest.approx(
            rk.statistical_parity_auc(g, r, ordered), abs=1e-12
        )


def test_binned_cells_stay_within_their_slack():
    rng = np.random.default_rng(11)
    for max_cells in (16, 64, 512):
        s, f = _sides(rng, 20_000, None)
        ordered = np.sort(s)
        starts, exact = rk.cell_starts(ordered, max_cells)
        assert not exact and starts.size <= max_cells
        c_g, c_r = rk.cell_counts(s[f], starts), rk.cell_counts(s[~f], starts)
        g, r = {"y_score": s[f]}, {"y_score": s[~f]}
        ks, ks_cells = rk.max_statistical_parity(g, r), rk.max_statistical_parity_of_counts(c_g, c_r)
        assert abs(ks - ks_cells) <= rk.max_gap_slack(c_g, c_r) + 1e-12
        reach = rk.quantile_reach(starts, ordered)
        widths = np.diff(np.append(reach, 1.0))
        auc, auc_cells = (
            rk.statistical_parity_auc(g, r, ordered),
            rk.statistical_parity_auc_of_counts(c_g, c_r, reach),
        )
        assert abs(auc - auc_cells) <= rk.area_slack(c_g, c_r, widths) + 1e-12
        if max_cells == 16:
            assert ks != pytest.approx(ks_cells, abs=1e-6)  # coarse bins do move the value


def _basic(estimate, replicates):
    lo, hi = np.quantile(replicates, [0.025, 0.975])
    return max(0.0, 2 * estimate - hi), min(1.0, 2 * estimate - lo)


def test_cell_bootstrap_is_the_row_bootstrap():
    """Multinomial counts over distinct scores resample exactly as rows drawn with replacement do."""
    rng = np.random.default_rng(3)
    s, f = _sides(rng, 900, 1)
    starts, _ = rk.cell_starts(np.sort(s))
    cells = Cells(
        rk.cell_counts(s[f], starts), rk.cell_counts(s[~f], starts), rk.max_statistical_parity_of_counts
    )
    ci = cell_bootstrap(lambda w, g, r: cells, bounds=(0.0, 1.0))
    lo, hi = ci(None, {}, {}, 0.95, Resampling(4000, 1))
    g, r = [s[f]], [s[~f]]
    estimate = rk.max_statistical_parity({"y_score": s[f]}, {"y_score": s[~f]})
    rng = np.random.default_rng(2)
    slow = []
    for _ in range(4000):
        gi, ri = rng.integers(0, g[0].size, g[0].size), rng.integers(0, r[0].size, r[0].size)
        slow.append(rk.max_statistical_parity({"y_score": g[0][gi]}, {"y_score": r[0][ri]}))
    assert (lo, hi) == pytest.approx(_basic(estimate, slow), abs=0.012)


def test_binned_interval_is_centred_on_the_rows_estimate_and_widened_by_the_slack():
    cells = Cells(
        np.array([30.0, 70.0]), np.array([50.0, 50.0]), lambda a, b: a[0] / a.sum() - b[0] / b.sum()
    )
    exact = cell_bootstrap(lambda w, g, r: cells)(None, {}, {}, 0.95, Resampling(500, 0))
    moved = Cells(cells.group, cells.reference, cells.statistic, estimate=-0.15, slack=0.01)
    lo, hi = cell_bootstrap(lambda w, g, r: moved)(None, {}, {}, 0.95, Resampling(500, 0))
    assert (lo, hi) == pytest.approx((exact[0] + 0.05 - 0.01, exact[1] + 0.05 + 0.01))


def test_cells_hold_whole_numbers_of_rows():
    with pytest.raises(ValueError, match="whole, non-negative"):
        Cells(np.array([0.4, 0.4, 0.4]), np.array([1.0, 2.0]), lambda a, b: 0.0)
    with pytest.raises(ValueError, match="whole, non-negative"):
        Cells(np.array([1.0]), np.array([-1.0]), lambda a, b: 0.0)


def test_regression_rank_intervals_on_a_continuous_window():
    """Distinct predictions ~ rows: binned cells, intervals near the slow row bootstrap's, estimate exact."""
    rng = np.random.default_rng(8)
    s, f = _sides(rng, 4000, None)
    sex = categorical_attribute("sex", np.where(f, "f", "m").tolist(), reference="m")
    names = ["regression_max_statistical_parity", "regression_statistical_parity_auc"]
    report = regression.evaluate({"y_score": s}, [sex], metrics=names, n_resamples=600)
    ks = report.get(names[0], "f")
    assert ks.value == pytest.approx(stats.ks_2samp(s[f], s[~f]).statistic, abs=1e-12)
    rng = np.random.default_rng(4)
    slow = []
    for _ in range(600):
        gi, ri = rng.integers(0, f.sum(), f.sum()), rng.integers(0, (~f).sum(), (~f).sum())
        slow.append(stats.ks_2samp(s[f][gi], s[~f][ri]).statistic)
    lo, hi = _basic(ks.value, slow)
    assert (ks.ci_lower, ks.ci_upper) == pytest.approx((lo, hi), abs=0.012)
    assert ks.ci_lower <= ks.value <= ks.ci_upper


# --- recommender: the user bootstrap as weighted per-user sums --------------------------------


def test_user_cells_resample_users_as_the_slow_loop_does():
    rng = np.random.default_rng(21)
    n_users = 300
    user = np.repeat(np.arange(n_users), rng.integers(1, 8, n_users))
    item = rng.integers(0, 30, user.size)
    score = rng.random(user.size) + 0.1 * (user % 3 == 0)
    relevant = (rng.random(user.size) < 0.3).astype(float)
    sex = np.where(user % 3 == 0, "f", "m")
    data = {"user": user, "item": item, "y_score": score, "y_true": relevant}
    attr = categorical_attribute("sex", sex.tolist(), reference="m")
    names = [
        "recommender_mean_score_difference",
        "recommender_avg_precision_ratio",
        "exposure_total_variation",
    ]
    report = recommender.evaluate(data, [attr], metrics=names, k=None, n_resamples=2000)
    f = sex == "f"

    def users_resampled(mask, rng):
        ids = np.unique(user[mask])
        picked = rng.choice(ids, ids.size)
        rows = np.concatenate([np.flatnonzero(user == u) for u in picked])
        return rows, np.repeat(np.arange(picked.size), [np.count_nonzero(user == u) for u in picked])

    def precision(rows, who):
        hits = np.bincount(who, relevant[rows])
        n = np.bincount(who)
        return (hits / n).mean()

    def tv(rows_g, rows_r):
        e_g, e_r = np.bincount(item[rows_g], minlength=30), np.bincount(item[rows_r], minlength=30)
        return 0.5 * np.abs(e_g / e_g.sum() - e_r / e_r.sum()).sum()

    rng = np.random.default_rng(0)
    slow = {name: [] for name in names}
    for _ in range(600):
        (rg_, wg), (rr_, wr) = users_resampled(f, rng), users_resampled(~f, rng)
        slow[names[0]].append(score[rg_].mean() - score[rr_].mean())
        slow[names[1]].append(precision(rg_, wg) / precision(rr_, wr))
        slow[names[2]].append(tv(rg_, rr_))
    for name in names[:2]:
        v = report.get(name, "f")
        lo, hi = np.quantile(slow[name], [0.025, 0.975])
        assert (v.ci_lower, v.ci_upper) == pytest.approx((lo, hi), abs=0.12 * (hi - lo)), name
    v = report.get(names[2], "f")  # exposure TV: the true TV is 0 (both sides draw items uniformly)
    # upper end: the plug-in's percentile over the user resamples; lower end: a held-out witness bound,
    # checked against loops in test_exposure_bound.py
    assert v.ci_upper == pytest.approx(np.quantile(slow[names[2]], 0.975), abs=0.12 * v.value)
    assert 0.0 <= v.ci_lower < v.value < v.ci_upper


# --- clustering --------------------------------------------------------------------------------


def test_clustering_intervals_on_counts_and_moments():
    rng = np.random.default_rng(2)
    n = 4000
    sex = np.where(rng.random(n) < 0.4, "f", "m")
    cluster = np.where(sex == "f", rng.choice(3, n, p=[0.5, 0.3, 0.2]), rng.choice(3, n, p=[0.4, 0.3, 0.3]))
    features = rng.normal(size=(n, 2)) + cluster[:, None] * 3.0
    attr = categorical_attribute("sex", sex.tolist(), reference="m")
    report = clustering.evaluate(
        {"cluster": cluster, "features": features}, [attr], n_resamples=2000, max_rows=n
    )
    f = sex == "f"
    tv = report.get("cluster_distribution_total_variation", "f")
    p_g, p_r = (np.bincount(cluster[m], minlength=3) / m.sum() for m in (f, ~f))
    assert tv.value == pytest.approx(0.5 * np.abs(p_g - p_r).sum())
    slow = []
    for _ in range(1000):
        g = cluster[f][rng.integers(0, f.sum(), f.sum())]
        r = cluster[~f][rng.integers(0, (~f).sum(), (~f).sum())]
        slow.append(
            0.5 * np.abs(np.bincount(g, minlength=3) / g.size - np.bincount(r, minlength=3) / r.size).sum()
        )
    assert (tv.ci_lower, tv.ci_upper) == pytest.approx(_basic(tv.value, slow), abs=0.01)
    sil = report.get("silhouette_difference", "f")
    from sklearn.metrics import silhouette_samples

    s = silhouette_samples(features, cluster)
    d = s[f].mean() - s[~f].mean()
    half = Z * math.sqrt(s[f].var(ddof=1) / f.sum() + s[~f].var(ddof=1) / (~f).sum())
    assert (sil.value, sil.ci_lower, sil.ci_upper) == pytest.approx((d, d - half, d + half))
