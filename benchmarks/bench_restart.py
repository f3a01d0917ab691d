"""The first ticks of a restarted service: sealed panes kept on disk (``panes.directory``) vs memory only.

The log, the stores and the model are :mod:`bench_ticks`' (a 24 h window, ``--per-day`` rows per
day, SQLite ISO text declared ``iso_utc`` and, with ``--postgres``, PostgreSQL). A first run
evaluates two ticks with a panes directory (the second counts and writes every sealed pane); then
a minute's rows are appended and two fresh evaluators - a restart - evaluate the next two ticks:
one with the directory the first run wrote, one with panes in memory only (its first tick reads
the whole window, its second counts every pane). Both are compared with a whole read at each
tick. The last line is one JSON object.

    python benchmarks/bench_restart.py [--per-day 1000000] [--postgres]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
from bench_ticks import FIRST_TICK, evaluator, make_log, sqlite_store, stores_postgres, values
from rich.console import Console
from rich.table import Table

from monitor.cli.terminal import print_table


def run(
    name: str, source: dict[str, Any], append: Callable[[pd.DataFrame], None], log: pd.DataFrame, folder: Path
) -> dict[str, Any]:
    append(log[log["ts"] < FIRST_TICK])
    directory = folder / f"panes-{name}"
    first = evaluator(source, True, directory)
    for minute in (0, 1):
        first.evaluate(FIRST_TICK + timedelta(minutes=minute))
    first.source.close()
    files = list(directory.rglob("*.arrow"))
    ticks = [FIRST_TICK + timedelta(minutes=minute) for minute in (2, 3)]
    append(log[(log["ts"] >= FIRST_TICK) & (log["ts"] < ticks[0])])
    whole = evaluator(source, False)
    reference = [values(whole.evaluate(tick)) for tick in ticks]
    whole.source.close()
    out: dict[str, Any] = {"store": name, "files": len(files), "bytes": sum(f.stat().st_size for f in files)}
    for kind, kept in (("directory", directory), ("memory", None)):
        restarted = evaluator(source, True, kept)
        seconds, pieces, identical = [], [], True
        for tick, expected in zip(ticks, reference, strict=True):
            t0 = time.perf_counter()
            result = restarted.evaluate(tick)
            seconds.append(round(time.perf_counter() - t0, 3))
            pieces.append(result.pieces_read)
            identical = identical and values(result) == expected
        restarted.source.close()
        out[kind] = {"seconds": seconds, "statements": pieces, "identical": identical}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-day", type=int, default=1_000_000)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    log = make_log(args.per_day, 10)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        source, append = sqlite_store(Path(tmp))
        results.append(run("sqlite", source, append, log, Path(tmp)))
        if args.postgres:
            with stores_postgres() as (url, engine):

                def append_pg(rows: pd.DataFrame) -> None:
                    rows.to_sql("predictions", engine, index=False, if_exists="append", chunksize=100_000)

                append_pg(log.head(0))
                with engine.begin() as conn:
                    conn.exec_driver_sql("CREATE INDEX ON predictions (ts)")
                pg_source = {"kind": "sql", "url": url, "table": "predictions"}
                results.append(run("postgresql", pg_source, append_pg, log, Path(tmp)))
    table = Table(title=f"the first two ticks after a restart, 24 h window, {args.per_day:,} rows/day")
    for column in ("store", "files", "on disk", "directory: ticks", "memory only: ticks", "identical"):
        table.add_column(column, justify="right")
    for r in results:
        table.add_row(
            r["store"],
            str(r["files"]),
            f"{r['bytes'] / 1e6:.1f} MB",
            " / ".join(f"{s:.2f} s" for s in r["directory"]["seconds"]),
            " / ".join(f"{s:.2f} s" for s in r["memory"]["seconds"]),
            str(r["directory"]["identical"] and r["memory"]["identical"]),
        )
    print_table(Console(), table)
    print(json.dumps({"per_day": args.per_day, "results": results}))


if __name__ == "__main__":
    main()
