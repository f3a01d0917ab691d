"""Fairness before the labels: how ``nowcast`` estimates hold up, in simulations anyone can rerun.

A loan model logs calibrated probabilities ``p`` (its scores) for two groups, ``a`` and ``b``; labels are
``Bernoulli(p)`` and arrive ``--delay-days`` (7) after the prediction. fairwatch judges a 1-day window
with ``label_delay: 7d``: the realised equal opportunity difference is last week's, and with
``nowcast`` the same difference is also estimated for today's window from today's scores. Every run is
the real evaluator (``Evaluator.evaluate`` over an in-memory log), fixed seeds; the last line is one
JSON object.

1. **Coverage on fair models.** For group b at 1%, 5%, 10% and 20% of the traffic: the share of
   estimates whose interval covers the value today's labels give once they are in (the same window
   evaluated with its labels), over ``--reps`` days; and the price: the estimate's interval width
   over the width of the realised interval of the same window once its labels are in.
2. **Time to detection.** Group b's probabilities fall from U(0, 1) to U(0, 0.6) at a known
   moment (its scores stay calibrated; its true-positive rate at 0.5 falls from 0.75 to 0.31). The
   service evaluates every ``--every`` hours: the first evaluation whose estimate is a violation,
   and the first whose realised value (labels 7 days late) is.
3. **A miscalibrated group.** b's labels follow ``p^3``, not ``p`` (its scores overstate its risk). With
   one map for every row (``group_map_rows: 0``): estimated violations with the calibration check, what
   the same estimates would have said without it (the check's tolerance opened to 0.99), and what the
   labels say a week later. With b's own recalibration (the default, 2,000 labelled rows a day): its
   estimates' states, and how often their interval covers the value the labels give later.
4. **A small label window.** b (20%) calibrated on ``--labelled-rows`` (1,500) labelled rows: coverage
   and width of the AUCs' and error-rate gaps' estimates with the map's error in their intervals
   (``resamples: 20``) and without (``resamples: 0``), and the seconds an evaluation takes.

    python benchmarks/nowcast.py [--reps 40] [--per-day 20000] [--every 2] [--labelled-rows 1500]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_shapes import one_row_table

from monitor.cli.terminal import print_table
from monitor.config import settings_from_dict
from monitor.evaluation.evaluators import build_evaluators
from monitor.sources import MemorySource

START = datetime(2026, 1, 1, tzinfo=UTC)
METRIC = "equal_opportunity_difference"


def day_of_log(
    rng: np.random.Generator,
    day: datetime,
    rows: int,
    share: float,
    *,
    collapse_from: datetime | None = None,
    miscalibrated: bool = False,
) -> pd.DataFrame:
    """One day of predictions: p ~ U(0, 1) (b's U(0, 0.6) after ``collapse_from``), score = p, label ~
    Bernoulli(p) (b's Bernoulli(p^3) when ``miscalibrated``)."""
    ts = day + pd.to_timedelta(np.sort(rng.uniform(0, 86400, rows)), unit="s")
    group = np.where(rng.random(rows) < share, "b", "a")
    p = rng.uniform(0, 1, rows)
    if collapse_from is not None:
        after = np.asarray(ts >= collapse_from) & (group == "b")
        p = np.where(after, rng.uniform(0, 0.6, rows), p)
    truth = np.where(group == "b", p**3, p) if miscalibrated else p
    label = (rng.random(rows) < truth).astype(float)
    return pd.DataFrame(
        {"id": np.arange(rows), "ts": ts, "score": np.round(p, 4), "label": label, "group": group}
    )


def model(
    delay_days: float, tolerance: float = 0.1, nowcast: bool = True, group_map_rows: int = 1000
) -> dict[str, Any]:
    return {
        "name": "loans",
        "source": {"kind": "memory", "name": "log"},
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [{"attribute": "group", "kind": "categorical", "column": "group", "reference": "a"}],
        "windows": [{"name": "1d", "length": "1d"}],
        "label_delay": f"{delay_days * 24:g}h",
        "metrics": [METRIC],
        "nowcast": {"enabled": nowcast, "tolerance": tolerance, "group_map_rows": group_map_rows},
        "panes": {"enabled": False},
    }


def evaluate(config: dict[str, Any], log: pd.DataFrame, at: datetime) -> Any:
    source = MemorySource(log, timestamp_column="ts", name="log")
    with build_evaluators(settings_from_dict({"models": [config]}), memory_sources={"log": source}) as built:
        (window,) = built["loans"].evaluate(at).windows
    return window


def b_value(values: Any) -> Any:
    return next((v for v in values if v.metric == METRIC and v.group == "b"), None)


def pending(log: pd.DataFrame, at: datetime, delay: timedelta) -> pd.DataFrame:
    """The log as it is at ``at``: rows younger than the delay have no label yet."""
    return log.assign(label=log["label"].where(log["ts"] < at - delay))


def coverage(reps: int, per_day: int, delay_days: float) -> list[dict[str, Any]]:
    delay = timedelta(days=delay_days)
    out = []
    for share in (0.01, 0.05, 0.10, 0.20):
        covered, widths, ratios, states = 0, [], [], []
        for rep in range(reps):
            rng = np.random.default_rng([rep, int(share * 1000)])
            labelled_day = START
            today = START + delay
            log = pd.concat(
                [day_of_log(rng, labelled_day, per_day, share), day_of_log(rng, today, per_day, share)]
            )
            at = today + timedelta(days=1)
            estimate = b_value(evaluate(model(delay_days), pending(log, at, delay), at).estimates)
            truth = b_value(evaluate(model(0, nowcast=False), log, at).values)
            if (
                estimate is None
                or truth is None
                or not np.isfinite(estimate.ci_lower)
                or not np.isfinite(truth.value)
            ):
                continue
            covered += estimate.ci_lower <= truth.value <= estimate.ci_upper
            widths.append(estimate.ci_upper - estimate.ci_lower)
            ratios.append((estimate.ci_upper - estimate.ci_lower) / (truth.ci_upper - truth.ci_lower))
            states.append(estimate.state)
        n = len(widths)
        out.append(
            {
                "share": share,
                "days": n,
                "coverage": round(covered / n, 3) if n else None,
                "width_median": round(statistics.median(widths), 3) if n else None,
                "width_vs_labels": round(statistics.median(ratios), 2) if n else None,
                "false_violations": states.count("violation"),
            }
        )
    return out


def small_label_window(reps: int, labelled: int, today: int) -> list[dict[str, Any]]:
    """The estimates of a day's AUCs and error-rate gaps for b (20% of the traffic) calibrated on only
    ``labelled`` labelled rows, with the map's error in the interval (``resamples: 20``, the default)
    and without (``resamples: 0``): coverage of the later value, width, seconds per evaluation."""
    delay = timedelta(days=7)
    metrics = ["subgroup_auc", "bpsn_auc", "false_positive_rate_difference", METRIC]
    out = []
    for resamples in (20, 0):
        covered, widths, seconds = Counter[str](), {m: [] for m in metrics}, []
        days = 0
        for rep in range(reps):
            rng = np.random.default_rng([rep, 5])
            today_start = START + delay
            log = pd.concat([day_of_log(rng, START, labelled, 0.2), day_of_log(rng, today_start, today, 0.2)])
            at = today_start + timedelta(days=1)
            config = model(delay.days) | {"metrics": metrics}
            config["nowcast"] = {"enabled": True, "resamples": resamples}
            t0 = time.perf_counter()
            estimates = evaluate(config, pending(log, at, delay), at).estimates
            seconds.append(time.perf_counter() - t0)
            truths = evaluate(model(0, nowcast=False) | {"metrics": metrics}, log, at).values
            found = {v.metric: v for v in estimates if v.group == "b" and np.isfinite(v.ci_lower)}
            if len(found) < len(metrics):
                continue  # b's calibration failed its check: no estimate to cover anything
            days += 1
            for v in truths:
                if v.group == "b" and v.metric in found:
                    e = found[v.metric]
                    covered[v.metric] += e.ci_lower <= v.value <= e.ci_upper
                    widths[v.metric].append(e.ci_upper - e.ci_lower)
        for m in metrics:
            out.append(
                {
                    "resamples": resamples,
                    "metric": m,
                    "days": days,
                    "coverage": round(covered[m] / days, 3) if days else None,
                    "width_median": round(statistics.median(widths[m]), 4) if days else None,
                    "seconds_per_evaluation": round(statistics.median(seconds), 3),
                }
            )
    return out


def detection(per_day: int, delay_days: float, every: float) -> dict[str, Any]:
    """Hours from the collapse to the first violation: estimated, and realised."""
    delay = timedelta(days=delay_days)
    rng = np.random.default_rng(99)
    onset = START + timedelta(days=delay_days + 2, hours=9)
    days = int(2 * delay_days) + 6  # the label window passes the onset a delay after it
    log = pd.concat(
        [day_of_log(rng, START + timedelta(days=d), per_day, 0.10, collapse_from=onset) for d in range(days)],
        ignore_index=True,
    )
    found: dict[str, float | None] = {"estimate": None, "labels": None}
    step = timedelta(hours=every)
    at = onset + step
    while at <= START + timedelta(days=days) and None in found.values():
        window = evaluate(model(delay_days), pending(log, at, delay), at)
        hours = (at - onset) / timedelta(hours=1)
        estimate, realised = b_value(window.estimates), b_value(window.values)
        if found["estimate"] is None and estimate is not None and estimate.state == "violation":
            found["estimate"] = hours
        if found["labels"] is None and realised is not None and realised.state == "violation":
            found["labels"] = hours
        # the realised value cannot move before the label window reaches the onset: skip ahead
        if found["estimate"] is not None and found["labels"] is None and at < onset + delay:
            at = onset + delay
        at += step
    return {"hours_to_estimated_violation": found["estimate"], "hours_to_realised_violation": found["labels"]}


def miscalibration(reps: int, per_day: int, delay_days: float) -> dict[str, Any]:
    """b's labels follow p^3: its scores overstate its risk, its true-positive rate at 0.5 is 0.94
    against a's 0.75 - a real violation the labels show a week later, which one calibration for every
    row cannot see (at the same score a and b get the same probability)."""
    delay = timedelta(days=delay_days)
    failed_checks, violations, unchecked = 0, 0, Counter[str]()
    truths, own_states, own_covered = Counter[str](), Counter[str](), 0
    for rep in range(reps):
        rng = np.random.default_rng([7, rep])
        today = START + delay
        log = pd.concat(
            [
                day_of_log(rng, START, per_day, 0.10, miscalibrated=True),
                day_of_log(rng, today, per_day, 0.10, miscalibrated=True),
            ]
        )
        at = today + timedelta(days=1)
        with_check = evaluate(model(delay_days, group_map_rows=0), pending(log, at, delay), at)
        without = evaluate(model(delay_days, tolerance=0.99, group_map_rows=0), pending(log, at, delay), at)
        own_map = evaluate(model(delay_days), pending(log, at, delay), at)
        truth = b_value(evaluate(model(0, nowcast=False), log, at).values)
        failed_checks += any(c.group == "b" and not c.passed for c in with_check.calibration)
        estimate, loose = b_value(with_check.estimates), b_value(without.estimates)
        violations += estimate is not None and estimate.state == "violation"
        unchecked[loose.state if loose is not None else "none"] += 1
        truths[truth.state if truth is not None else "none"] += 1
        own = b_value(own_map.estimates)
        own_states[own.state if own is not None else "none"] += 1
        own_covered += own is not None and truth is not None and own.ci_lower <= truth.value <= own.ci_upper
    return {
        "days": reps,
        "checks_failed": failed_checks,
        "estimated_violations": violations,
        "estimates_without_the_check": dict(unchecked),
        "the_labels_later_say": dict(truths),
        "with_its_own_map": dict(own_states),
        "own_map_covers_the_later_value": own_covered,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=40, help="days simulated per group size")
    parser.add_argument("--per-day", type=int, default=20_000, help="predictions a day")
    parser.add_argument("--delay-days", type=float, default=7.0, help="how late the labels are")
    parser.add_argument("--every", type=float, default=2.0, help="hours between two evaluations")
    parser.add_argument(
        "--labelled-rows", type=int, default=1500, help="labelled rows of the small label window's day"
    )
    args = parser.parse_args()
    console = Console(stderr=True)
    t0 = time.perf_counter()
    with console.status("coverage on fair models"):
        covered = coverage(args.reps, args.per_day, args.delay_days)
    with console.status("time to detection"):
        detected = detection(args.per_day, args.delay_days, args.every)
    with console.status("a miscalibrated group"):
        miscalibrated = miscalibration(args.reps, args.per_day, args.delay_days)
    with console.status(f"calibrated on {args.labelled_rows:,} labelled rows"):
        small = small_label_window(args.reps, args.labelled_rows, args.per_day)
    load = os.getloadavg()
    table = Table(title=f"nowcast: {args.per_day:,} predictions a day, labels {args.delay_days:g} days late")
    for column in ("b's share", "days", "coverage", "interval width", "vs labels'", "false violations"):
        table.add_column(column, justify="right")
    for row in covered:
        table.add_row(
            f"{row['share']:.0%}",
            str(row["days"]),
            f"{row['coverage']:.1%}" if row["coverage"] is not None else "-",
            str(row["width_median"]),
            f"{row['width_vs_labels']}x",
            str(row["false_violations"]),
        )
    print_table(Console(), table)
    print_table(Console(), one_row_table("time to detection (hours after the collapse)", detected))
    print_table(Console(), one_row_table("a miscalibrated group (b's labels follow p^3)", miscalibrated))
    table = Table(title=f"b (20%) calibrated on {args.labelled_rows:,} labelled rows (isotonic)")
    for column in ("resamples", "metric", "days", "coverage", "interval width", "s / evaluation"):
        table.add_column(column, justify="right")
    for row in small:
        table.add_row(
            str(row["resamples"]),
            row["metric"],
            str(row["days"]),
            f"{row['coverage']:.1%}" if row["coverage"] is not None else "-",
            str(row["width_median"]),
            str(row["seconds_per_evaluation"]),
        )
    print_table(Console(), table)
    summary = {
        "coverage": covered,
        "detection": detected,
        "miscalibration": miscalibrated,
        "small_label_window": small,
        "per_day": args.per_day,
        "delay_days": args.delay_days,
        "seconds": round(time.perf_counter() - t0, 1),
        "load": [round(x, 2) for x in load],
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
