"""Counts, not rows: one ``fairwatch evaluate`` of a window, counted by the database vs read as rows.

Writes the Jigsaw-style log of ``bench_service.py`` (nine identity columns, rounded scores, an
index on the timestamps) to SQLite (ISO text timestamps), with ``--postgres`` to a
throw-away PostgreSQL cluster (timestamptz) and with ``--duckdb`` to a DuckDB database file
(TIMESTAMP WITH TIME ZONE, read through duckdb-engine), then runs the real CLI, ``fairwatch evaluate
--config F --start S --end E --format json``, in a fresh process for each mode - start-up,
imports, the read and every metric included: the default (``aggregate: true``: one ``GROUP BY``
in the database), every row read as Arrow columns (``aggregate: false``; ADBC), and every row
read by ``pandas.read_sql`` (``aggregate: false, arrow: false``: the baseline). Reports wall
time, the process's peak RSS, the rows the database returned, and whether the JSON reports
are identical value for value. The last line is one JSON object.

    python benchmarks/bench_counts.py [--rows 1000000 2000000] [--postgres] [--duckdb]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from monitor.cli.terminal import print_table

sys.path.insert(0, str(Path(__file__).parent))
from bench_service import NOW, make_log

from monitor.cli.demo.run import IDENTITIES

START, END = "2026-11-21T00:00:00Z", "2026-11-22T00:00:00Z"


def write_log(rows: int, db: Path) -> None:
    frame = make_log(rows)
    frame = frame.assign(ts=frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"))
    with sqlite3.connect(db) as conn:
        frame.to_sql("predictions", conn, index=False, chunksize=100_000)
        conn.execute("CREATE INDEX predictions_ts ON predictions (ts)")


def write_postgres(rows: int, url: str) -> None:
    """The same log in PostgreSQL, timestamps as timestamptz, loaded with COPY."""
    import psycopg
    import sqlalchemy as sa

    frame = make_log(rows)
    engine = sa.create_engine(url)
    frame.head(0).to_sql("predictions", engine, index=False, if_exists="replace")
    engine.dispose()
    plain = sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as conn:
        with conn.cursor().copy("COPY predictions FROM STDIN") as copy:
            for row in frame.itertuples(index=False):
                copy.write_row(row)
        conn.execute("CREATE INDEX predictions_ts ON predictions (ts)")
        conn.execute("ANALYZE predictions")


def write_duckdb(rows: int, db: Path) -> None:
    """The same log in a DuckDB database file, timestamps as TIMESTAMP WITH TIME ZONE."""
    import duckdb

    frame = make_log(rows)
    with duckdb.connect(str(db)) as conn:
        conn.register("frame", frame)
        conn.execute("CREATE TABLE predictions AS SELECT * FROM frame")


MODES = {
    "counts": {},
    "rows (Arrow)": {"aggregate": False},
    "rows (pandas)": {"aggregate": False, "arrow": False},
}


def write_config(url: str, path: Path, *, mode: str) -> None:
    model = {
        "name": "bench",
        "source": {"kind": "sql", "url": url, "table": "predictions", **MODES[mode]},
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


def run_cli(config: Path, extra: list[str] | None = None) -> dict[str, Any]:
    """One ``fairwatch evaluate`` in a fresh process: seconds, peak RSS (MB) and its JSON report
    (``extra``: more arguments, such as ``--model``)."""
    fairwatch = Path(sys.executable).with_name("fairwatch")  # the console script, as users run it
    command = [sys.executable, "-S", "-c", _LAUNCHER, str(fairwatch), "evaluate", "--config", str(config)]
    command += ["--start", START, "--end", END, "--format", "json", *(extra or [])]
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"fairwatch evaluate failed for {config}")
    log = done.stderr.decode()
    peak_kb = int(log.split()[-1])
    return {"seconds": seconds, "peak_mb": peak_kb / 1024, "report": json.loads(done.stdout), "log": log}


def returned_rows(url: str) -> tuple[int, int]:
    """(rows in the window, rows the GROUP BY returns), from the source's own statement."""
    from datetime import datetime

    from monitor.config import load_settings
    from monitor.reading.plan import count_request
    from monitor.sources.sql.source import SqlSource

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "c.yaml"
        write_config(url, config, mode="counts")
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
    parser.add_argument("--postgres", action="store_true", help="also a throw-away local PostgreSQL cluster")
    parser.add_argument("--only-postgres", action="store_true", help="PostgreSQL only (implies --postgres)")
    parser.add_argument("--duckdb", action="store_true", help="also a DuckDB database file (duckdb-engine)")
    parser.add_argument(
        "--modes",
        nargs="+",
        default=list(MODES),
        choices=list(MODES),
        help="(default: all; reports are compared with the last, the baseline)",
    )
    args = parser.parse_args()
    console = Console(stderr=True)
    results: dict[str, Any] = {}
    table = Table(title=f"fairwatch evaluate of a 24 h window (load {os.getloadavg()[0]:.1f})")
    for col in ("store", "rows", "mode", "seconds", "peak RSS MB", "rows returned", "identical"):
        table.add_column(col, justify="right")
    postgres = args.postgres or args.only_postgres
    with tempfile.TemporaryDirectory() as tmp, stores(Path(tmp), postgres, args.duckdb) as urls:
        for store, url_for in urls.items():
            if args.only_postgres and store != "postgresql":
                continue
            for rows in args.rows:
                with console.status(f"writing {rows:,} rows to {store}"):
                    url = url_for(rows)
                runs = {}
                for mode in args.modes:
                    config = Path(tmp) / f"{store}-{mode.split()[-1].strip('()')}-{rows}.yaml"
                    write_config(url, config, mode=mode)
                    with console.status(f"{store}, {rows:,} rows: fairwatch evaluate ({mode})"):
                        runs[mode] = run_cli(config)
                in_window, returned = returned_rows(url)
                reference = values(runs[args.modes[-1]]["report"])
                for mode, run in runs.items():
                    same = values(run["report"]) == reference
                    table.add_row(
                        store,
                        f"{rows:,}",
                        mode,
                        f"{run['seconds']:.2f}",
                        f"{run['peak_mb']:.0f}",
                        f"{returned:,}" if mode == "counts" else f"{in_window:,}",
                        "yes" if same else "NO",
                    )
                    results[f"{store}/{rows}/{mode}"] = {
                        "seconds": round(run["seconds"], 3),
                        "peak_mb": round(run["peak_mb"]),
                        "identical": same,
                    }
                baseline = args.modes[-1]
                base = runs[baseline]["seconds"]
                ratios = ", ".join(
                    f"{m}: {base / r['seconds']:.1f}x" for m, r in runs.items() if m != baseline
                )
                table.add_row("", "", f"vs {baseline}", ratios, "", "", "")
                results[f"{store}/{rows}"] = {"rows_in_window": in_window, "rows_returned": returned}
    print_table(Console(), table)
    print(json.dumps({"now": NOW.isoformat(), "load": round(os.getloadavg()[0], 2), **results}))


