"""Counts, not rows, for log files: one ``fairwatch evaluate`` of a window of rotated files.

Writes the Jigsaw-style log of ``bench_service.py`` as ten files - Parquet (timestamps as Parquet
timestamps), CSV and JSON Lines (ISO text timestamps to the nanosecond, missing identities empty
or ``null``) - then runs the real CLI in a fresh process per mode - start-up included - counted by
DuckDB (the default, ``aggregate: true``) and read as rows into pandas (``aggregate: false``, the
baseline: pyarrow for Parquet, ``read_csv``/``json.loads`` for text). The newest text file counts as still
being written (modified a moment ago): the counted path reads a copy of it. Reports wall time, the
CLI's peak RSS, and whether the JSON reports are identical value for value. The last line is one
JSON object. (Spark on the same files: ``bench_spark.py``.)

    python benchmarks/bench_files.py [--rows 1000000 10000000] [--text-rows 1000000] [--formats parquet csv jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from rich.console import Console
from rich.table import Table

from monitor.cli.terminal import print_table

sys.path.insert(0, str(Path(__file__).parent))
from bench_counts import END, run_cli, values
from bench_service import NOW, make_log

from monitor.cli.demo.run import IDENTITIES

COUNTS, ROWS = "counts (DuckDB)", "rows"
MODES: dict[str, dict[str, Any]] = {
    COUNTS: {"kind": "files", "aggregate": True},
    ROWS: {"kind": "files", "aggregate": False},
}
ROTATED = datetime.fromisoformat(END)  # the mtime of a file no writer appends to any more


def write_files(rows: int, folder: Path, fmt: str = "parquet", parts: int = 10) -> str:
    frame = make_log(rows)
    folder.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, rows, parts + 1).astype(int)
    if fmt != "parquet":  # ISO text to the nanosecond, as a logger writes it
        frame["ts"] = np.char.add(
            np.datetime_as_string(frame["ts"].dt.tz_convert(None).to_numpy(), unit="ns"), "Z"
        )
    for i in range(parts):
        part = frame.iloc[bounds[i] : bounds[i + 1]]
        path = folder / f"predictions-{i:02d}.{fmt}"
        if fmt == "parquet":
            pq.write_table(  # microsecond timestamps: what Spark reads (DuckDB and pyarrow read both)
                pa.Table.from_pandas(part, preserve_index=False),
                path,
                coerce_timestamps="us",
                allow_truncated_timestamps=True,  # the nanoseconds bench_service draws; the same for every mode
            )
            continue
        if fmt == "csv":
            part.to_csv(path, index=False)
        else:
            part.to_json(path, orient="records", lines=True)
        if i < parts - 1:  # rotated: read in place; the newest is still being written
            os.utime(path, (ROTATED.timestamp(), ROTATED.timestamp()))
    return str(folder / f"predictions-*.{fmt}")


def write_config(glob: str, path: Path, *, source: dict[str, Any]) -> None:
    where = {"path": glob} if source["kind"] == "files" else {"path": str(Path(glob).parent)}
    model = {
        "name": "bench",
        "source": {**source, **where, "timeout": "10m"},  # the row path reads millions of text rows slowly
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [{"attribute": "identity", "kind": "indicator", "columns": list(IDENTITIES)}],
        "windows": [{"name": "24h", "length": "24h"}],
    }
    path.write_text(yaml.safe_dump({"models": [model]}))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000], help="Parquet")
    parser.add_argument("--text-rows", type=int, nargs="+", default=[1_000_000], help="CSV and JSON Lines")
    parser.add_argument("--formats", nargs="+", default=["parquet", "csv", "jsonl"])
    args = parser.parse_args()
    console = Console(stderr=True)
    table = Table(title=f"fairwatch evaluate of a 24 h window of ten files (load {os.getloadavg()[0]:.1f})")
    for col in ("format", "rows", "mode", "seconds", "peak RSS MB", "identical"):
        table.add_column(col, justify="right")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats:
            modes = MODES
            for rows in args.rows if fmt == "parquet" else args.text_rows:
                with console.status(f"writing {rows:,} rows as {fmt}"):
                    glob = write_files(rows, Path(tmp) / f"logs-{fmt}-{rows}", fmt)
                runs = {}
                for i, (mode, source) in enumerate(modes.items()):
                    config = Path(tmp) / f"{fmt}-{rows}-{i}.yaml"
                    write_config(glob, config, source=source)
                    with console.status(f"{rows:,} rows of {fmt}: fairwatch evaluate ({mode})"):
                        runs[mode] = run_cli(config)
                reference = values(runs[ROWS]["report"])
                if "reading rows, not counts" in runs[COUNTS]["log"]:
                    raise SystemExit(f"{fmt}: the count fell back to rows:\n{runs[COUNTS]['log']}")
                for mode, run in runs.items():
                    same = values(run["report"]) == reference
                    table.add_row(
                        fmt,
                        f"{rows:,}",
                        mode,
                        f"{run['seconds']:.2f}",
                        f"{run['peak_mb']:.0f}",
                        "yes" if same else "NO",
                    )
                    results[f"{fmt}/{rows}/{mode}"] = {
                        "seconds": round(run["seconds"], 3),
                        "peak_mb": round(run["peak_mb"]),
                        "identical": same,
                    }
                ratio = runs[ROWS]["seconds"] / runs[COUNTS]["seconds"]
                table.add_row("", "", "rows / counts", f"{ratio:.1f}x", "", "")
    print_table(Console(), table)
    print(json.dumps({"now": NOW.isoformat(), "load": round(os.getloadavg()[0], 2), **results}))


if __name__ == "__main__":
    main()
