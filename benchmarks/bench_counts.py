"""Counts, not rows: one ``fairwatch evaluate`` of a SQLite window, counted by the database vs read as rows.

Writes the Jigsaw-style log of ``bench_service.py`` (nine identity columns, rounded scores, ISO
text timestamps, an index on them) to a SQLite file per size, then runs the real CLI,
``fairwatch evaluate --config F --start S --end E --format json``, in a fresh process for each
mode - start-up, imports, the read and every metric included - once with the default
(``aggregate: true``: one ``GROUP BY`` in the database) and once with ``aggregate: false``
(every row read into pandas). Reports wall time, the process's peak RSS, the rows the
database returned, and whether the two JSON reports are identical value for value.
The last line is one JSON object.

    python benchmarks/bench_counts.py [--rows 1000000 2000000]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from bench_service import NOW, make_log

from monitor.demo import IDENTITIES

START, END = "2026-11-21T00:00:00Z", "2026-11-22T00:00:00Z"


def write_log(rows: int, db: Path) -> None:
    frame = make_log(rows)
    frame = frame.assign(ts=frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"))
    with sqlite3.connect(db) as conn:
        frame.to_sql("predictions", conn, index=False, chunksize=100_000)
        conn.execute("CREATE INDEX predictions_ts ON predictions (ts)")


def write_config(db: Path, path: Path, *, aggregate: bool) -> None:
    model = {
        "name": "bench",
        "source": {"kind": "sql", "url": f"sqlite:///{db}", "table": "predictions", "aggregate": aggregate},
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [{"attribute": "identity", "kind": "indicator", "columns": list(IDENTITIES)}],
        "windows": [{"name": "24h", "length": "24h"}],
    }
    path.write_text(yaml.safe_dump({"models": [model]}))


# The peak RSS of a process started from this (large) one would include this one's pages: Linux
# keeps the high-water mark of the image a process replaced by exec. So a small launcher forks
# the CLI and reports the CLI's own peak.
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"{usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_cli(config: Path) -> dict[str, Any]:
    """One ``fairwatch evaluate`` in a fresh process: seconds, peak RSS (MB) and its JSON report."""
    fairwatch = Path(sys.executable).with_name("fairwatch")  # the console script, as users run it
    command = [sys.executable, "-S", "-c", _LAUNCHER, str(fairwatch), "evaluate", "--config", str(config)]
    command += ["--start", START, "--end", END, "--format", "json"]
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"fairwatch evaluate failed for {config}")
    peak_kb = int(done.stderr.decode().split()[-1])
    return {"seconds": seconds, "peak_mb": peak_kb / 1024, "report": json.loads(done.stdout)}


def returned_rows(db: Path) -> tuple[int, int]:
    """(rows in the window, rows the GROUP BY returns), from the source's own statement."""
    from datetime import datetime

    from monitor.config import load_settings
    from monitor.counting import count_request
    from monitor.sources.sql import SqlSource

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "c.yaml"
        write_config(db, config, aggregate=True)
        model = load_settings(config).models[0]
    start, end = datetime.fromisoformat(START), datetime.fromisoformat(END)
    source = SqlSource(model.source, timestamp_column="ts")
    try:
        batch = source.read_counts(count_request(model, ((start, end),)), start, end)
    finally:
        source.close()
    assert batch is not None
    return batch.n_rows, len(batch.frame)


def values(report: dict[str, Any]) -> Any:
    """The report without its timings."""
    drop = {"duration_seconds", "read_seconds", "compute_seconds", "evaluated_at"}

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in drop}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(report)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 2_000_000])
    args = parser.parse_args()
    console = Console(stderr=True)
    results: dict[str, Any] = {}
    table = Table(title=f"fairwatch evaluate of a 24 h SQLite window (load {os.getloadavg()[0]:.1f})")
    for col in ("rows", "mode", "seconds", "peak RSS MB", "rows returned", "identical"):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        for rows in args.rows:
            db = Path(tmp) / f"log-{rows}.db"
            with console.status(f"writing {rows:,} rows to SQLite"):
                write_log(rows, db)
            runs = {}
            for mode, aggregate in (("counts", True), ("rows", False)):
                config = Path(tmp) / f"{mode}-{rows}.yaml"
                write_config(db, config, aggregate=aggregate)
                with console.status(f"{rows:,} rows: fairwatch evaluate ({mode})"):
                    runs[mode] = run_cli(config)
            in_window, returned = returned_rows(db)
            same = values(runs["counts"]["report"]) == values(runs["rows"]["report"])
            for mode, run in runs.items():
                table.add_row(
                    f"{rows:,}",
                    mode,
                    f"{run['seconds']:.2f}",
                    f"{run['peak_mb']:.0f}",
                    f"{returned:,}" if mode == "counts" else f"{in_window:,}",
                    "yes" if same else "NO",
                )
            speedup = runs["rows"]["seconds"] / runs["counts"]["seconds"]
            table.add_row("", "rows / counts", f"{speedup:.1f}x", "", "", "")
            results[str(rows)] = {
                **{f"{m}_seconds": round(r["seconds"], 3) for m, r in runs.items()},
                **{f"{m}_peak_mb": round(r["peak_mb"]) for m, r in runs.items()},
                "rows_in_window": in_window,
                "rows_returned": returned,
                "identical": same,
            }
    Console().print(table)
    print(json.dumps({"now": NOW.isoformat(), "load": round(os.getloadavg()[0], 2), **results}))


if __name__ == "__main__":
    main()
