"""fairwatch's metric library against the seed reference approach, on a Jigsaw-sized window.

Builds a synthetic window shaped like the Jigsaw Unintended Bias validation data (by default
1,804,874 rows, the nine identity columns as annotator fractions that are NaN for most rows
and >= 0.5 for 1-5% of them, ~8% positives, scores biased per identity) and computes the
full per-group table twice:

* **fairwatch**: ``indicator_attribute`` + ``table_for`` (the one sort) + ``evaluate`` with
  every registry metric: the five ranking metrics with DeLong intervals, the binary metrics
  with their intervals and states, the power means and the final score;
* **baseline**: the approach of seed 000, written out below as the seed has it (pandas
  boolean filtering per subgroup, ``roc_auc_score`` for subgroup / BPSN / BNSP AUC,
  ``mannwhitneyu(..., alternative="less")`` normalised for the AEGs), plus the binary
  metrics per group with pandas filters, the overall AUC and seed 001's final score.

Every value both compute must agree to 1e-9 (exit status 1 otherwise). Prints a table, the
medians of several runs, peak memory, and as its LAST line one JSON object.

    python benchmarks/bench_metrics.py                         # Jigsaw-sized, about a minute
    python benchmarks/bench_metrics.py --rows 10000000 --groups 50
    python benchmarks/bench_metrics.py --groups 200
    python benchmarks/bench_metrics.py --decimals none         # raw float32 scores: few ties

Scores are float32 sigmoid outputs of a biased logit, logged with 4 decimals (as in
``benchmarks/bench_service.py``): many ties, ~10,000 distinct scores. ``--decimals none``
keeps the raw float32 outputs widened to float64: at this score distribution nearly every
score is distinct (the worst case for the per-group cost, which follows the number of
distinct scores). With more than nine groups the identity columns are synthetic
(``identity_000``...). When ``--baseline-groups`` is below ``--groups`` the baseline runs on
that many groups and its time is extrapolated linearly in the number of groups (its cost is
per group); the output says so.

The table build is mostly one ``np.sort`` of 64-bit words, whose speed depends on the CPU as
much as on the code: on AMD Zen 4, numpy's AVX-512 sort (picked on any CPU with AVX-512) is
about 5x slower than its AVX2 sort on the same machine, as Zen 4 microcodes the compress-store
the sort partitions with. The JSON line therefore names the CPU and times numpy's sort of as
many random 64-bit words (``sort_seconds``): compare figures from different machines with it.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.stats as stats
from numpy.typing import NDArray
from sklearn import metrics

import metrics_core as mc

JIGSAW_ROWS = 1_804_874
IDENTITIES = (
    "male",
    "female",
    "homosexual_gay_or_lesbian",
    "christian",
    "jewish",
    "muslim",
    "black",
    "white",
    "psychiatric_or_mental_illness",
)
THRESHOLD = 0.5
TOLERANCE = 1e-9
DECIMALS = 4  # scores as logged, like benchmarks/bench_service.py: many ties
RANKING = ("subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg")
BINARY = (
    "selection_rate",
    "true_positive_rate",
    "false_positive_rate",
    "false_negative_rate",
    "positive_predictive_value",
    "accuracy",
    "statistical_parity_difference",
    "disparate_impact",
    "four_fifths_ratio",
    "standardized_selection_rate_difference",
    "two_sd_rule",
    "equal_opportunity_difference",
    "false_positive_rate_difference",
    "false_negative_rate_difference",
    "average_odds_difference",
    "average_abs_odds_difference",
    "equalized_odds_difference",
    "accuracy_difference",
    "precision_ratio",
    "recall_ratio",
    "standardized_mean_difference",
)
FloatArray = NDArray[np.float64]


# --- the synthetic window ------------------------------------------------------------------


@dataclass
class Window:
    score: FloatArray
    label: NDArray[np.bool_]
    identity: dict[str, FloatArray]  # annotator fractions, NaN where nobody annotated

    @property
    def rows(self) -> int:
        return int(self.score.shape[0])


def make_window(
    rows: int, groups: int, *, seed: int, decimals: int | None, tick: Callable[[], None]
) -> Window:
    rng = np.random.default_rng(seed)
    label = rng.random(rows) < 0.08
    annotated = rng.random(rows) < 0.22  # Jigsaw: identities were annotated for ~22% of comments
    names = IDENTITIES[:groups] if groups <= len(IDENTITIES) else [f"identity_{i:03d}" for i in range(groups)]
    prevalence = rng.permutation(np.linspace(0.01, 0.05, len(names)))
    logit = rng.normal(-2.6, 1.1, rows) + 2.9 * label
    identity: dict[str, FloatArray] = {}
    n_annotated = int(annotated.sum())
    for name, p in zip(names, prevalence, strict=True):
        member = annotated & (rng.random(rows) < p / 0.22)
        col = np.full(rows, np.nan)
        low = np.round(rng.random(n_annotated) * 0.45, 1)  # annotated, not a member: 0 ... 0.4
        low[rng.random(n_annotated) < 0.7] = 0.0
        col[annotated] = low
        col[member] = np.round(0.5 + 0.5 * rng.random(int(member.sum())), 1)  # 0.5 ... 1.0
        identity[name] = col
        # the model's unintended bias: group negatives score higher, group positives shift;
        # with many groups a row is in many of them, so each group's share of the bias shrinks
        scale = min(1.0, len(IDENTITIES) / groups)
        neg_shift, pos_shift = scale * rng.uniform(0.0, 0.8), scale * rng.normal(0.0, 0.3)
        logit[member] += np.where(label[member], pos_shift, neg_shift)
        tick()
    score32 = np.float32(1.0) / (np.float32(1.0) + np.exp(-logit.astype(np.float32)))
    score = score32.astype(np.float64)
    if decimals is not None:
        score = np.round(score, decimals)
    return Window(score, label, identity)


# --- fairwatch ---------------------------------------------------------------------------------


@dataclass
class FairwatchRun:
    report: mc.Report
    table_seconds: float
    evaluate_seconds: float
    n_scores: int

    @property
    def seconds(self) -> float:
        return self.table_seconds + self.evaluate_seconds


def run_fairwatch(w: Window) -> FairwatchRun:
    t0 = time.perf_counter()
    attribute = mc.indicator_attribute("identity", w.identity)
    table = mc.table_for(w.score, w.label, [attribute])
    t1 = time.perf_counter()
    report = mc.evaluate(table, attribute.comparisons, threshold=THRESHOLD)
    t2 = time.perf_counter()
    return FairwatchRun(report, t1 - t0, t2 - t1, table.n_scores)


# --- the baseline: seed 000, as written there --------------------------------------------------

SUBGROUP_AUC = "subgroup_auc"
BPSN_AUC = "bpsn_auc"
BNSP_AUC = "bnsp_auc"
NEGATIVE_AEG = "negative_aeg"
POSITIVE_AEG = "positive_aeg"
SUBGROUP_SIZE = "subgroup_size"
SUBGROUP = "subgroup"


def compute_auc(y_true: pd.Series, y_pred: pd.Series) -> float:
    try:
        return float(metrics.roc_auc_score(y_true, y_pred))
    except ValueError:
        return np.nan


def compute_subgroup_auc(df: pd.DataFrame, subgroup: str, label: str, pred_col: str) -> float:
    subgroup_examples = df[df[subgroup]]
    return compute_auc(subgroup_examples[label], subgroup_examples[pred_col])


def compute_bpsn_auc(df: pd.DataFrame, subgroup: str, label: str, pred_col: str) -> float:
    subgroup_negative_examples = df[df[subgroup] & ~df[label]]
    non_subgroup_positive_examples = df[~df[subgroup] & df[label]]
    examples = pd.concat([subgroup_negative_examples, non_subgroup_positive_examples])
    return compute_auc(examples[label], examples[pred_col])


def compute_bnsp_auc(df: pd.DataFrame, subgroup: str, label: str, pred_col: str) -> float:
    subgroup_positive_examples = df[df[subgroup] & df[label]]
    non_subgroup_negative_examples = df[~df[subgroup] & ~df[label]]
    examples = pd.concat([subgroup_positive_examples, non_subgroup_negative_examples])
    return compute_auc(examples[label], examples[pred_col])


def normalized_mwu(data1: pd.DataFrame, data2: pd.DataFrame, pred_col: str) -> float:
    scores_1 = data1[pred_col]
    scores_2 = data2[pred_col]
    n1 = len(scores_1)
    n2 = len(scores_2)
    if n1 == 0 or n2 == 0:
        return np.nan
    u, _ = stats.mannwhitneyu(scores_1, scores_2, alternative="less")
    return float(u / (n1 * n2))


def compute_negative_aeg(df: pd.DataFrame, subgroup: str, label: str, pred_col: str) -> float:
    mwu = normalized_mwu(df[~df[subgroup] & ~df[label]], df[df[subgroup] & ~df[label]], pred_col)
    # (the seed also checks `mwu is None`, which never happens: normalized_mwu returns NaN)
    return 0.5 - mwu


def compute_positive_aeg(df: pd.DataFrame, subgroup: str, label: str, pred_col: str) -> float:
    mwu = normalized_mwu(df[~df[subgroup] & df[label]], df[df[subgroup] & df[label]], pred_col)
    return 0.5 - mwu


def compute_bias_metrics_for_subgroup_and_model(
    dataset: pd.DataFrame, subgroup: str, label: str, pred_col: str
) -> dict[str, Any]:
    return {
        SUBGROUP: subgroup,
        SUBGROUP_SIZE: dataset[subgroup].sum(),
        SUBGROUP_AUC: compute_subgroup_auc(dataset, subgroup, label, pred_col),
        BPSN_AUC: compute_bpsn_auc(dataset, subgroup, label, pred_col),
        BNSP_AUC: compute_bnsp_auc(dataset, subgroup, label, pred_col),
        NEGATIVE_AEG: compute_negative_aeg(dataset, subgroup, label, pred_col),
        POSITIVE_AEG: compute_positive_aeg(dataset, subgroup, label, pred_col),
    }


def _div(a: float, b: float) -> float:
    return a / b if b else math.nan


def compute_binary_metrics(df: pd.DataFrame, subgroup: str, label: str, pred_col: str) -> dict[str, float]:
    """The binary metrics of one group against its background, with pandas filters."""

    def rates(d: pd.DataFrame) -> dict[str, float]:
        positives, negatives, selected = d[d[label]], d[~d[label]], d[d[pred_col]]
        return {
            "n": float(len(d)),
            "sr": _div(float(d[pred_col].sum()), len(d)),
            "tpr": _div(float(positives[pred_col].sum()), len(positives)),
            "fpr": _div(float(negatives[pred_col].sum()), len(negatives)),
            "fnr": _div(float((~positives[pred_col]).sum()), len(positives)),
            "ppv": _div(float(selected[label].sum()), len(selected)),
            "acc": _div(float((d[pred_col] == d[label]).sum()), len(d)),
            "mean_score": float(d["score"].mean()),
        }

    g = rates(df[df[subgroup]])
    r = rates(df[~df[subgroup]])
    d_tpr, d_fpr = g["tpr"] - r["tpr"], g["fpr"] - r["fpr"]
    pooled_sd = math.sqrt(
        ((g["n"] - 1) * g["sr"] * (1 - g["sr"]) + (r["n"] - 1) * r["sr"] * (1 - r["sr"]))
        / (g["n"] + r["n"] - 2)
    )
    p = (g["sr"] * g["n"] + r["sr"] * r["n"]) / (g["n"] + r["n"])
    di = _div(g["sr"], r["sr"])
    return {
        "selection_rate": g["sr"],
        "true_positive_rate": g["tpr"],
        "false_positive_rate": g["fpr"],
        "false_negative_rate": g["fnr"],
        "positive_predictive_value": g["ppv"],
        "accuracy": g["acc"],
        "statistical_parity_difference": g["sr"] - r["sr"],
        "disparate_impact": di,
        "four_fifths_ratio": min(di, 1 / di) if di > 0 else math.nan,
        "standardized_selection_rate_difference": _div(g["sr"] - r["sr"], pooled_sd),
        "two_sd_rule": _div(g["sr"] - r["sr"], math.sqrt(p * (1 - p) * (1 / g["n"] + 1 / r["n"]))),
        "equal_opportunity_difference": d_tpr,
        "false_positive_rate_difference": d_fpr,
        "false_negative_rate_difference": g["fnr"] - r["fnr"],
        "average_odds_difference": (d_tpr + d_fpr) / 2,
        "average_abs_odds_difference": (abs(d_tpr) + abs(d_fpr)) / 2,
        "equalized_odds_difference": max(abs(d_tpr), abs(d_fpr)),
        "accuracy_difference": g["acc"] - r["acc"],
        "precision_ratio": _div(g["ppv"], r["ppv"]),
        "recall_ratio": _div(g["tpr"], r["tpr"]),
        "standardized_mean_difference": (g["mean_score"] - r["mean_score"]) / float(df["score"].std()),
    }


def power_mean(series: pd.Series, p: float) -> float:
    total = sum(np.power(series, p))
    return float(np.power(total / len(series), 1 / p))


@dataclass
class BaselineRun:
    values: dict[tuple[str, str], float]
    model: dict[str, float]
    setup_seconds: float
    group_seconds: list[float]
    model_seconds: float


def run_baseline(w: Window, measured: Sequence[str], tick: Callable[[], None]) -> BaselineRun:
    t0 = time.perf_counter()
    # the seed's dataset: one boolean column per identity (Jigsaw's ">= 0.5"), label and score
    df = pd.DataFrame({"score": w.score, "label": w.label})
    for name, col in w.identity.items():
        df[name] = col >= 0.5
    df["pred"] = df["score"] >= THRESHOLD
    setup = time.perf_counter() - t0
    values: dict[tuple[str, str], float] = {}
    seconds = []
    rows = []
    for name in measured:
        t = time.perf_counter()
        ranking = compute_bias_metrics_for_subgroup_and_model(df, name, "label", "score")
        binary = compute_binary_metrics(df, name, "label", "pred")
        seconds.append(time.perf_counter() - t)
        rows.append(ranking)
        values.update({(name, m): float(ranking[m]) for m in RANKING})
        values.update({(name, m): v for m, v in binary.items()})
        tick()
    t = time.perf_counter()
    model = {"overall_auc": compute_auc(df["label"], df["score"])}
    if len(measured) == len(w.identity):  # seed 001's final score needs every group
        bias = pd.DataFrame(rows)
        model["jigsaw_final_score"] = 0.25 * model["overall_auc"] + 0.25 * sum(
            power_mean(bias[m], -5) for m in (SUBGROUP_AUC, BPSN_AUC, BNSP_AUC)
        )
    return BaselineRun(values, model, setup, seconds, time.perf_counter() - t)


# --- measuring -----------------------------------------------------------------------------------


def rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_name() -> str:
    """The CPU as ``/proc/cpuinfo`` names it, with its family and model (they tell Zen 3 from Zen 4)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown"
    first: dict[str, str] = {}
    for key, _, value in (line.partition(":") for line in lines):
        first.setdefault(key.strip(), value.strip())
    return f"{first.get('model name', '?')} (family {first.get('cpu family', '?')}, model {first.get('model', '?')})"


