"""The cost of one tick: a 24 h window evaluated every minute while the log grows, through sealed
panes vs re-reading the whole window.

Writes a Jigsaw-style log of ``--per-day`` rows per day (nine identity columns, rounded scores,
an index on the timestamps) covering the 24 h before the first tick to SQLite (ISO text in UTC,
declared ``timestamp_format: iso_utc``) and, with ``--postgres``, to a throw-away PostgreSQL
cluster (timestamptz). Then, one simulated minute apart, it appends the minute's rows and
evaluates the model twice per tick: through panes (the default: hour panes, 10 min lateness)
and with panes off (each tick reads the whole 24 h window, the baseline). Reports the first two
ticks (the start-up: the whole window is read, then each sealed pane counted), the median, 95th
percentile and worst later tick, the statements
a tick sends, the combinations kept, and whether both evaluations gave identical values at every
tick. Ticks fall between pane boundaries and across them. The last line is one JSON object.

    python benchmarks/bench_ticks.py [--per-day 1000000] [--ticks 90] [--postgres]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import astuple
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import sqlalchemy as sa
from rich.console import Console
from rich.progress import track
from rich.table import Table

from monitor.cli.demo.run import IDENTITIES, PREVALENCE
from monitor.cli.terminal import print_table
from monitor.config import settings_from_dict
from monitor.evaluation.evaluator import Evaluator
from monitor.evaluation.evaluators import build_evaluators
from monitor.evaluation.results import ModelEvaluation

FIRST_TICK = datetime(2026, 11, 22, 9, 17, 30, tzinfo=UTC)  # between pane boundaries


def make_log(per_day: int, ticks: int, seed: int = 42) -> pd.DataFrame:
    """Rows from 24 h before the first tick to the last tick, in time order."""
    rng = np.random.default_rng(seed)
    span = 86400 + 60 * ticks
    rows = int(per_day * span / 86400)
    offsets = np.sort(rng.uniform(0, span, rows))
    ts = pd.Timestamp(FIRST_TICK - timedelta(days=1)) + pd.to_timedelta(offsets, unit="s")
    toxic = rng.random(rows) < 0.08
    logit = -2.2 + 3.6 * toxic + rng.normal(0, 1, rows)
    frame = pd.DataFrame({"id": np.arange(rows), "ts": ts})
    for name, p in zip(IDENTITIES, PREVALENCE, strict=True):
        member = rng.random(rows) < p
        frame[name] = np.where(member, 1.0, np.where(rng.random(rows) < 0.3, 0.0, np.nan))
    frame["score"] = np.round(1 / (1 + np.exp(-logit)), 4)
    frame["label"] = toxic.astype(int)
    return frame


def sqlite_store(folder: Path) -> tuple[dict[str, Any], Callable[[pd.DataFrame], None]]:
    db = folder / "ticks.db"

    def append(rows: pd.DataFrame) -> None:
        stored = rows.assign(ts=rows["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"))
        with sqlite3.connect(db) as conn:
            stored.to_sql("predictions", conn, index=False, if_exists="append", chunksize=100_000)
            conn.execute("CREATE INDEX IF NOT EXISTS predictions_ts ON predictions (ts)")

    source = {"kind": "sql", "url": f"sqlite:///{db}", "table": "predictions", "timestamp_format": "iso_utc"}
    return source, append


@contextlib.contextmanager
def stores_postgres() -> Iterator[tuple[str, sa.Engine]]:
    """A throw-away PostgreSQL cluster (the test suite's), its URL and an engine."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.servers import TempPostgres

    cluster = TempPostgres()
    try:
        cluster.init()
        cluster.start()
        password = secrets.token_hex(16)
        cluster.create_database("fairwatch", password, "bench")
        url = f"postgresql+psycopg://fairwatch:{password}@127.0.0.1:{cluster.port}/bench"
        engine = sa.create_engine(url)
        try:
            yield url, engine
        finally:
            engine.dispose()
    finally:
        cluster.stop_and_remove()


def evaluator(source: dict[str, Any], panes: bool, directory: Path | None = None) -> Evaluator:
    """The benchmark's model on ``source``: through panes (kept in ``directory`` too, as the
    service keeps them) or re-reading whole windows."""
    settings = settings_from_dict(
        {
            "models": [
                {
                    "name": "bench",
                    "source": source,
                    "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
                    "groups": [{"attribute": "identity", "kind": "indicator", "columns": IDENTITIES}],
                    "windows": [{"name": "24h", "length": "24h"}],
                    "panes": {"enabled": panes, "directory": str(directory) if directory else None},
                }
            ]
        }
    )
    return build_evaluators(settings, persist_panes=directory is not None)["bench"]


def values(result: ModelEvaluation) -> Any:
    def plain(value: Any) -> Any:
        if isinstance(value, float) and value != value:
            return "nan"
        if isinstance(value, tuple):
            return tuple(plain(v) for v in value)
        return value

    return (
        result.rows_read,
        [sorted((plain(astuple(v)) for v in w.values), key=repr) for w in result.windows],
    )


def run(
    name: str, source: dict[str, Any], append: Callable[[pd.DataFrame], None], log: pd.DataFrame, ticks: int
) -> dict[str, Any]:
    append(log[log["ts"] < FIRST_TICK])
    through, whole = evaluator(source, panes=True), evaluator(source, panes=False)
    seen = FIRST_TICK
    panes_s, whole_s, pieces, identical = [], [], [], True
    for k in track(range(ticks), description=f"{name}: ticks", transient=True):
        tick = FIRST_TICK + timedelta(minutes=k)
        append(log[(log["ts"] >= seen) & (log["ts"] < tick)])
        seen = tick
        t0 = time.perf_counter()
        a = through.evaluate(tick)
        t1 = time.perf_counter()
        b = whole.evaluate(tick)
        t2 = time.perf_counter()
        panes_s.append(t1 - t0)
        whole_s.append(t2 - t1)
        pieces.append(a.pieces_read)
        identical = identical and values(a) == values(b)
    assert through.panes is not None
    # the first tick reads the whole window (a SQLite text log's form is known after it), the next
    # counts each sealed pane: the start-up; later ticks are the service's steady state
    later = panes_s[2:]
    out = {
        "store": name,
        "rows_in_window": int(((log["ts"] >= seen - timedelta(days=1)) & (log["ts"] < seen)).sum()),
        "first_tick_s": round(panes_s[0], 3),
        "second_tick_s": round(panes_s[1], 3),
        "panes_median_s": round(statistics.median(later), 3),
        "panes_p95_s": round(float(np.percentile(later, 95)), 3),
        "panes_max_s": round(max(later), 3),
        "reread_median_s": round(statistics.median(whole_s), 3),
        "speedup": round(statistics.median(whole_s) / statistics.median(later), 1),
        "statements_median": statistics.median(p for p in pieces[2:] if p is not None),
        "kept_combinations": through.panes.kept_rows(),
        "identical": identical,
    }
    through.source.close()
    whole.source.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-day", type=int, default=1_000_000)
    parser.add_argument("--ticks", type=int, default=90)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    console = Console()
    log = make_log(args.per_day, args.ticks)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        source, append = sqlite_store(Path(tmp))
        results.append(run("sqlite", source, append, log, args.ticks))
        if args.postgres:
            with stores_postgres() as (url, engine):
                table = "predictions"

                def append_pg(rows: pd.DataFrame) -> None:
                    rows.to_sql(table, engine, index=False, if_exists="append", chunksize=100_000)

                pg_source = {"kind": "sql", "url": url, "table": table}
                append_pg(log.head(0))
                with engine.begin() as conn:
                    conn.exec_driver_sql("CREATE INDEX ON predictions (ts)")
                results.append(run("postgresql", pg_source, append_pg, log, args.ticks))
    table = Table(title=f"one tick of a 24 h window, {args.per_day:,} rows/day, 1 tick per simulated minute")
    for column in (
        "store",
        "rows in window",
        "first / second tick",
        "later ticks: median / p95 / max",
        "re-read: median",
        "speed-up",
        "statements/tick",
        "kept combos",
        "identical",
    ):
        table.add_column(column, justify="right")
    for r in results:
        table.add_row(
            r["store"],
            f"{r['rows_in_window']:,}",
            f"{r['first_tick_s']:.2f} / {r['second_tick_s']:.2f} s",
            f"{r['panes_median_s']:.3f} / {r['panes_p95_s']:.3f} / {r['panes_max_s']:.3f} s",
            f"{r['reread_median_s']:.2f} s",
            f"{r['speedup']}x",
            str(r["statements_median"]),
            f"{r['kept_combinations']:,}",
            str(r["identical"]),
        )
    print_table(console, table)
    print(json.dumps({"per_day": args.per_day, "ticks": args.ticks, "results": results}))


if __name__ == "__main__":
    main()
