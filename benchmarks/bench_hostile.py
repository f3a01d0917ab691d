"""Can clients on the HTTP port stall the monitor? ``fairwatch run`` quiet, then under 16 busy clients.

A real ``fairwatch run`` process on the demo's log and config (two models evaluated every second,
three hours of history kept for the live view) is measured twice in one run:

1. **quiet**: only a prober reading ``/metrics`` every 0.25 s;
2. **hostile**: the same prober, plus ``--clients`` threads (default 16, in two other processes)
   requesting, as fast as answers come, every path round robin - the live view and its fragment
   for each model and window, ``/api/v1/history`` (all series, and filtered), ``/api/v1/results``,
   ``/api/v1/power``, ``/metrics`` and a static asset - without ``If-None-Match``, as a script does.

Figures per phase: evaluations completed (``fairwatch_evaluations_total`` summed over models) per
10 s, the prober's ``/metrics`` p50 / p99 / max, and the hostile clients' requests. The ratio of
the hostile evaluation rate to the quiet one is the claim (issue 24: within 10%).

    python benchmarks/bench_hostile.py [--seconds 30] [--clients 16]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console
from rich.table import Table

from monitor.cli.demo.run import write_demo_config, write_demo_log
from monitor.cli.terminal import print_table

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _get(url: str, timeout: float = 30.0) -> bytes:
    with _OPENER.open(url, timeout=timeout) as answer:
        return bytes(answer.read())


def _evaluations(base: str) -> float:
    text = _get(f"{base}/metrics").decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("fairwatch_evaluations_total{")
    )


def _paths() -> list[str]:
    paths = []
    for model in ("toxicity", "moderation"):
        for window in ("1h", "3h"):
            paths += [f"/?model={model}&window={window}", f"/?model={model}&window={window}&fragment=1"]
    return [
        *paths,
        "/api/v1/history",
        "/api/v1/history?model=toxicity&metric=bpsn_auc",
        "/api/v1/results",
        "/api/v1/power",
        "/metrics",
        "/static/live.js",
    ]


def _client(base: str, seconds: float, threads: int, counts: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    paths = _paths()
    done = [0] * threads
    failed = [0] * threads
    stop = time.monotonic() + seconds

    def work(i: int) -> None:
        k = i
        while time.monotonic() < stop:
            try:
                _get(base + paths[k % len(paths)])
                done[i] += 1
            except (OSError, urllib.error.HTTPError):
                failed[i] += 1
            k += 1

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    counts.put((sum(done), sum(failed)))


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _phase(base: str, seconds: float, clients: int, pid: int) -> dict[str, float]:
    queue: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    procs = []
    if clients:
        per = [clients // 2 + clients % 2, clients // 2]
        procs = [multiprocessing.Process(target=_client, args=(base, seconds, n, queue)) for n in per if n]
        for p in procs:
            p.start()
    before, began, cpu = _evaluations(base), time.monotonic(), _cpu_seconds(pid)
    latencies: list[float] = []
    while time.monotonic() - began < seconds:
        t = time.perf_counter()
        _get(f"{base}/metrics")
        latencies.append(time.perf_counter() - t)
        time.sleep(0.25)
    after, elapsed, cpu = _evaluations(base), time.monotonic() - began, _cpu_seconds(pid) - cpu
    requests = failures = 0
    for p in procs:
        p.join()
        done, failed = queue.get()
        requests, failures = requests + done, failures + failed
    latencies.sort()
    return {
        "evaluations_per_10s": round((after - before) * 10 / elapsed, 2),
        "service_cpu_share": round(cpu / elapsed, 2),  # cores the fairwatch process used
        "metrics_p50_ms": round(1000 * statistics.median(latencies), 1),
        "metrics_p99_ms": round(1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 1),
        "metrics_max_ms": round(1000 * latencies[-1], 1),
        "client_requests": requests,
        "client_failures": failures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        now = datetime.now(UTC)
        write_demo_log(
            folder / "predictions.db", start=now - timedelta(hours=1), history=timedelta(hours=4),
            future=timedelta(0), rows_per_hour=3000,
        )  # fmt: skip
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        config = write_demo_config(folder, port=port)
        log = (folder / "run.log").open("w")
        server = subprocess.Popen(
            [sys.executable, "-m", "monitor.cli", "run", "--config", str(config)],
            stdout=log,
            stderr=log,
            cwd=folder,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if _evaluations(base) >= 20:
                        break
                except OSError:
                    pass
                time.sleep(0.5)
            time.sleep(20)  # some history for the live view and /api/v1/history to draw
            quiet = _phase(base, args.seconds, 0, server.pid)
            hostile = _phase(base, args.seconds, args.clients, server.pid)
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()
    load = os.getloadavg()
    table = Table(title=f"fairwatch run: quiet vs {args.clients} clients on every path (load {load[0]:.2f})")
    for col in ("phase", *quiet):
        table.add_column(col, justify="right")
    for name, row in (("quiet", quiet), ("hostile", hostile)):
        table.add_row(name, *(f"{v:g}" for v in row.values()))
    print_table(Console(), table)
    ratio = (
        hostile["evaluations_per_10s"] / quiet["evaluations_per_10s"]
        if quiet["evaluations_per_10s"]
        else None
    )
    print(json.dumps({"seconds": args.seconds, "clients": args.clients, "quiet": quiet, "hostile": hostile,
                      "evaluation_rate_ratio": None if ratio is None else round(ratio, 3),
                      "load": [round(x, 2) for x in load]}))  # fmt: skip


if __name__ == "__main__":
    main()