def sort_seconds(rows: int, *, seed: int, repeat: int = 3) -> float:
    """Best time of numpy's sort of ``rows`` random 64-bit words: the table build's sort on this machine."""
    words = np.random.default_rng(seed).integers(0, 2**63, rows, dtype=np.uint64)
    best = math.inf
    for _ in range(repeat):
        copy = words.copy()
        t = time.perf_counter()
        copy.sort()
        best = min(best, time.perf_counter() - t)
    return best


def traced_peak_mb(func: Callable[[], object]) -> float:
    """Peak of memory allocated by ``func`` (numpy buffers included) above what was live before."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        func()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return (peak - before) / 2**20


def compare(run: FairwatchRun, base: BaselineRun) -> tuple[int, float, list[str]]:
    """Number of shared values, their largest absolute difference, and the failures."""
    ours = {(v.group, v.metric): v.value for v in run.report.values}
    ours_model = {m.metric: m.value for m in run.report.model if m.attribute in ("", "identity")}
    pairs = [(key, ours.get(key, math.nan), theirs) for key, theirs in base.values.items()]
    pairs += [(("(model)", k), ours_model.get(k, math.nan), v) for k, v in base.model.items()]
    worst, failures = 0.0, []
    for key, a, b in pairs:
        if math.isnan(a) and math.isnan(b):
            continue
        diff = abs(a - b) if not (math.isnan(a) or math.isnan(b)) else math.inf
        worst = max(worst, diff)
        if not diff <= TOLERANCE:
            failures.append(f"{key[0]} {key[1]}: fairwatch {a!r} baseline {b!r}")
    return len(pairs), worst, failures


@contextmanager
def progress(console: Any, text: str, total: int) -> Iterator[Callable[[], None]]:
    """A progress bar on stderr (rich) or nothing; yields the function that advances it."""
    if console is None:
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task(text, total=total)
        yield lambda: bar.advance(task)


# --- output -----------------------------------------------------------------------------------


def _fmt(x: float, digits: int = 4) -> str:
    return "nan" if math.isnan(x) else f"{x:.{digits}f}"


def _with_ci(v: mc.MetricValue) -> str:
    return f"{_fmt(v.value, 3)} [{_fmt(v.ci_lower, 3)}, {_fmt(v.ci_upper, 3)}]"


def print_tables(out: Any, run: FairwatchRun, summary: dict[str, Any], notes: list[str], show: int) -> None:
    by_key = {(v.group, v.metric): v for v in run.report.values}
    groups = sorted({v.group for v in run.report.values}, key=lambda g: by_key[(g, "selection_rate")].n_group)
    header = ["group", "size", "subgroup AUC", "BPSN AUC", "BNSP AUC", "neg AEG", "pos AEG", "SPD", "DI"]
    header.append("violations")
    violations: dict[str, list[str]] = {g: [] for g in groups}
    for v in run.report.values:
        if v.state == "violation":
            violations[v.group].append(v.metric)
    rows = []
    for g in groups[:show]:
        row = [g, f"{int(by_key[(g, 'selection_rate')].n_group):,}"]
        row += [_with_ci(by_key[(g, m)]) for m in RANKING[:3]]
        row += [_fmt(by_key[(g, m)].value) for m in RANKING[3:]]
        row += [
            _with_ci(by_key[(g, "statistical_parity_difference")]),
            _with_ci(by_key[(g, "disparate_impact")]),
            str(len(violations[g])),
        ]
        rows.append(row)
    model = {m.metric: m.value for m in run.report.model if m.attribute in ("", "identity")}
    timing = [
        ("rows / groups / distinct scores", f"{summary['rows']:,} / {summary['groups']} / {run.n_scores:,}"),
        (
            f"fairwatch, median of {summary['fairwatch_runs']} runs",
            f"{summary['fairwatch_seconds']:.3f} s  (table build {summary['fairwatch_table_seconds']:.3f} s"
            f" + evaluate {summary['fairwatch_evaluate_seconds']:.3f} s)",
        ),
        (summary["baseline_label"], f"{summary['baseline_seconds']:.2f} s"),
        ("speedup", f"{summary['speedup']:.1f}x"),
        (
            "agreement",
            f"{summary['values_compared']} values, max |diff| {summary['max_abs_diff']:.2e}"
            f" ({'OK' if summary['agreement_ok'] else 'FAILED'}, tolerance {TOLERANCE:g})",
        ),
        (
            "overall AUC / final score",
            f"{_fmt(model['overall_auc'], 6)} / {_fmt(model['jigsaw_final_score'], 6)}",
        ),
        (
            f"numpy's sort of {summary['rows']:,} random 64-bit words (this machine)",
            f"{summary['sort_seconds']:.3f} s",
        ),
        ("peak RSS, whole process", f"{summary['peak_rss_mb']:.0f} MB"),
        (
            "peak RSS after data + fairwatch (before the baseline)",
            f"{summary['fairwatch_peak_rss_mb']:.0f} MB",
        ),
        ("RSS of the generated data", f"{summary['data_rss_mb']:.0f} MB"),
        (
            "fairwatch: peak allocated above its inputs (tracemalloc)",
            f"{summary['fairwatch_alloc_peak_mb']:.0f} MB",
        ),
        (
            "baseline: peak allocated, DataFrame + one group (tracemalloc)",
            f"{summary['baseline_alloc_peak_mb']:.0f} MB",
        ),
    ]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print("\t".join(header), file=out)
        for row in rows:
            print("\t".join(row), file=out)
        for what, value in timing:
            print(f"{what}: {value}", file=out)
        for note in notes:
            print(f"note: {note}", file=out)
        return
    console = Console(file=out, width=max(200, Console(file=out).width))
    table = Table(
        title=f"fairwatch per-group table: identity vs background, 95% intervals, {len(groups)} groups"
        " (violations: metrics whose whole interval is outside the fair range)"
    )
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    if len(groups) > show:
        table.caption = f"... and {len(groups) - show} more groups (--show)"
    console.print(table)
    t2 = Table(title="timing, agreement and memory", show_header=False)
    t2.add_column("what")
    t2.add_column("value", justify="right")
    for what, value in timing:
        t2.add_row(what, value)
    console.print(t2)
    for note in notes:
        console.print(f"note: {note}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=JIGSAW_ROWS)
    parser.add_argument("--groups", type=int, default=len(IDENTITIES))
    parser.add_argument(
        "--decimals",
        type=lambda v: None if v.lower() == "none" else int(v),
        default=DECIMALS,
        help=f"round the scores to this many decimals (default {DECIMALS}); 'none': raw float32 outputs",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=5, help="timed fairwatch runs (after one warm-up)")
    parser.add_argument("--baseline-repeat", type=int, default=None, help="default: 3 if small, else 1")
    parser.add_argument("--baseline-groups", type=int, default=None, help="default: all up to 10, else 10")
    parser.add_argument("--show", type=int, default=20, help="groups shown in the table")
    args = parser.parse_args(argv)
    if args.rows < 100 or args.groups < 1:
        parser.error("need --rows >= 100 and --groups >= 1")
    measured_groups = args.baseline_groups or (args.groups if args.groups <= 10 else 10)
    measured_groups = min(measured_groups, args.groups)
    baseline_repeat = args.baseline_repeat or (3 if args.rows * measured_groups <= 2e7 else 1)

    err = None
    try:
        from rich.console import Console

        err = Console(stderr=True)
    except ImportError:
        pass
    notes: list[str] = []

    with progress(err, "generating the window", args.groups) as tick:
        w = make_window(args.rows, args.groups, seed=args.seed, decimals=args.decimals, tick=tick)
    data_rss = rss_mb()

    # fairwatch: one warm-up run, then the timed ones
    with progress(err, "fairwatch", args.repeat + 1) as tick:
        runs = []
        for i in range(args.repeat + 1):
            run = run_fairwatch(w)
            if i:
                runs.append(run)
            tick()
    fairwatch_rss = rss_mb()
    fw_alloc = traced_peak_mb(lambda: run_fairwatch(w))
    sort_time = sort_seconds(w.rows, seed=args.seed)

    names = list(w.identity)
    measured = names[:measured_groups]
    base_runs = []
    with progress(err, "baseline (seed 000 approach)", baseline_repeat * len(measured)) as tick:
        for _ in range(baseline_repeat):
            base_runs.append(run_baseline(w, measured, tick))
    base_alloc = traced_peak_mb(lambda: run_baseline(w, measured[:1], lambda: None))

    per_group = statistics.median(statistics.mean(b.group_seconds) for b in base_runs)
    fixed = statistics.median(b.setup_seconds + b.model_seconds for b in base_runs)
    if len(measured) < len(names):
        baseline_seconds = fixed + per_group * len(names)
        label = f"baseline, extrapolated from {len(measured)} of {len(names)} groups"
        notes.append(
            f"the baseline ran on {len(measured)} of {len(names)} groups ({baseline_repeat} run(s)): its time is"
            f" the measured fixed part ({fixed:.2f} s: DataFrame, overall AUC) + {len(names)} x the measured"
            f" mean per group ({per_group:.2f} s); values are compared on the measured groups"
        )
    else:
        baseline_seconds = statistics.median(
            b.setup_seconds + sum(b.group_seconds) + b.model_seconds for b in base_runs
        )
        label = f"baseline, median of {baseline_repeat} run(s)"
    n_values, worst, failures = compare(runs[-1], base_runs[-1])
    fw_seconds = statistics.median(r.seconds for r in runs)
    summary: dict[str, Any] = {
        "rows": w.rows,
        "groups": len(names),
        "fairwatch_seconds": round(fw_seconds, 4),
        "baseline_seconds": round(baseline_seconds, 3),
        "speedup": round(baseline_seconds / fw_seconds, 1),
        "max_abs_diff": float(f"{worst:.3g}"),
        "peak_rss_mb": round(rss_mb(), 1),
        "fairwatch_table_seconds": round(statistics.median(r.table_seconds for r in runs), 4),
        "fairwatch_evaluate_seconds": round(statistics.median(r.evaluate_seconds for r in runs), 4),
        "fairwatch_runs": len(runs),
        "fairwatch_min_seconds": round(min(r.seconds for r in runs), 4),
        "baseline_runs": baseline_repeat,
        "baseline_groups_measured": len(measured),
        "baseline_extrapolated": len(measured) < len(names),
        "baseline_label": label,
        "distinct_scores": runs[-1].n_scores,
        "decimals": args.decimals,
        "values_compared": n_values,
        "agreement_ok": not failures,
        "fairwatch_peak_rss_mb": round(fairwatch_rss, 1),
        "data_rss_mb": round(data_rss, 1),
        "fairwatch_alloc_peak_mb": round(fw_alloc, 1),
        "baseline_alloc_peak_mb": round(base_alloc, 1),
        "sort_seconds": round(sort_time, 4),
        "cpu": cpu_name(),
        "cpus": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    if summary["load_average_1min"] > 0.5 * (os.cpu_count() or 1):
        notes.append(f"load average {summary['load_average_1min']}: other processes shared the CPUs")
    print_tables(sys.stdout, runs[-1], summary, notes, args.show)
    for failure in failures[:20]:
        print(f"MISMATCH {failure}")
    print(json.dumps({k: v for k, v in summary.items() if k != "baseline_label"}), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
