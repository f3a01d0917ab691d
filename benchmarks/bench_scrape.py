"""Scrape latency of ``/metrics`` for a snapshot of about 10,000 series, over real HTTP.

Builds one model with two windows, ``N_GROUPS`` groups and ``METRICS`` group metrics (each
value exports 7 series: the value and six companions, plus 3 size series per group),
serves it with :func:`monitor.http.serve` on a free loopback port and times ``N_SCRAPES``
scrapes with urllib after a warm-up. The first scrape of a snapshot renders the exposition
(the cold figure); later scrapes of the same snapshot are answered from the render cache.

Run: ``python benchmarks/bench_scrape.py``. The last line is one JSON object.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

from prometheus_client import CollectorRegistry, generate_latest

from metrics_core import STATES, MetricValue, ModelValue
from monitor.exporter import SnapshotCollector
from monitor.http import make_app, serve
from monitor.results import GroupStats, ModelEvaluation, WindowResult
from monitor.snapshot import ModelStatus, Snapshot

SEED = 20260301
N_GROUPS = 69
WINDOWS = ("1h", "24h")
METRICS = (
    "disparate_impact",
    "statistical_parity_difference",
    "equal_opportunity_difference",
    "false_positive_rate_difference",
    "subgroup_auc",
    "bpsn_auc",
    "bnsp_auc",
    "negative_aeg",
    "positive_aeg",
    "selection_rate",
)
N_WARMUP = 20
N_SCRAPES = 200
TARGET_MEDIAN_MS = 10.0
T0 = datetime(2026, 3, 1, tzinfo=UTC)

# Loopback: never through an HTTP(S)_PROXY from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def build_snapshot(rng: random.Random) -> Snapshot:
    windows = []
    for name in WINDOWS:
        values, groups = [], []
        for g in range(N_GROUPS):
            group = f"group_{g:03d}"
            n = rng.randint(50, 5000)
            groups.append(GroupStats("identity", group, "rest", n, int(n * rng.uniform(0.5, 1.0))))
            for metric in METRICS:
                values.append(_value(rng, metric, group, n))
        windows.append(
            WindowResult(
                window=name,
                start=T0 - timedelta(hours=1),
                end=T0,
                label_start=T0 - timedelta(hours=1),
                label_end=T0,
                values=tuple(values),
                model_values=(ModelValue("overall_auc", 0.93, ci_lower=0.92, ci_upper=0.94),),
                groups=tuple(groups),
                n_rows=200_000,
                n_labeled=150_000,
            )
        )
    evaluation = ModelEvaluation("toxicity", T0, 1.5, tuple(windows), rows_read=200_000)
    status = ModelStatus("toxicity", 60.0, last_evaluation=evaluation, last_success=T0, last_attempt=T0)
    return Snapshot(models=MappingProxyType({"toxicity": status}), created_at=T0)


def _value(rng: random.Random, metric: str, group: str, n: int) -> MetricValue:
    state = rng.choice(STATES)
    value = math.nan if state == "insufficient_data" else rng.uniform(0.5, 1.2)
    half_width = rng.uniform(0.01, 0.1)
    return MetricValue(
        attribute="identity",
        group=group,
        reference="rest",
        metric=metric,
        value=value,
        ci_lower=value - half_width,
        ci_upper=value + half_width,
        fair_min=0.8,
        fair_max=math.inf if metric.endswith("_auc") else 1.25,
        state=state,
        n_group=n,
        n_reference=100_000,
        support=n,
    )


def scrape(url: str) -> tuple[float, int]:
    """Milliseconds for one full GET, and the body size."""
    start = time.perf_counter()
    with _OPENER.open(url, timeout=30) as answer:
        body = answer.read()
    return (time.perf_counter() - start) * 1000, len(body)


def percentile(sorted_ms: list[float], q: float) -> float:
    return sorted_ms[min(len(sorted_ms) - 1, math.ceil(q * len(sorted_ms)) - 1)]


def main() -> None:
    snapshot = build_snapshot(random.Random(SEED))
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: snapshot, version="bench"))
    exposition = generate_latest(registry).decode()
    series = sum(1 for line in exposition.splitlines() if line and not line.startswith("#"))

    server = serve(
        make_app(registry=registry, get_snapshot=lambda: snapshot, ready=lambda: True), "127.0.0.1", 0
    )
    try:
        url = f"{server.url}/metrics"
        cold_ms, _ = scrape(url)  # renders and caches this snapshot's text
        for _ in range(N_WARMUP):
            scrape(url)
        timings = [scrape(url) for _ in range(N_SCRAPES)]
    finally:
        server.shutdown()

    ms = sorted(t for t, _ in timings)
    size = timings[-1][1]
    median, p90, p99 = statistics.median(ms), percentile(ms, 0.90), percentile(ms, 0.99)
    rows = [
        ("series", f"{series}"),
        ("body bytes", f"{size}"),
        ("scrapes", f"{N_SCRAPES} (after {N_WARMUP} warm-up)"),
        ("cold scrape (render)", f"{cold_ms:.2f} ms"),
        ("median", f"{median:.2f} ms"),
        ("p90", f"{p90:.2f} ms"),
        ("p99", f"{p99:.2f} ms"),
        ("max", f"{ms[-1]:.2f} ms"),
        ("target median", f"< {TARGET_MEDIAN_MS:g} ms: {'met' if median < TARGET_MEDIAN_MS else 'MISSED'}"),
    ]
    width = max(len(name) for name, _ in rows)
    print("fairwatch /metrics scrape benchmark")
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    print(
        json.dumps(
            {
                "series": series,
                "scrape_median_ms": round(median, 3),
                "scrape_p90_ms": round(p90, 3),
                "scrape_p99_ms": round(p99, 3),
                "cold_scrape_ms": round(cold_ms, 3),
                "bytes": size,
            }
        )
    )


if __name__ == "__main__":
    main()
