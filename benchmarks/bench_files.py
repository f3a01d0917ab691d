"""Counts, not rows, for Parquet logs: one ``fairwatch evaluate`` of a window of rotated Parquet files.

Writes the Jigsaw-style log of ``bench_service.py`` as ten Parquet files (timestamps as Parquet
timestamps), then runs the real CLI in a fresh process per mode - start-up included - counted by
DuckDB (the default, ``aggregate: true``) and read as rows by pyarrow into pandas (``aggregate:
false``, the baseline). Reports wall time, the CLI's peak RSS, and whether the JSON reports are
identical value for value. The last line is one JSON object. (Spark on the same files:
``bench_spark.py``.)

    python benchmarks/bench_files.py [--rows 1000000 10000000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from bench_counts import run_cli, values
from bench_service import NOW, make_log

from monitor.demo import IDENTITIES

MODES: dict[str, dict[str, Any]] = {
    "counts (DuckDB)": {"kind": "files", "aggregate": True},
    "rows (pyarrow)": {"kind": "files", "aggregate": False},
}


def write_files(rows: int, folder: Path, parts: int = 10) -> str:
    frame = make_log(rows)
    folder.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, rows, parts + 1).astype(int)
    for i in range(parts):
        part = frame.iloc[bounds[i] : bounds[i + 1]]
        pq.write_table(  # microsecond timestamps: what Spark reads (DuckDB and pyarrow read both)
            pa.Table.from_pandas(part, preserve_index=False),
            folder / f"predictions-{i:02d}.parquet",
            coerce_timestamps="us",
            allow_truncated_timestamps=True,  # the nanoseconds bench_service draws; the same for every mode
        )
    return str(folder / "predictions-*.parquet")


def write_config(glob: str, path: Path, *, source: dict[str, Any]) -> None:
    where = {"path": glob} if source["kind"] == "files" else {"path": str(Path(glob).parent)}
    model = {
        "name": "bench",
        "source": {**source, **where},
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [{"attribute": "identity", "kind": "indicator", "columns": list(IDENTITIES)}],
        "windows": [{"name": "24h", "length": "24h"}],
    }
    path.write_text(yaml.safe_dump({"models": [model]}))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    args = parser.parse_args()
    console = Console(stderr=True)
    table = Table(
        title=f"fairwatch evaluate of a 24 h window of Parquet files (load {os.getloadavg()[0]:.1f})"
    )
    for col in ("rows", "mode", "seconds", "peak RSS MB", "identical"):
        table.add_column(col, justify="right")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rows in args.rows:
            with console.status(f"writing {rows:,} rows as Parquet"):
                glob = write_files(rows, Path(tmp) / f"logs-{rows}")
            runs = {}
            for i, (mode, source) in enumerate(MODES.items()):
                config = Path(tmp) / f"{rows}-{i}.yaml"
                write_config(glob, config, source=source)
                with console.status(f"{rows:,} rows: fairwatch evaluate ({mode})"):
                    runs[mode] = run_cli(config)
            reference = values(runs["rows (pyarrow)"]["report"])
            for mode, run in runs.items():
                same = values(run["report"]) == reference
                table.add_row(
                    f"{rows:,}",
                    mode,
                    f"{run['seconds']:.2f}",
                    f"{run['peak_mb']:.0f}",
                    "yes" if same else "NO",
                )
                results[f"{rows}/{mode}"] = {
                    "seconds": round(run["seconds"], 3),
                    "peak_mb": round(run["peak_mb"]),
                    "identical": same,
                }
            ratio = runs["rows (pyarrow)"]["seconds"] / runs["counts (DuckDB)"]["seconds"]
            table.add_row("", "rows / counts", f"{ratio:.1f}x", "", "")
    Console().print(table)
    print(json.dumps({"now": NOW.isoformat(), "load": round(os.getloadavg()[0], 2), **results}))


if __name__ == "__main__":
    main()
