"""Continuous scores: one counted evaluation with and without ``score_decimals``.

Writes the Jigsaw-style log of ``bench_service.py`` with *unrounded* float scores (nearly one
distinct score per row) to SQLite, then evaluates its 24 h window in process, counted by the
database, with ``score_decimals`` off, 4, 3 and 2: wall time, the combinations the database
returned, the AUCs' largest reported rounding bound, and the largest actual change of a Jigsaw
AUC against the unrounded evaluation. The last line is one JSON object.

    python benchmarks/bench_decimals.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from monitor.cli.terminal import print_table

sys.path.insert(0, str(Path(__file__).parent))
from bench_service import NOW, make_log

from monitor.cli.demo.run import IDENTITIES
from monitor.config import settings_from_dict
from monitor.evaluation.evaluators import build_evaluators

START = NOW - timedelta(days=1)
AUCS = ("subgroup_auc", "bpsn_auc", "bnsp_auc")


def write_log(rows: int, db: Path) -> None:
    frame = make_log(rows)
    rng = np.random.default_rng(7)
    frame["score"] = np.clip(
        frame["score"] + rng.normal(0, 1e-4, rows), 0, 1
    )  # undo the rounding: continuous
    frame = frame.assign(ts=frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"))
    with sqlite3.connect(db) as conn:
        frame.to_sql("predictions", conn, index=False, chunksize=100_000)
        conn.execute("CREATE INDEX predictions_ts ON predictions (ts)")


def evaluate(db: Path, decimals: int | None) -> dict[str, Any]:
    model = {
        "name": "bench",
        "source": {
            "kind": "sql",
            "url": f"sqlite:///{db}",
            "table": "predictions",
            "timestamp_format": "iso_utc",
        },
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [{"attribute": "identity", "kind": "indicator", "columns": IDENTITIES}],
        "windows": [{"name": "24h", "length": "24h"}],
        "score_decimals": decimals,
    }
    evaluator = build_evaluators(settings_from_dict({"models": [model]}))["bench"]
    t0 = time.perf_counter()
    result = evaluator.evaluate(NOW, start=START, end=NOW)
    seconds = time.perf_counter() - t0
    counted = evaluator._read_counts(((START, NOW),), START, NOW, None)  # again, to count what came back
    evaluator.source.close()
    assert counted is not None
    values = {(v.group, v.metric): v.value for v in result.windows[0].values}
    return {"seconds": seconds, "combinations": len(counted.batch.frame), "values": values}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "log.db"
        write_log(args.rows, db)
        runs = {d: evaluate(db, d) for d in (None, 4, 3, 2)}
    exact = runs[None]["values"]
    table = Table(
        title=f"{args.rows:,} rows, continuous scores, one counted 24 h evaluation (SQLite, in process)"
    )
    for col in ("score_decimals", "seconds", "combinations", "largest bound", "largest |AUC change|"):
        table.add_column(col, justify="right")
    out: dict[str, Any] = {}
    for decimals, run in runs.items():
        bounds = [
            v for (g, m), v in run["values"].items() if m.endswith("_rounding_error") and math.isfinite(v)
        ]
        changes = [
            abs(run["values"][(g, m)] - exact[(g, m)])
            for (g, m) in exact
            if m in AUCS and math.isfinite(exact[(g, m)]) and (g, m) in run["values"]
        ]
        row = {
            "seconds": round(run["seconds"], 2),
            "combinations": run["combinations"],
            "largest_bound": max(bounds) if bounds else None,
            "largest_change": max(changes) if changes else None,
        }
        out[str(decimals)] = row
        table.add_row(
            "off" if decimals is None else str(decimals),
            f"{row['seconds']:.2f}",
            f"{row['combinations']:,}",
            "-" if row["largest_bound"] is None else f"{row['largest_bound']:.2e}",
            "-" if decimals is None else f"{row['largest_change']:.2e}",
        )
    print_table(Console(), table)
    print(json.dumps({"rows": args.rows, **out}))


if __name__ == "__main__":
    main()
