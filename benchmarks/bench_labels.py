"""Labels in their own table: joined by the database while it counts vs read and joined in Python.

Writes the Jigsaw-style log of ``bench_service.py`` to SQLite without labels, and a label table
beside it (70% of the predictions labelled, arriving 0-5 h after them, 10% relabelled later; indexed
on the id and the arrival time), then evaluates the 24 h window in process twice: counted with the
labels joined by the database (the default) and with every row read and the labels joined in
pandas (``aggregate: false``, the baseline). Reports wall time and whether both reports are
identical. The last line is one JSON object.

    python benchmarks/bench_labels.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from monitor.cli.terminal import print_table

sys.path.insert(0, str(Path(__file__).parent))
from bench_service import NOW, make_log

from monitor.cli.demo.run import IDENTITIES
from monitor.config import settings_from_dict
from monitor.evaluation.evaluators import build_evaluators

START = NOW - timedelta(days=1)
ISO = "%Y-%m-%dT%H:%M:%S.%f+00:00"


def write(rows: int, db: Path) -> None:
    frame = make_log(rows)
    rng = np.random.default_rng(5)
    picked = frame.sample(frac=0.7, random_state=5)
    arrived = picked["ts"] + pd.to_timedelta(rng.uniform(0, 5 * 3600, len(picked)), unit="s")
    labels = pd.DataFrame({"pid": picked["id"], "y": picked["label"], "arrived": arrived})
    again = labels.sample(frac=0.1, random_state=6).assign(
        arrived=lambda d: d["arrived"] + pd.Timedelta("30min")
    )
    labels = pd.concat([labels, again], ignore_index=True)
    with sqlite3.connect(db) as conn:
        frame.drop(columns=["label"]).assign(ts=frame["ts"].dt.strftime(ISO)).to_sql(
            "predictions", conn, index=False, chunksize=100_000
        )
        labels.assign(arrived=labels["arrived"].dt.strftime(ISO)).to_sql(
            "labels", conn, index=False, chunksize=100_000
        )
        conn.execute("CREATE INDEX predictions_ts ON predictions (ts)")
        conn.execute("CREATE INDEX labels_pid ON labels (pid)")
        conn.execute("CREATE INDEX labels_arrived ON labels (arrived)")


def evaluate(db: Path, aggregate: bool) -> dict[str, Any]:
    url = f"sqlite:///{db}"
    model = {
        "name": "bench",
        "source": {
            "kind": "sql",
            "url": url,
            "table": "predictions",
            "timestamp_format": "iso_utc",
            "aggregate": aggregate,
        },
        "labels": {
            "source": {"kind": "sql", "url": url, "table": "labels", "timestamp_format": "iso_utc"},
            "columns": {"id": "pid", "label": "y", "timestamp": "arrived"},
        },
        "columns": {"id": "id", "timestamp": "ts", "score": "score"},
        "groups": [{"attribute": "identity", "kind": "indicator", "columns": IDENTITIES}],
        "windows": [{"name": "24h", "length": "24h"}],
    }
    evaluator = build_evaluators(settings_from_dict({"models": [model]}))["bench"]
    t0 = time.perf_counter()
    result = evaluator.evaluate(NOW, start=START, end=NOW)
    seconds = time.perf_counter() - t0
    evaluator.source.close()
    values = sorted(repr(v) for w in result.windows for v in w.values)
    return {"seconds": seconds, "values": values, "labeled": result.windows[0].n_labeled}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "log.db"
        write(args.rows, db)
        joined = evaluate(db, aggregate=True)
        rows = evaluate(db, aggregate=False)
    same = joined["values"] == rows["values"]
    table = Table(title=f"{args.rows:,} predictions, labels in their own SQLite table, one 24 h evaluation")
    for col in ("how", "seconds", "labelled rows", "identical"):
        table.add_column(col, justify="right")
    for name, run in (("counted, joined by the database", joined), ("rows, joined in pandas", rows)):
        table.add_row(name, f"{run['seconds']:.2f}", f"{run['labeled']:,}", "yes" if same else "NO")
    print_table(Console(), table)
    print(
        json.dumps(
            {
                "rows": args.rows,
                "joined_s": round(joined["seconds"], 2),
                "rows_s": round(rows["seconds"], 2),
                "identical": same,
            }
        )
    )


if __name__ == "__main__":
    main()
