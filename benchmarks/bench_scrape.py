"""Scrape latency of ``/metrics`` for a snapshot of about 10,000 series, over real HTTP.

Builds one model with two windows, ``N_GROUPS`` groups and ``METRICS`` group metrics (each
value exports 7 series: the value and six companions, plus 3 size series per group).

1. **One scraper**: serves it with :func:`monitor.http.serve` on a free loopback port and times
   ``N_SCRAPES`` scrapes with urllib after a warm-up.
2. **Many scrapers** (``--clients``, default 200, for ``--seconds``, default 30): the server runs
   in its own process and publishes a new snapshot every ``--publish-every`` seconds (5), as
   evaluations do; the clients run as threads in four other processes, each opening a new
   connection per scrape and asking as Prometheus does (OpenMetrics, gzip). The same load is
   run against the **baseline**, the previous release's serving path rebuilt here: socketserver's
   thread per request with its default listen backlog of 5, and the exposition rendered by the
   first scrape that finds a new snapshot. A request that fails or gets no answer within 30 s
   counts as failed.

Run: ``python benchmarks/bench_scrape.py [--clients 200 --seconds 30]``. The last line is one
JSON object.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from socketserver import ThreadingMixIn
from types import MappingProxyType
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, generate_latest, make_wsgi_app

from metrics_core import STATES, MetricValue, ModelValue
from monitor.evaluation.results import GroupStats, ModelEvaluation, WindowResult
from monitor.http import MetricsEndpoint, make_app, serve
from monitor.outputs.prometheus.collector import SnapshotCollector
from monitor.service.snapshot import ModelStatus, Snapshot

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

CLIENT_PROCESSES = 4
CLIENT_TIMEOUT = 30.0
# What Prometheus sends (scrape_protocols' default order).
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)

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


def single_scraper() -> dict[str, Any]:
    """Figures for one scraper at a time (the render cache's hit path)."""
    snapshot = build_snapshot(random.Random(SEED))
    registry = CollectorRegistry()
    collector = SnapshotCollector(lambda: snapshot, version="bench")
    registry.register(collector)
    exposition = generate_latest(registry).decode()
    series = sum(1 for line in exposition.splitlines() if line and not line.startswith("#"))
    endpoint = MetricsEndpoint(collector, lambda: snapshot, registry=registry)
    server = serve(
        make_app(registry=registry, get_snapshot=lambda: snapshot, ready=lambda: True, metrics=endpoint),
        "127.0.0.1",
        0,
    )
    try:
        url = f"{server.url}/metrics"
        cold_ms, _ = scrape(url)  # nothing published yet: this scrape renders
        for _ in range(N_WARMUP):
            scrape(url)
        timings = [scrape(url) for _ in range(N_SCRAPES)]
    finally:
        server.shutdown()
    ms = sorted(t for t, _ in timings)
    return {
        "series": series,
        "bytes": timings[-1][1],
        "cold_ms": cold_ms,
        "median_ms": statistics.median(ms),
        "p90_ms": percentile(ms, 0.90),
        "p99_ms": percentile(ms, 0.99),
        "max_ms": ms[-1],
    }


# -- the concurrent load ------------------------------------------------------------------------------


class _BaselineServer(ThreadingMixIn, WSGIServer):
    """The previous release's server: a new thread per request, socketserver's backlog of 5."""

    daemon_threads = True
    allow_reuse_address = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class _BaselineCache:
    """The previous release's /metrics: prometheus_client renders on the first scrape that finds a
    new snapshot (every scrape racing it renders too), the bytes are reused until the next one."""

    def __init__(self, registry: CollectorRegistry, get_snapshot: Any) -> None:
        self._app = make_wsgi_app(registry)
        self._get_snapshot = get_snapshot
        self._cache: tuple[Any, dict[tuple[str, str], Any]] = (None, {})

    def __call__(self, environ: Any, start_response: Any) -> Any:
        snapshot = self._get_snapshot()
        cached, answers = self._cache
        if cached is not snapshot:
            answers = {}
            self._cache = (snapshot, answers)
        key = (environ.get("HTTP_ACCEPT", ""), environ.get("HTTP_ACCEPT_ENCODING", ""))
        if key not in answers:
            captured: list[Any] = []
            body = b"".join(
                self._app(environ, lambda status, headers, exc=None: captured.append((status, headers)))
            )
            answers[key] = (*captured[0], body)
        status, headers, body = answers[key]
        start_response(status, [(k, v) for k, v in headers if k.lower() != "content-length"])
        return [body]


def serve_forever(kind: str, port_file: str, publish_every: float) -> None:
    """The server process: serve, publish a fresh snapshot every ``publish_every`` seconds."""
    rng = random.Random(SEED)
    current = [build_snapshot(rng)]
    registry = CollectorRegistry()
    collector = SnapshotCollector(lambda: current[0], version="bench")
    registry.register(collector)
    publish: Any = lambda snapshot: None  # noqa: E731
    if kind == "baseline":
        app = make_app(
            registry=registry,
            get_snapshot=lambda: current[0],
            ready=lambda: True,
            metrics=_BaselineCache(registry, lambda: current[0]),
        )
        server = make_server("127.0.0.1", 0, app, server_class=_BaselineServer, handler_class=_Quiet)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.server_address[1]
    else:
        endpoint = MetricsEndpoint(collector, lambda: current[0], registry=registry)
        publish = endpoint.publish
        app = make_app(
            registry=registry, get_snapshot=lambda: current[0], ready=lambda: True, metrics=endpoint
        )
        port = serve(app, "127.0.0.1", 0).port
    Path(port_file).write_text(str(port))
    while True:  # until the parent kills the process
        time.sleep(publish_every)
        status = current[0].models["toxicity"]
        evaluation = replace(status.last_evaluation, evaluated_at=datetime.now(UTC))  # a new evaluation
        current[0] = replace(
            current[0], models=MappingProxyType({"toxicity": replace(status, last_evaluation=evaluation)})
        )
        publish(current[0])  # what Runner does after every swap


def _client_process(port: int, threads: int, seconds: float) -> list[tuple[float, bool]]:
    """``threads`` scrapers until ``seconds`` pass: (milliseconds, answered 200) per request."""
    results: list[tuple[float, bool]] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def scraper() -> None:
        mine = []
        while time.monotonic() < deadline:
            start = time.perf_counter()
            ok = False
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT)
                conn.request(
                    "GET", "/metrics", headers={"Accept": PROMETHEUS_ACCEPT, "Accept-Encoding": "gzip"}
                )
                answer = conn.getresponse()
                answer.read()
                ok = answer.status == 200
                conn.close()
            except (OSError, http.client.HTTPException):
                pass
            mine.append(((time.perf_counter() - start) * 1000, ok))
        with lock:
            results.extend(mine)

    workers = [threading.Thread(target=scraper) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return results


def under_load(kind: str, clients: int, seconds: float, publish_every: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        port_file = Path(tmp) / "port"
        server = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                kind,
                "--port-file",
                str(port_file),
                "--publish-every",
                str(publish_every),
            ],
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        )
        try:
            while not port_file.exists() or not port_file.read_text():
                if server.poll() is not None:
                    raise SystemExit(f"the {kind} server died")
                time.sleep(0.1)
            port = int(port_file.read_text())
            per_process = [
                clients // CLIENT_PROCESSES + (i < clients % CLIENT_PROCESSES)
                for i in range(CLIENT_PROCESSES)
            ]
            with multiprocessing.get_context("spawn").Pool(CLIENT_PROCESSES) as pool:
                parts = pool.starmap(_client_process, [(port, n, seconds) for n in per_process])
        finally:
            server.kill()
            server.wait()
    results = [r for part in parts for r in part]
    ms = sorted(t for t, _ in results)
    ok = sum(1 for _, good in results if good)
    return {
        "requests": len(results),
        "answered_ok": ok,
        "success_percent": 100 * ok / len(results),
        "median_ms": statistics.median(ms),
        "p99_ms": percentile(ms, 0.99),
        "max_ms": ms[-1],
        "requests_per_second": len(results) / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--publish-every", type=float, default=5.0)
    parser.add_argument("--serve", choices=["baseline", "fairwatch"], help=argparse.SUPPRESS)
    parser.add_argument("--port-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_forever(args.serve, args.port_file, args.publish_every)
        return

    one = single_scraper()
    print("fairwatch /metrics scrape benchmark")
    print(f"  series {one['series']}, body {one['bytes']} bytes (plain text)")
    print(
        f"  one scraper, {N_SCRAPES} scrapes: median {one['median_ms']:.2f} ms, p90 {one['p90_ms']:.2f} ms, "
        f"p99 {one['p99_ms']:.2f} ms (first scrape, rendering: {one['cold_ms']:.1f} ms); "
        f"target median < {TARGET_MEDIAN_MS:g} ms: {'met' if one['median_ms'] < TARGET_MEDIAN_MS else 'MISSED'}"
    )
    loads = {
        kind: under_load(kind, args.clients, args.seconds, args.publish_every)
        for kind in ("baseline", "fairwatch")
    }
    print(
        f"  {args.clients} concurrent scrapers for {args.seconds:g} s, a new snapshot every {args.publish_every:g} s:"
    )
    print(f"  {'':<10} {'requests':>9} {'answered 200':>13} {'median':>9} {'p99':>9} {'max':>9} {'req/s':>7}")
    for kind, r in loads.items():
        print(
            f"  {kind:<10} {r['requests']:>9} {r['success_percent']:>12.2f}% {r['median_ms']:>7.1f}ms "
            f"{r['p99_ms']:>7.1f}ms {r['max_ms']:>7.1f}ms {r['requests_per_second']:>7.1f}"
        )
    new, old = loads["fairwatch"], loads["baseline"]
    met = new["answered_ok"] == new["requests"] and new["p99_ms"] < 500
    print(
        f"  target: every request answered, p99 < 500 ms: {'met' if met else 'MISSED'}; "
        f"p99 {old['p99_ms'] / new['p99_ms']:.1f}x lower than the baseline"
    )
    print(
        json.dumps(
            {
                "series": one["series"],
                "scrape_median_ms": round(one["median_ms"], 3),
                "scrape_p99_ms": round(one["p99_ms"], 3),
                "cold_scrape_ms": round(one["cold_ms"], 3),
                "clients": args.clients,
                "seconds": args.seconds,
                **{f"{kind}_{k}": round(v, 3) for kind, r in loads.items() for k, v in r.items()},
                "cpus": os.cpu_count(),
                "load_average_1min": round(os.getloadavg()[0], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
