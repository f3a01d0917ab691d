"""Alert calibration figures for docs/alerts.md: false violations, coverage, power, anytime sequences.

Every figure comes from this run with fixed seeds: exact binomial enumeration where the data
are counts, seeded simulation elsewhere. The previous interval methods (Katz, Newcombe's hybrid,
DeLong's Wald interval) are computed beside the current ones in the same run.

    .venv/bin/python benchmarks/calibration.py [--quick] [--only TABLE]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from rich.console import Console
from rich.table import Table
from scipy.stats import binom, norm

import metrics_core as mc
from metrics_core import recommender
from metrics_core.binary.window import ConfusionWindow
from metrics_core.engine.cells import cell_bootstrap
from metrics_core.engine.groupwise import Resampling
from metrics_core.recommender import kernels
from metrics_core.recommender.specs import RecommenderWindow
from metrics_core.stats.auc import auc_delong, auc_score_interval
from metrics_core.stats.contrasts import contrast_interval
from metrics_core.stats.distances import kl_divergence_counts, total_variation_counts
from metrics_core.stats.intervals import normal_interval
from metrics_core.stats.judge import DEFAULT_MIN_SAMPLES
from metrics_core.stats.power import Plan, rows_needed
from metrics_core.stats.score import _score
from metrics_core.stats.sequences import bernoulli_sequence

RATES = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7)
console = Console(width=140)


def _support(n: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    sd = math.sqrt(n * p * (1 - p)) + 1
    x = np.arange(max(0, int(n * p - 9 * sd)), min(n, int(n * p + 9 * sd) + 1) + 1)
    return x, binom.pmf(x, n, p)


def _interval_beyond(interval):
    def beyond(k1, n1, k2, n2, bound: float, above: bool) -> np.ndarray:
        lo, hi = interval(k1, n1, k2, n2)
        return np.nan_to_num(lo > bound) if above else np.nan_to_num(hi < bound)

    return beyond


def _score_beyond(ratio: bool):
    """The score interval lies beyond a bound exactly when the score test at the bound rejects
    (test inversion; tests/metrics_core/test_calibration.py checks it): one evaluation per table."""
    z = float(norm.ppf(0.975))

    def beyond(k1, n1, k2, n2, bound: float, above: bool) -> np.ndarray:
        s = _score(k1, float(n1), k2, float(n2), np.full(k1.shape, bound), ratio=ratio, z=z, skew=True)
        return s > z if above else s < -z

    return beyond


def exact_beyond(beyond, contrast: str, n1: int, n2: int, p2: float, bound: float, above: bool) -> float:
    """P(the interval lies wholly beyond ``bound``) when the truth sits exactly on it, by enumeration."""
    p1 = p2 + bound if contrast == "difference" else bound * p2
    x1, w1 = _support(n1, p1)
    x2, w2 = _support(n2, p2)
    k1, k2 = np.meshgrid(x1.astype(float), x2.astype(float), indexing="ij")
    return float(w1 @ beyond(k1, n1, k2, n2, bound, above).astype(float) @ w2)


def table_bounds(sizes: list[int]) -> None:
    methods = {
        "ratio": {
            "Katz (before)": _interval_beyond(mc.katz_log_interval),
            "skewness-corrected score (now)": _score_beyond(ratio=True),
        },
        "difference": {
            "Newcombe (before)": _interval_beyond(mc.newcombe_interval),
            "skewness-corrected score (now)": _score_beyond(ratio=False),
        },
    }
    bounds = {"ratio": ((1.25, True), (0.8, False)), "difference": ((0.1, True), (-0.1, False))}
    t = Table(
        title="P(false violation) at the fair range's bound, worst over base rates 0.02-0.7 (exact; nominal 2.5%)"
    )
    t.add_column("metric kind")
    t.add_column("method")
    for n in sizes:
        t.add_column(f"n={n:,}, ref 10n", justify="right")
    for contrast, by_method in methods.items():
        for name, f in by_method.items():
            cells = []
            for n in sizes:
                worst = 0.0
                for bound, above in bounds[contrast]:
                    for p2 in RATES:
                        p1 = p2 + bound if contrast == "difference" else bound * p2
                        if 0 < p1 < 1:
                            worst = max(worst, exact_beyond(f, contrast, n, 10 * n, p2, bound, above))
                cells.append(f"{100 * worst:.2f}%")
            t.add_row(contrast, name, *cells)
    console.print(t)


def _binormal_auc(rng: np.random.Generator, n: int, m: int, delta: float) -> float:
    scores = np.concatenate([rng.normal(delta, 1, n), rng.normal(0, 1, m)])
    is_pos = np.concatenate([np.ones(n), np.zeros(m)])[np.argsort(scores)]
    return auc_delong(is_pos, None, 1 - is_pos, None)


def table_auc(reps: int) -> None:
    t = Table(
        title=f"AUC intervals: coverage, and P(interval wholly below the truth) - the false-alarm tail ({reps} draws)"
    )
    columns = (
        "positives / negatives",
        "true AUC",
        "DeLong Wald (before)",
        "Newcombe method 5",
        "hull with logit (now)",
    )
    for col in columns:
        t.add_column(col, justify="right")
    rng = np.random.default_rng(5)
    for n, m in ((30, 300), (100, 100), (100, 1000), (300, 3000)):
        for auc_true in (0.85, 0.95):
            delta = float(norm.ppf(auc_true)) * math.sqrt(2)
            stats = {"wald": [0, 0], "score": [0, 0], "hull": [0, 0]}
            for _ in range(reps):
                auc, var = _binormal_auc(rng, n, m, delta)
                for key, (lo, hi) in (
                    ("wald", normal_interval(auc, var, bounds=(0.0, 1.0))),
                    ("score", auc_score_interval(auc, n, m)),
                    ("hull", auc_score_interval(auc, n, m, variance=var)),
                ):
                    stats[key][0] += bool(lo <= auc_true <= hi)
                    stats[key][1] += bool(hi < auc_true)
            t.add_row(
                f"{n} / {m}",
                f"{auc_true}",
                *(f"{100 * c / reps:.1f}% / {100 * b / reps:.2f}%" for c, b in stats.values()),
            )
    console.print(t)


def _fair_window(rng: np.random.Generator, n: int) -> tuple[mc.ScoreTable, list[mc.Comparison]]:
    y = (rng.random(n) < 0.15).astype(float)
    score = np.round(np.clip(rng.normal(0.25 + 0.4 * y, 0.18), 0, 1), 3)
    shares = (0.01, 0.02, 0.03, 0.05, 0.08, 0.12, 0.2)
    columns = {f"g{i}": (rng.random(n) < s).astype(float) for i, s in enumerate(shares)}
    attr = mc.indicator_attribute("identity", columns)
    return mc.table_for(score, y, [attr]), list(attr.comparisons)


def table_null(windows: int) -> None:
    rng = np.random.default_rng(11)
    judged: dict[str, int] = {}
    violations: dict[str, int] = {}
    any_window = 0
    for _ in range(windows):
        table, comparisons = _fair_window(rng, 20_000)
        bad = False
        for v in mc.evaluate(table, comparisons).values:
            if not (math.isfinite(v.fair_min) or math.isfinite(v.fair_max)) or v.state == "insufficient_data":
                continue
            judged[v.metric] = judged.get(v.metric, 0) + 1
            violations[v.metric] = violations.get(v.metric, 0) + (v.state == "violation")
            bad |= v.state == "violation"
        any_window += bad
    t = Table(
        title=f"Null streams: a fair model, {windows} windows of 20,000 rows, 7 groups (1-20% of rows), defaults"
    )
    for col in ("metric", "judged values", "violations", "rate"):
        t.add_column(col, justify="right" if col != "metric" else "left")
    for name in sorted(judged):
        t.add_row(name, f"{judged[name]:,}", str(violations[name]), f"{violations[name] / judged[name]:.4%}")
    t.add_row(
        "all alerting metrics",
        f"{sum(judged.values()):,}",
        str(sum(violations.values())),
        f"{sum(violations.values()) / sum(judged.values()):.4%}",
    )
    console.print(t)
    console.print(f"windows with any violation: {any_window} of {windows}")


def table_two_sd() -> None:
    rng = np.random.default_rng(2)
    t = Table(
        title="two_sd_rule on a fair model (true DI 0.90), share of windows where |z| > 2 - why it is informational now"
    )
    for col in ("rows per window", "group share", "|z| > 2"):
        t.add_column(col, justify="right")
    for n in (20_000, 200_000, 1_000_000):
        hits = 0
        for _ in range(200):
            g = rng.random(n) < 0.1
            pred = rng.random(n) < np.where(g, 0.27, 0.30)
            cells = np.zeros((1, 2, 2, 3))
            for side, mask in ((0, g), (1, ~g)):
                cells[0, side, 1, 0], cells[0, side, 0, 0] = pred[mask].sum(), (~pred[mask]).sum()
            hits += bool(
                abs(mc.get_metric("two_sd_rule").statistic(ConfusionWindow(cells, level=0.95))[0]) > 2
            )
        t.add_row(f"{n:,}", "10%", f"{hits / 200:.0%}")
    console.print(t)


def table_power() -> None:
    t = Table(
        title="Rows and days to detect a departure with 90% power (5,000 predictions a day, reference = the rest)"
    )
    for col in (
        "metric: true value (fair range)",
        "group share",
        "base rate",
        "fixed: rows / days",
        "anytime: rows / days",
    ):
        t.add_column(col, justify="right" if "rows" in col or "share" in col or "base" in col else "left")
    cases = [
        ("disparate impact: 0.70 ([0.8, 1.25])", "ratio", 0.8, 0.7, 0.15),
        ("statistical parity diff.: -0.15 ([-0.1, 0.1])", "difference", -0.1, -0.15, 0.3),
        ("FPR difference: +0.15 ([-0.1, 0.1])", "difference", 0.1, 0.15, 0.1),
    ]
    for label, kind, bound, truth, base in cases:
        for share in (0.02, 0.10):
            out = []
            for method in ("fixed", "anytime"):
                plan = Plan(
                    kind=kind,
                    reference_rate=base,
                    bound=bound,
                    reference_ratio=(1 - share) / share,
                    method=method,
                )
                n = rows_needed(plan, truth)
                total = n / share
                out.append(f"{total:,.0f} / {total / 5000:,.1f}")
            t.add_row(label, f"{share:.0%}", f"{base}", *out)
    for share, positives in ((0.02, 0.08), (0.10, 0.08)):
        plan = Plan(kind="auc", bound=0.90, reference_ratio=(1 - positives) / positives)
        n = rows_needed(plan, 0.80)
        total = n / (share * positives)
        t.add_row(
            "BPSN AUC: 0.80 (>= overall - 0.05 = 0.90)",
            f"{share:.0%}",
            f"{positives} positives",
            f"{total:,.0f} / {total / 5000:,.1f}",
            "(fixed-sample interval)",
        )
    console.print(t)


def table_anytime(streams: int) -> None:
    """A window filling up, judged every 100 rows: P(some look shows a false violation) at the bound."""
    rng = np.random.default_rng(9)
    looks = np.arange(100, 20_001, 100)
    p_ref, di = 0.2, 1.25
    alarms = {"fixed": 0, "anytime": 0}
    for _ in range(streams):
        g = np.cumsum(rng.random(20_000) < p_ref * di)[looks - 1]
        r = np.cumsum(rng.random(20_000) < p_ref)[looks - 1]
        for method in alarms:
            lo, _ = contrast_interval("ratio", method, g, looks, r, looks, level=0.95)
            alarms[method] += bool(np.any(lo > 1.25))
    t = Table(
        title=f"A growing window judged at 200 looks (every 100 rows, to 20,000), true DI exactly 1.25, {streams} streams"
    )
    t.add_column("intervals")
    t.add_column("P(false violation at some look)", justify="right")
    for method, n in alarms.items():
        t.add_row(method, f"{n / streams:.1%}")
    console.print(t)
    widths = [
        (
            n,
            *(float(x) for x in mc.wilson_interval(0.3 * n, n)),
            *(float(x) for x in bernoulli_sequence(0.3 * n, n)),
        )
        for n in (100, 1000, 10_000)
    ]
    t = Table(title="Width of a rate's interval at 0.3: fixed (Wilson) vs anytime (confidence sequence)")
    for col in ("rows", "Wilson", "sequence", "ratio"):
        t.add_column(col, justify="right")
    for n, wl, wh, sl, sh in widths:
        t.add_row(f"{n:,}", f"{wh - wl:.4f}", f"{sh - sl:.4f}", f"{(sh - sl) / (wh - wl):.2f}x")
    console.print(t)


def table_episodes(weeks: int) -> None:
    """Sliding windows on a value exactly on its bound: how often a fair-at-the-edge model pages.

    Disparate impact with the group's selection rate exactly 0.8 x the reference's (0.4 vs 0.5), a
    1-day window re-judged every hour, fixed 95% intervals. An *episode* is a run of consecutive
    hourly violations (one alert, held by ``for``); per week, with the share of episodes lasting at
    least 1 h (``for: 1h`` drops the rest). Hourly traffic: the group's and the reference's rows."""
    rng = np.random.default_rng(5)
    hours = weeks * 168
    t = Table(
        title=f"episodes of false violation per week, DI on its bound 0.8, 1d window hourly, {weeks} weeks"
    )
    for column in (
        "group rows/h",
        "reference rows/h",
        "violating evaluations",
        "episodes / week",
        "of them >= 1 h",
    ):
        t.add_column(column, justify="right")
    for n_group, n_ref in ((20, 200), (100, 1000), (500, 5000)):
        k_group = rng.binomial(n_group, 0.4, hours + 24)
        k_ref = rng.binomial(n_ref, 0.5, hours + 24)

        # the window ending after each hour: the last 24 hours' counts
        def day(k: np.ndarray) -> np.ndarray:
            c = np.concatenate([[0], np.cumsum(k)])
            return (c[24:] - c[:-24])[:hours]

        kg, kr = day(k_group), day(k_ref)
        _, hi = contrast_interval("ratio", "fixed", kg, 24 * n_group, kr, 24 * n_ref, level=0.95)
        bad = np.asarray(hi < 0.8)
        starts = bad & ~np.concatenate([[False], bad[:-1]])
        run_ids = np.cumsum(starts) * bad
        lengths = np.bincount(run_ids[bad])[1:] if bad.any() else np.array([])
        episodes = int(starts.sum())
        per_week = episodes / weeks
        # a binomial-ish spread of the weekly count: the standard error of the mean over weeks
        weekly = np.add.reduceat(starts.astype(float), np.arange(0, hours, 168))
        se = float(weekly.std(ddof=1) / math.sqrt(weeks))
        longer = float((lengths >= 2).mean()) if len(lengths) else float("nan")
        t.add_row(
            f"{n_group:,}", f"{n_ref:,}", f"{bad.mean():.2%}", f"{per_week:.2f} +- {se:.2f}", f"{longer:.0%}"
        )
    console.print(t)


def _tv(p: np.ndarray, q: np.ndarray) -> float:
    return 0.5 * float(np.abs(p - q).sum())


def _kl(p: np.ndarray, q: np.ndarray) -> float:
    return float(np.sum(p * np.log(p / q)))


# metric: (true distance of two share vectors, fair range's upper bound, plug-in of two count vectors)
EXPOSURE = {
    "exposure_total_variation": (_tv, 0.1, total_variation_counts),
    "exposure_kl_divergence": (_kl, 0.02, lambda a, b: kl_divergence_counts(a, b, smoothing=0.5)),
}


def exposure_shares(metric: str, n_items: int, truth: float, shape: str) -> tuple[np.ndarray, np.ndarray]:
    """The group's and the reference's true exposure shares, ``truth`` apart by ``metric``.

    Reference: Zipf(0.8) popularity over ``n_items``. Group, ``shape="spread"``: every item's share
    tilted by ``exp(+-beta)`` (signs on a fixed random half of the items) - the case where the
    plug-in's upward bias is largest; ``shape="10 items"``: the 5 most exposed items lose a share
    ``x`` of their exposure to the next 5. ``beta`` or ``x`` bisected to hit ``truth``."""
    distance = EXPOSURE[metric][0]
    ref = 1 / np.arange(1, n_items + 1) ** 0.8
    ref /= ref.sum()
    sign = np.where(np.random.default_rng(99).random(n_items) < 0.5, 1.0, -1.0)

    def moved(x: float) -> np.ndarray:
        if shape == "spread":
            g = ref * np.exp(x * sign)
            return g / g.sum()
        g = ref.copy()
        g[:5] *= 1 - x
        g[5:10] += x * ref[:5].sum() * ref[5:10] / ref[5:10].sum()
        return g

    lo, hi = 0.0, 5.0 if shape == "spread" else 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if distance(moved(mid), ref) < truth else (lo, mid)
    return moved(lo), ref


def _basic_before(metric: str, window: RecommenderWindow, g: dict, r: dict) -> tuple[float, float]:
    """The interval before issue 22: the basic bootstrap of the plug-in, same users resampled, same seed."""
    statistic = EXPOSURE[metric][2]

    def cells(w: RecommenderWindow, g: dict, r: dict):
        g_, r_ = (kernels.user_exposure(kernels.side_of(d), w.support_items) for d in (g, r))
        return kernels.user_cells(g_, r_, statistic)

    top = 1.0 if metric == "exposure_total_variation" else math.inf
    return cell_bootstrap(cells, bounds=(0.0, top))(window, g, r, 0.95, Resampling(200, 0))


def exposure_row(
    metric: str, shape: str, n_items: int, users: int, truth: float, reps: int, seed: int
) -> list[str]:
    """One row of :func:`table_exposure`: ``reps`` windows drawn with ``seed``, judged before and now."""
    distance, bound, _ = EXPOSURE[metric]
    rng = np.random.default_rng(seed)
    p_g, p_r = exposure_shares(metric, n_items, truth, shape)
    true_value = distance(p_g, p_r)
    user = np.repeat(np.arange(2 * users), 10)
    side = np.where(user < users, "g", "r")
    attr = mc.categorical_attribute("side", side, reference="r")
    g_rows = side == "g"
    violation, cover = [0, 0], [0, 0]
    bias, support, insufficient = 0.0, 0.0, 0
    for _ in range(reps):
        item = np.concatenate(
            [rng.choice(n_items, users * 10, p=p_g), rng.choice(n_items, users * 10, p=p_r)]
        )
        report = recommender.evaluate(
            {"user": user, "item": item}, [attr], metrics=[metric], k=None, min_samples=1
        )
        v = report.get(metric, "g")
        assert (v.state == "violation") == (v.ci_lower > bound)
        window = RecommenderWindow(np.bincount(item, minlength=n_items) > 0, 0.5, None)
        cols = {"user": user, "item": item, "_rec": np.ones(user.size, dtype=bool)}
        before = _basic_before(
            metric, window, {k: c[g_rows] for k, c in cols.items()}, {k: c[~g_rows] for k, c in cols.items()}
        )
        for i, (lo, hi) in enumerate((before, (v.ci_lower, v.ci_upper))):
            violation[i] += bool(lo > bound)
            cover[i] += bool(lo <= true_value <= hi)
        bias += v.value - true_value
        support += v.support
        insufficient += v.support < DEFAULT_MIN_SAMPLES
    return [
        shape,
        f"{n_items:,}",
        f"{users:,}",
        f"{true_value:.3g}",
        f"{support / reps:.0f}",
        f"{insufficient / reps:.0%}",
        f"{bias / reps:+.4f}",
        f"{violation[0] / reps:.1%} / {cover[0] / reps:.0%}",
        f"{violation[1] / reps:.1%} / {cover[1] / reps:.0%}",
    ]


def exposure_rows(metric: str) -> list[tuple[str, int, int, float]]:
    """The rows of :func:`table_exposure`: (difference, items, users per side, true value).

    Beyond the bound, TV at 1.25 and 2 times its bound, KL at the squares of those factors
    (KL ~ 2 TV^2 for small tilts, the Pinsker equality the fair ranges share: TV 0.2 <-> KL 0.08)."""
    bound = EXPOSURE[metric][1]

    def times(factor: float) -> float:
        return bound * (factor if metric == "exposure_total_variation" else factor**2)

    rows = [("spread", m, n, bound) for m in (200, 1000) for n in (200, 1700, 5000)]
    rows += [("10 items", 200, n, bound) for n in (1700, 5000)]
    rows += [("spread", 200, n, times(1.25)) for n in (1700, 5000)]
    return rows + [("spread", m, 1700, times(2)) for m in (200, 1000)]


def table_exposure(reps: int) -> None:
    """Exposure TV and KL with the true distance on the fair range's bound, and beyond it (power).

    Each window: ``users`` users per side, 10 recommendations each drawn independently from the
    side's true exposure shares (:func:`exposure_shares`), judged by ``recommender.evaluate``
    (``k=None``: every row is a recommendation; defaults otherwise but ``min_samples=1``, so that
    the interval alone decides). "insufficient" is the share of windows whose support
    (recommendations per item on the smaller side) is below the default ``min_samples``: those
    are never judged. Rows run in parallel, each with its own seed, the largest first."""
    jobs = [(metric, *row) for metric in EXPOSURE for row in exposure_rows(metric)]
    with ProcessPoolExecutor(max_workers=os.cpu_count()) as pool:
        order = sorted(range(len(jobs)), key=lambda i: -jobs[i][3])  # by users per side
        futures = {i: pool.submit(exposure_row, *jobs[i], reps, 2200 + i) for i in order}
        cells = [futures[i].result() for i in range(len(jobs))]
    for metric in EXPOSURE:
        t = Table(
            title=f"{metric}, true value on the bound {EXPOSURE[metric][1]} and beyond: "
            f"{reps} windows per row, 95% intervals"
        )
        for col in (
            "difference",
            "items",
            "users / side",
            "true value",
            "recs per item",
            f"insufficient (min_samples {DEFAULT_MIN_SAMPLES})",
            "plug-in bias",
            "before: P(violation) / coverage",
            "now: P(violation) / coverage",
        ):
            t.add_column(col, justify="left" if col == "difference" else "right")
        for job, row in zip(jobs, cells, strict=True):
            if job[0] == metric:
                t.add_row(*row)
        console.print(t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer draws (a smoke run)")
    parser.add_argument(
        "--only", choices=["bounds", "auc", "null", "two_sd", "power", "anytime", "episodes", "exposure"]
    )
    args = parser.parse_args()
    t0 = time.perf_counter()
    console.print(f"load {os.getloadavg()[0]:.1f}, numpy {np.__version__}")
    tables = {
        "bounds": lambda: table_bounds(
            [30, 100, 300, 1000] if args.quick else [30, 100, 300, 1000, 3000, 10000]
        ),
        "auc": lambda: table_auc(300 if args.quick else 2000),
        "null": lambda: table_null(20 if args.quick else 200),
        "two_sd": table_two_sd,
        "power": table_power,
        "anytime": lambda: table_anytime(100 if args.quick else 500),
        "episodes": lambda: table_episodes(200 if args.quick else 2000),
        "exposure": lambda: table_exposure(40 if args.quick else 300),
    }
    for name, table in tables.items():
        if args.only in (None, name):
            table()
    console.print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
