"""The fleet: publishers (sidecars) counting their own pods' logs, one central judging them all.

A Jigsaw-style log of ``--per-day`` rows a day (nine identity columns, scores rounded to 4 decimals, as
``bench_ticks``) covering the 24 h before the first tick is dealt to ``--publishers`` pods by row, each
pod's share in its own SQLite file (ISO text in UTC, an index on the timestamp). Each pod publishes its
panes to one store directory, as a sidecar's ``models[].publish`` does; then, one simulated minute apart,
each pod appends its minute of rows and publishes again (only its open panes), and the central evaluates
the published counts (``source: {kind: published}``).

Reported: the first publication (every pane of the horizon) and a steady tick per publisher (CPU seconds,
median and worst), the bytes each pane file takes, the central's first tick and its steady ticks (wall
seconds), and - the baseline, in the same run - one evaluation reading the union of all the pods' logs
whole (what a single fairwatch on a warehouse would do). The central's values are checked against the
union's on a range of whole panes. The last line is one JSON object.

    python benchmarks/bench_fleet.py [--publishers 50] [--per-day 1000000] [--ticks 5]
    python benchmarks/bench_fleet.py --store postgresql   # the store a throw-away PostgreSQL (sqlite: a file)
    python benchmarks/bench_fleet.py --jsonl     # one sidecar on a JSON Lines log of all the traffic

``--jsonl`` measures the sidecar's own cost on the log a model server writes: one pod with all
``--per-day`` rows as JSON Lines in daily files (yesterday's and today's, appended every minute), its
CPU seconds for the first publication and for each tick (its open panes). The sidecar tails the log
(:mod:`monitor.sources.files.tail`: each tick counts the lines appended since the last one); the
baseline, in the same run, counts its panes from the whole files at every tick, as before tailing.
Both publications must give the central the same values on whole panes (``identical``).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.progress import track
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from bench_shapes import postgres_url
from bench_ticks import FIRST_TICK, make_log, values

from monitor.cli.demo.run import IDENTITIES
from monitor.cli.terminal import print_table
from monitor.config import settings_from_dict
from monitor.evaluation.evaluator import Evaluator
from monitor.evaluation.evaluators import build_evaluators


def model(source: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {
        "name": "bench",
        "source": source,
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [{"attribute": "identity", "kind": "indicator", "columns": IDENTITIES}],
        "windows": [{"name": "1h", "length": "1h"}, {"name": "24h", "length": "24h"}],
        **keys,
    }


def evaluator(config: dict[str, Any]) -> Evaluator:
    return build_evaluators(settings_from_dict({"models": [config]}))["bench"]


def append(db: Path, rows: pd.DataFrame) -> None:
    stored = rows.assign(ts=rows["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"))
    with sqlite3.connect(db) as conn:
        stored.to_sql("predictions", conn, index=False, if_exists="append", chunksize=100_000)
        conn.execute("CREATE INDEX IF NOT EXISTS predictions_ts ON predictions (ts)")


def table_source(db: Path) -> dict[str, Any]:
    return {"kind": "sql", "url": f"sqlite:///{db}", "table": "predictions", "timestamp_format": "iso_utc"}


def cpu(call: Any) -> tuple[float, Any]:
    t0 = time.process_time()
    result = call()
    return time.process_time() - t0, result


def jsonl_sidecar(per_day: int, ticks: int) -> None:
    """One sidecar publishing from a JSON Lines log of ``per_day`` rows a day: CPU per tick, tailing
    the log (the default) and - the baseline, in the same run - counting its panes from whole files."""
    from monitor.sources.files.source import FileSource

    log = make_log(per_day, ticks)
    day = FIRST_TICK.replace(hour=0, minute=0, second=0, microsecond=0)

    def write(rows: pd.DataFrame, path: Path, mode: str = "w") -> None:
        stamped = rows.assign(ts=rows["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
        with path.open(mode) as out:
            out.write(stamped.to_json(orient="records", lines=True))

    def whole(self: FileSource, *_args: Any) -> None:
        return None  # no running counts: the panes are counted from the files

    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("tailed", "whole files"):
            folder = Path(tmp) / name.replace(" ", "-")
            folder.mkdir()
            before = log[log["ts"] < FIRST_TICK]
            write(before[before["ts"] < day], folder / "predictions-1.jsonl")
            today = folder / "predictions-2.jsonl"
            write(before[before["ts"] >= day], today)
            source = {"kind": "files", "path": str(folder / "predictions-*.jsonl"), "format": "jsonl"}
            sidecar = evaluator(model(source, publish={"url": str(folder / "store"), "publisher": "pod"}))
            if name == "whole files":
                sidecar.source.count_panes = whole.__get__(sidecar.source)  # type: ignore[attr-defined]
            first = cpu(lambda sidecar=sidecar: sidecar.evaluate(FIRST_TICK))[0]
            seen, costs = FIRST_TICK, []
            for k in range(1, ticks + 1):
                tick = FIRST_TICK + timedelta(minutes=k)
                write(log[(log["ts"] >= seen) & (log["ts"] < tick)], today, "a")
                seen = tick
                costs.append(cpu(lambda tick=tick, sidecar=sidecar: sidecar.evaluate(tick))[0])
            sidecar.close()
            central = evaluator(model({"kind": "published", "url": str(folder / "store")}))
            end = seen.replace(minute=0, second=0, microsecond=0)
            published = values(central.evaluate(seen, start=end - timedelta(hours=20), end=end))
            central.close()
            runs[name] = {"first": first, "costs": costs, "values": published}
    load = os.getloadavg()
    tailed, baseline = runs["tailed"], runs["whole files"]
    result = {
        "rows_per_day": per_day,
        "rows_in_todays_file": int(((log["ts"] >= day) & (log["ts"] < FIRST_TICK)).sum()),
        "first_publication_cpu": round(tailed["first"], 3),
        "tick_cpu_median": round(statistics.median(tailed["costs"]), 3),
        "tick_cpu_max": round(max(tailed["costs"]), 3),
        "baseline_first_publication_cpu": round(baseline["first"], 3),
        "baseline_tick_cpu_median": round(statistics.median(baseline["costs"]), 3),
        "tick_speedup": round(statistics.median(baseline["costs"]) / statistics.median(tailed["costs"]), 1),
        "identical": tailed["values"] == baseline["values"],
        "load": [round(x, 2) for x in load],
    }
    print(json.dumps(result))


def stored_panes(store: str) -> list[int]:
    """The bytes of each published pane: its file, or its row's ``counts``."""
    if "://" not in store:
        return [f.stat().st_size for f in Path(store).rglob("*.arrow")]
    import sqlalchemy as sa

    from monitor.sources.published.database import PANES

    engine = sa.create_engine(store)
    with engine.connect() as conn:
        sizes = [int(n) for n in conn.execute(sa.select(sa.func.length(PANES.c.counts))).scalars()]
    engine.dispose()
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--publishers", type=int, default=50)
    parser.add_argument("--per-day", type=int, default=1_000_000)
    parser.add_argument("--ticks", type=int, default=5)
    parser.add_argument("--jsonl", action="store_true", help="one sidecar on a JSON Lines log instead")
    parser.add_argument(
        "--store", choices=["directory", "postgresql", "sqlite"], default="directory", help="where to publish"
    )
    args = parser.parse_args()
    if args.jsonl:
        jsonl_sidecar(args.per_day, args.ticks)
        return
    console = Console(stderr=True)
    log = make_log(args.per_day, args.ticks)
    first_tick = FIRST_TICK
    pods = [f"pod-{i:02d}" for i in range(args.publishers)]
    with tempfile.TemporaryDirectory() as tmp, postgres_url(args.store == "postgresql") as pg:
        folder = Path(tmp)
        store = {"directory": str(folder / "store"), "sqlite": f"sqlite:///{folder / 'store.db'}"}.get(
            args.store, pg or ""
        )
        before = log[log["ts"] < first_tick]
        dbs = [folder / f"{pod}.db" for pod in pods]
        for i, db in enumerate(track(dbs, description="writing the pods' logs", console=console)):
            append(db, before.iloc[i :: len(pods)])
        union_db = folder / "union.db"
        append(union_db, before)
        publishers = [
            evaluator(model(table_source(db), publish={"url": store, "publisher": pod}))
            for db, pod in zip(dbs, pods, strict=True)
        ]
        central = evaluator(model({"kind": "published", "url": store}))
        union = evaluator(model(table_source(union_db), panes={"enabled": False}))

        first_publish = []
        for pub in track(publishers, description="first publication", console=console):
            first_publish.append(cpu(lambda pub=pub: pub.evaluate(first_tick))[0])
        pane_bytes = stored_panes(store)
        t0 = time.perf_counter()
        central.evaluate(first_tick)
        central_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        union.evaluate(first_tick)
        union_seconds = [time.perf_counter() - t0]

        steady_publish: list[float] = []
        central_ticks: list[float] = []
        seen = first_tick
        for k in track(range(1, args.ticks + 1), description="ticks", console=console):
            tick = first_tick + timedelta(minutes=k)
            minute = log[(log["ts"] >= seen) & (log["ts"] < tick)]
            seen = tick
            for i, db in enumerate(dbs):
                append(db, minute.iloc[i :: len(pods)])
            append(union_db, minute)
            for pub in publishers:
                steady_publish.append(cpu(lambda pub=pub, tick=tick: pub.evaluate(tick))[0])
            t0 = time.perf_counter()
            central.evaluate(tick)
            central_ticks.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            union.evaluate(tick)
            union_seconds.append(time.perf_counter() - t0)

        # the values, on whole panes: the central's and the union's
        end = first_tick.replace(minute=0, second=0, microsecond=0)
        start = end - timedelta(hours=20)
        identical = values(central.evaluate(end, start=start, end=end)) == values(
            union.evaluate(end, start=start, end=end)
        )
        for ev in [*publishers, central, union]:
            ev.close()

    load = os.getloadavg()
    result = {
        "publishers": args.publishers,
        "rows_per_day": args.per_day,
        "store": args.store,
        "panes": len(pane_bytes),
        "pane_kb_median": round(statistics.median(pane_bytes) / 1024, 1),
        "store_mb": round(sum(pane_bytes) / 2**20, 2),
        "publish_first_cpu_median": round(statistics.median(first_publish), 3),
        "publish_tick_cpu_median": round(statistics.median(steady_publish), 3),
        "publish_tick_cpu_max": round(max(steady_publish), 3),
        "central_first_seconds": round(central_first, 3),
        "central_tick_median": round(statistics.median(central_ticks), 3),
        "central_tick_max": round(max(central_ticks), 3),
        "union_whole_read_median": round(statistics.median(union_seconds), 3),
        "identical": identical,
        "load": [round(x, 2) for x in load],
    }
    table = Table(
        title=f"the fleet: {args.publishers} publishers, {args.per_day:,} rows a day (load {load[0]:.2f})"
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in result.items():
        table.add_row(key, str(value))
    print_table(Console(), table)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
