"""What the live view costs to draw: one model's page with many series and a full history.

Builds a :class:`monitor.service.history.History` of ``--evaluations`` evaluations (default 720, the
``server.history`` default) of a model with ``--groups`` groups x ``--metrics`` judged metrics in
one window (random-walk values with intervals, some undefined), then times what a browser's poll
costs the service - the whole page, the ``<main>`` fragment, ``/api/v1/history`` as JSON - and
reports their sizes and the history's memory (tracemalloc). Fixed seed. The baseline is the
smallest page (one group, one metric) drawn in the same run. The last line is one JSON object.

    python benchmarks/bench_live_view.py [--groups 12] [--metrics 20] [--evaluations 720]
"""

from __future__ import annotations

import argparse
import json
import os
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

import numpy as np
from rich.console import Console
from rich.table import Table

from metrics_core import MetricValue, metric_names
from monitor.cli.terminal import print_table
from monitor.evaluation.results import GroupStats, ModelEvaluation, WindowResult
from monitor.http.live import LiveView
from monitor.outputs.api import history_data
from monitor.service.history import History
from monitor.service.snapshot import ModelStatus, Snapshot

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def evaluations(groups: int, metrics: int, count: int, seed: int = 7) -> list[ModelEvaluation]:
    rng = np.random.default_rng(seed)
    names = [m for m in metric_names(level="group")][:metrics]
    walk = np.cumsum(rng.normal(0, 0.01, size=(count, groups, len(names))), axis=0) + 1.0
    out = []
    for i in range(count):
        at = T0 + timedelta(minutes=i)
        values = []
        for g in range(groups):
            for m, name in enumerate(names):
                v = float(walk[i, g, m]) if rng.random() > 0.02 else float("nan")
                state = "insufficient_data" if np.isnan(v) else ("ok" if 0.8 <= v <= 1.25 else "violation")
                values.append(
                    MetricValue(
                        "identity",
                        f"group_{g:02d}",
                        "background",
                        name,
                        v,
                        v - 0.05,
                        v + 0.05,
                        0.8,
                        1.25,
                        state,
                        500,
                        5000,
                        500,
                        None if not np.isnan(v) else "no rows",
                    )
                )
        stats = tuple(GroupStats("identity", f"group_{g:02d}", "background", 500, 400) for g in range(groups))
        window = WindowResult(
            "24h",
            at - timedelta(hours=24),
            at,
            at - timedelta(hours=24),
            at,
            tuple(values),
            (),
            stats,
            10_000,
            8_000,
        )
        out.append(ModelEvaluation("bench", at, 0.5, (window,), 10_000, MappingProxyType({})))
    return out


def measure(groups: int, metrics: int, count: int) -> dict[str, float]:
    made = evaluations(groups, metrics, count)
    tracemalloc.start()
    history = History(count)
    for ev in made:
        history.add(ev)
    memory = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    status = ModelStatus("bench", 60.0, last_evaluation=made[-1], last_success=made[-1].evaluated_at)
    snapshot = Snapshot(MappingProxyType({"bench": status}), created_at=made[-1].evaluated_at)
    view = LiveView(history, {"bench": 100})
    timings: dict[str, float] = {"series": groups * metrics, "history_mb": memory / 1e6}
    for name, draw in (
        ("page", lambda: view.page(snapshot, "bench", "24h")),
        ("fragment", lambda: view.main(snapshot, "bench", "24h")),
        ("history_json", lambda: json.dumps(history_data(history, {"model": ["bench"]}))),
    ):
        runs = []
        for _ in range(3):
            began = time.perf_counter()
            body = draw()
            runs.append(time.perf_counter() - began)
        timings[f"{name}_s"] = min(runs)
        timings[f"{name}_kb"] = len(body.encode()) / 1000
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=12)
    parser.add_argument("--metrics", type=int, default=20)
    parser.add_argument("--evaluations", type=int, default=720)
    args = parser.parse_args()
    baseline = measure(1, 1, args.evaluations)
    result = measure(args.groups, args.metrics, args.evaluations)
    table = Table(
        title=f"live view of one model, {args.evaluations} evaluations kept (load {os.getloadavg()[0]:.1f})"
    )
    for col in ("series", "history MB", "page s", "page KB", "fragment s", "/api/v1/history s", "history KB"):
        table.add_column(col, justify="right")
    for r in (baseline, result):
        table.add_row(
            f"{r['series']:.0f}",
            f"{r['history_mb']:.1f}",
            f"{r['page_s']:.3f}",
            f"{r['page_kb']:.0f}",
            f"{r['fragment_s']:.3f}",
            f"{r['history_json_s']:.3f}",
            f"{r['history_json_kb']:.0f}",
        )
    print_table(Console(), table)
    print(json.dumps({"load": round(os.getloadavg()[0], 2), "baseline": baseline, "result": result}))


if __name__ == "__main__":
    main()