@contextlib.contextmanager
def stores(folder: Path, postgres: bool, duckdb: bool) -> Iterator[dict[str, Callable[[int], str]]]:
    """Where the log is written, by store: a function from a size to the SQLAlchemy URL holding it."""

    def sqlite_url(rows: int) -> str:
        db = folder / f"log-{rows}.db"
        write_log(rows, db)
        return f"sqlite:///{db}"

    def duckdb_url(rows: int) -> str:
        db = folder / f"log-{rows}.duckdb"
        write_duckdb(rows, db)
        return f"duckdb:///{db}"

    urls: dict[str, Callable[[int], str]] = {"sqlite": sqlite_url}
    if duckdb:
        urls["duckdb"] = duckdb_url
    if not postgres:
        yield urls
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.servers import TempPostgres

    cluster = TempPostgres()
    try:
        cluster.init()
        cluster.start()
        password = secrets.token_hex(16)
        cluster.create_database("fairwatch", password, "bench")
        base = f"postgresql+psycopg://fairwatch:{password}@127.0.0.1:{cluster.port}/bench"

        def postgres_url(rows: int) -> str:
            write_postgres(rows, base)
            return base

        urls["postgresql"] = postgres_url
        yield urls
    finally:
        cluster.stop_and_remove()


if __name__ == "__main__":
    main()
