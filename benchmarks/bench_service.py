"""One evaluation of a 1,000,000-row window, from SQLite and from Parquet: where does the time go?

Writes a synthetic Jigsaw-style log (nine identity columns, ~8% positives, rounded scores) once to a
SQLite file and to a Parquet file, then times ``Evaluator.evaluate`` on each, split into reading
(source -> DataFrame, bad-row checks) and computing (groups, score table, every metric with intervals).
Medians over ``--repeat`` runs. The last line is one JSON object.

    python benchmarks/bench_service.py [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from monitor.cli.demo.run import IDENTITIES, PREVALENCE
from monitor.cli.terminal import print_table
from monitor.config import settings_from_dict
from monitor.evaluation.evaluators import build_evaluators

NOW = datetime(2026, 11, 22, tzinfo=UTC)


def make_log(rows: int, seed: int = 42) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    offsets = np.sort(rng.uniform(0, 20 * 3600, rows))
    ts = pd.Timestamp(NOW - timedelta(hours=21)) + pd.to_timedelta(offsets, unit="s")
    toxic = rng.random(rows) < 0.08
    logit = -2.2 + 3.6 * toxic + rng.normal(0, 1, rows)
    frame = pd.DataFrame({"id": np.arange(rows), "ts": ts})
    for name, p in zip(IDENTITIES, PREVALENCE, strict=True):
        member = rng.random(rows) < p
        logit += 0.8 * (member & ~toxic) * (name == "muslim")
        frame[name] = np.where(member, 1.0, np.where(rng.random(rows) < 0.3, 0.0, np.nan))
    frame["score"] = np.round(1 / (1 + np.exp(-logit)), 4)
    frame["label"] = toxic.astype(int)
    return frame


def settings(source: dict[str, object]) -> object:
    return settings_from_dict(
        {
            "models": [
                {
                    "name": "bench",
                    "source": source,
                    "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
                    "groups": [{"attribute": "identity", "kind": "indicator", "columns": IDENTITIES}],
                    "windows": [{"name": "24h", "length": "24h"}],
                }
            ]
        }
    )


def time_source(name: str, source: Mapping[str, object], repeat: int) -> dict[str, float]:
    ev = build_evaluators(settings(source))["bench"]  # type: ignore[arg-type]
    runs = []
    for _ in range(repeat):
        r = ev.evaluate(NOW)
        runs.append((r.duration_seconds, r.read_seconds, r.compute_seconds, r.rows_read))
    ev.source.close()
    return {
        "total_s": statistics.median(x[0] for x in runs),
        "read_s": statistics.median(x[1] for x in runs),
        "compute_s": statistics.median(x[2] for x in runs),
        "rows": runs[0][3],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    console = Console(stderr=True)
    with tempfile.TemporaryDirectory() as tmp:
        with console.status(f"writing {args.rows:,} rows to SQLite and Parquet"):
            frame = make_log(args.rows)
            db = Path(tmp) / "log.db"
            sql_frame = frame.assign(ts=frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"))
            with sqlite3.connect(db) as conn:
                sql_frame.to_sql("predictions", conn, index=False, chunksize=100_000)
                conn.execute("CREATE INDEX predictions_ts ON predictions (ts)")
            parquet = Path(tmp) / "log.parquet"
            pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), parquet, row_group_size=100_000)
        results = {}
        for name, source in (
            ("sqlite", {"kind": "sql", "url": f"sqlite:///{db}", "table": "predictions"}),
            ("parquet", {"kind": "files", "path": str(parquet), "format": "parquet"}),
        ):
            with console.status(f"evaluating from {name} ({args.repeat} runs)"):
                results[name] = time_source(name, source, args.repeat)
    table = Table(title=f"one evaluation of a {args.rows:,}-row window (median of {args.repeat})")
    for col in ("source", "rows read", "total s", "read s", "compute s", "read share"):
        table.add_column(col, justify="right")
    for name, r in results.items():
        table.add_row(
            name,
            f"{int(r['rows']):,}",
            f"{r['total_s']:.3f}",
            f"{r['read_s']:.3f}",
            f"{r['compute_s']:.3f}",
            f"{r['read_s'] / r['total_s']:.0%}",
        )
    print_table(Console(), table)
    print(
        json.dumps(
            {
                "rows": args.rows,
                **{f"{k}_{m}": round(v, 4) for k, r in results.items() for m, v in r.items() if m != "rows"},
            }
        )
    )


if __name__ == "__main__":
    main()
