"""The shapes users log, measured as users run fairwatch: one ``fairwatch evaluate`` per shape and store.

Shapes (``shapes.py``): a loan model with float64 probabilities and categorical / intersectional
groups (``loan``), a 2,000-value Zipf categorical (``zipf``; ``zipf-60``: 60 values), many models in one log told apart by a
``model`` column (``models``: all of them, and one with ``--model``), a Jigsaw-like log with nine REAL
identity columns NULL where not annotated (``jigsaw``), and the same with raw float scores
(``raw``). Stores: SQLite (ISO text timestamps, an index on the timestamp - and on (model, ts) for
``models``), Parquet, and with ``--postgres`` a throw-away PostgreSQL cluster (timestamptz).

Each run is the real CLI in a fresh process - start-up, imports, the read and every metric -
``fairwatch evaluate --config F --start S --end E --format json``: the default (counted), and the row
path in the same run as the baseline (``aggregate: false``), whose JSON report the default's must
equal value for value. Reports wall time, the process's peak RSS and the load average. The last line
is one JSON object.

A whole process is mostly start-up at these sizes, so two things are fixed before measuring: the
project's modules are compiled to bytecode first, as ``pip install`` does for an installed wheel
(an editable checkout under ``PYTHONDONTWRITEBYTECODE=1`` would compile ~60 modules from source in
every run), and the title prints the *import floor*: the median time of a fresh interpreter that
only imports pandas, SQLAlchemy, pyarrow and pydantic - what any whole-process figure on this
host contains before fairwatch reads a row. ``--repeat N`` runs every ``fairwatch evaluate`` N
times and reports the median (and the fastest).

    python benchmarks/bench_shapes.py [--shapes loan zipf zipf-60 models jigsaw raw] [--postgres] [--quick]
    python benchmarks/bench_shapes.py --shapes loan --postgres --repeat 5
    python benchmarks/bench_shapes.py --service 600   # fairwatch run: 50 models of one log, every minute

``--service SECONDS`` runs the service itself (``fairwatch run``, a real process) on the ``models`` shape at
``interval: 60s`` and reads its ``/metrics`` every 2 s: every model's evaluations, the time between two
successes of one model (median and longest, from each model's second on; the start apart: each model's first
success after the process started and the gap to its second), the oldest last success (how stale the
stalest model got) and the ticks skipped.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import itertools
import json
import os
import secrets
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from bench_counts import run_cli, values
from shapes import END, jigsaw_log, loan_log, many_models, zipf_log

from monitor.cli.terminal import print_table

# shape -> (store names, rows, builder): the sizes the targets of issue 20 name
SHAPES: dict[str, tuple[tuple[str, ...], int, Callable[[int], tuple[pd.DataFrame, Any]]]] = {
    "loan": (("sqlite", "parquet", "postgresql"), 200_000, loan_log),
    "loan-1m": (("parquet",), 1_000_000, loan_log),
    "zipf": (("parquet",), 1_000_000, zipf_log),
    "zipf-60": (("sqlite", "parquet", "postgresql"), 200_000, lambda rows: zipf_log(rows, values=60)),
    "models": (("sqlite", "parquet"), 40_000, lambda rows: many_models(50, rows)),
    "jigsaw": (("sqlite",), 2_000_000, jigsaw_log),
    "raw": (("sqlite", "parquet"), 2_000_000, lambda rows: jigsaw_log(rows, decimals=None)),
}
QUICK = {
    "loan": 50_000,
    "loan-1m": 200_000,
    "zipf": 200_000,
    "zipf-60": 50_000,
    "models": 4_000,
    "jigsaw": 200_000,
    "raw": 200_000,
}


def compile_bytecode() -> None:
    """The project's modules as an installed wheel has them: compiled (written even where
    ``PYTHONDONTWRITEBYTECODE`` is set; ``__pycache__`` is ignored by git)."""
    root = Path(__file__).resolve().parent.parent
    for package in ("monitor", "metrics_core"):
        compileall.compile_dir(root / package, quiet=1)


def import_floor(repeat: int = 5) -> float:
    """Median seconds of a fresh interpreter importing only the libraries every evaluate loads."""
    script = "import pandas, sqlalchemy, pyarrow.dataset, pydantic"
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", script], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def timed(config: Path, extra: list[str], repeat: int) -> dict[str, Any]:
    """``run_cli`` ``repeat`` times: the first run's report, the median and fastest seconds, the
    largest peak RSS."""
    runs = [run_cli(config, extra) for _ in range(repeat)]
    seconds = [r["seconds"] for r in runs]
    return runs[0] | {
        "seconds": statistics.median(seconds),
        "fastest": min(seconds),
        "peak_mb": max(r["peak_mb"] for r in runs),
    }


def write_sqlite(frame: pd.DataFrame, db: Path) -> str:
    text = frame.assign(ts=frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    with sqlite3.connect(db) as conn:
        text.to_sql("predictions", conn, index=False, chunksize=100_000)
        conn.execute("CREATE INDEX predictions_ts ON predictions (ts)")
        if "model" in frame.columns:
            conn.execute("CREATE INDEX predictions_model_ts ON predictions (model, ts)")
    return f"sqlite:///{db}"


def write_parquet(frame: pd.DataFrame, path: Path) -> str:
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=200_000)
    return str(path)


def write_postgres(frame: pd.DataFrame, url: str) -> str:
    import psycopg
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    frame.head(0).to_sql("predictions", engine, index=False, if_exists="replace")
    engine.dispose()
    plain = sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as conn:
        with conn.cursor().copy("COPY predictions FROM STDIN") as copy:
            for row in frame.itertuples(index=False):
                copy.write_row(row)
        conn.execute("CREATE INDEX predictions_ts ON predictions (ts)")
        if "model" in frame.columns:
            conn.execute("CREATE INDEX predictions_model_ts ON predictions (model, ts)")
        conn.execute("ANALYZE predictions")
    return url


def write(store: str, frame: pd.DataFrame, stem: Path, postgres: str | None) -> str:
    """The log written to ``store``; its URL or path."""
    if store == "sqlite":
        return write_sqlite(frame, stem.with_suffix(".db"))
    if store == "parquet":
        return write_parquet(frame, stem.with_suffix(".parquet"))
    assert postgres is not None
    return write_postgres(frame, postgres)


def source_of(store: str, target: str, *, rows_path: bool) -> dict[str, Any]:
    extra = {"aggregate": False} if rows_path else {}
    if store == "parquet":
        return {"kind": "files", "path": target, "format": "parquet", **extra}
    source = {"kind": "sql", "url": target, "table": "predictions", **extra}
    return source | ({"timestamp_format": "iso_utc"} if store == "sqlite" else {})


def write_config(configs: list[dict[str, Any]], source: dict[str, Any], path: Path) -> Path:
    path.write_text(yaml.safe_dump({"models": [c | {"source": source} for c in configs]}))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--stores", nargs="+", default=["sqlite", "parquet", "postgresql"])
    parser.add_argument("--postgres", action="store_true", help="also a throw-away local PostgreSQL cluster")
    parser.add_argument("--quick", action="store_true", help="small sizes, to try the script")
    parser.add_argument("--no-baseline", action="store_true", help="skip the row path (no equality check)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per evaluate (the median is shown)")
    parser.add_argument(
        "--service", type=float, metavar="SECONDS", help="run the service on the models shape"
    )
    args = parser.parse_args()
    if args.service:
        service(args.service, quick=args.quick)
        return
    console = Console(stderr=True)
    compile_bytecode()
    floor = import_floor()
    load = os.getloadavg()
    table = Table(
        title=f"fairwatch evaluate of users' shapes (load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"import floor {floor:.2f} s; median of {args.repeat})"
    )
    for col in ("shape", "store", "rows", "run", "seconds", "fastest", "peak RSS MB", "identical"):
        table.add_column(col, justify="right")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, postgres_url(args.postgres) as pg:
        folder = Path(tmp)
        for shape in args.shapes:
            stores, rows, build = SHAPES[shape]
            rows = QUICK[shape] if args.quick else rows
            with console.status(f"{shape}: generating {rows:,} rows"):
                frame, configs = build(rows)
            configs = configs if isinstance(configs, list) else [configs]
            for store in stores:
                if store not in args.stores or (store == "postgresql" and pg is None):
                    continue
                with console.status(f"{shape}: writing {len(frame):,} rows to {store}"):
                    target = write(store, frame, folder / shape, pg)
                runs: list[tuple[str, list[str]]] = [("counted", [])]
                if shape == "models":
                    runs.append(("one model", ["--model", configs[0]["name"]]))
                reference = None
                if not args.no_baseline:
                    config = write_config(
                        configs, source_of(store, target, rows_path=True), folder / "rows.yaml"
                    )
                    with console.status(f"{shape} on {store}: fairwatch evaluate (rows: the baseline)"):
                        base = timed(config, [], args.repeat)
                    reference = values(base["report"])
                    runs_done = {"rows (baseline)": (base, None)}
                else:
                    runs_done = {}
                config = write_config(
                    configs, source_of(store, target, rows_path=False), folder / "counted.yaml"
                )
                for name, extra in runs:
                    with console.status(f"{shape} on {store}: fairwatch evaluate ({name})"):
                        run = timed(config, extra, args.repeat)
                    same = None
                    if reference is not None:
                        wanted = extra[-1] if extra else None
                        expected = [r for r in reference if wanted is None or r.get("model") == wanted]
                        same = values(run["report"]) == expected
                    runs_done[name] = (run, same)
                for name, (run, same) in runs_done.items():
                    identical = "-" if same is None else "yes" if same else "NO"
                    table.add_row(
                        shape,
                        store,
                        f"{len(frame):,}",
                        name,
                        f"{run['seconds']:.2f}",
                        f"{run['fastest']:.2f}",
                        f"{run['peak_mb']:.0f}",
                        identical,
                    )
                    results[f"{shape}/{store}/{name}"] = {
                        "seconds": round(run["seconds"], 3),
                        "fastest": round(run["fastest"], 3),
                        "peak_mb": round(run["peak_mb"]),
                        "identical": same,
                    }
    print_table(Console(), table)
    summary = {"load": [round(x, 2) for x in load], "import_floor": round(floor, 3), "repeat": args.repeat}
    print(json.dumps(summary | results))


def service(seconds: float, *, quick: bool) -> None:
    """``fairwatch run`` on 50 models of one SQLite log at ``interval: 60s``, watched through /metrics."""
    import socket
    import subprocess
    import time
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    frame, configs = many_models(50, QUICK["models"] if quick else SHAPES["models"][1])
    # the log's day is today's: the service evaluates windows ending now
    frame = frame.assign(ts=frame["ts"] + (pd.Timestamp.now(tz="UTC").floor("h") - pd.Timestamp(END)))
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        url = write_sqlite(frame, Path(tmp) / "models.db")
        config = Path(tmp) / "fairwatch.yaml"
        models = [
            c | {"source": source_of("sqlite", url, rows_path=False), "interval": "60s"} for c in configs
        ]
        config.write_text(yaml.safe_dump({"models": models, "server": {"port": port}}))
        fairwatch = Path(sys.executable).with_name("fairwatch")
        log = (Path(tmp) / "run.log").open("w")
        process = subprocess.Popen([str(fairwatch), "run", "--config", str(config)], stdout=log, stderr=log)
        started = time.time()
        began, worst_age, samples = time.monotonic(), 0.0, 0
        # only the families read here: parsing the whole exposition (20 MB for 50 models) every 2 s
        # would take a core from the service being measured
        wanted = "&".join(
            f"name[]=fairwatch_{name}"
            for name in (
                "last_evaluation_success_timestamp_seconds",
                "evaluations_total",
                "evaluation_skipped_total",
                "evaluation_failures_total",
            )
        )
        successes: dict[str, set[float]] = {}  # each model's evaluations' end times, as /metrics said them
        families: dict[str, Any] = {}
        try:
            while time.monotonic() - began < seconds:
                time.sleep(2)
                try:
                    text = (
                        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics?{wanted}", timeout=10)
                        .read()
                        .decode()
                    )
                except OSError:
                    continue
                families = {f.name: f for f in text_string_to_metric_families(text)}
                success = families.get("fairwatch_last_evaluation_success_timestamp_seconds")
                for s in success.samples if success else ():
                    successes.setdefault(s.labels["model"], set()).add(s.value)
                if success and len(success.samples) == len(configs) and time.monotonic() - began > 70:
                    worst_age = max(worst_age, time.time() - min(s.value for s in success.samples))
                    samples += 1
        finally:
            process.terminate()
            process.wait(timeout=60)
            log.close()
        runs = {
            s.labels["model"]: s.value
            for s in families["fairwatch_evaluations"].samples
            if s.name.endswith("_total")
        }
        skipped = families.get("fairwatch_evaluation_skipped")
        skips = sum(s.value for s in skipped.samples if s.name.endswith("_total")) if skipped else 0
        failures = sum(
            s.value for s in families["fairwatch_evaluation_failures"].samples if s.name.endswith("_total")
        )
        warnings = [line for line in (Path(tmp) / "run.log").read_text().splitlines() if " WARNING " in line]
    load = os.getloadavg()
    # from each model's second success on (the first round reads whole windows, the second builds panes)
    gaps = [b - a for times in successes.values() for a, b in itertools.pairwise(sorted(times)[1:])]
    # the start: each model's first success after the process started, and its first gap
    firsts = [min(times) - started for times in successes.values()]
    first_gaps = [sorted(times)[1] - min(times) for times in successes.values() if len(times) > 1]
    result = {
        "models": len(configs),
        "rows": len(frame),
        "seconds": seconds,
        "evaluations_min": min(runs.values()),
        "evaluations_max": max(runs.values()),
        "first_success_max_seconds": round(max(firsts), 1) if firsts else None,
        "first_gap_max_seconds": round(max(first_gaps), 1) if first_gaps else None,
        "gap_median_seconds": round(statistics.median(gaps), 1) if gaps else None,
        "gap_max_seconds": round(max(gaps), 1) if gaps else None,
        "stalest_last_success_seconds": round(worst_age, 1),
        "samples": samples,
        "skipped_ticks": skips,
        "failures": failures,
        "warnings_logged": len(warnings),
        "load": [round(x, 2) for x in load],
    }
    print_table(
        Console(), one_row_table(f"fairwatch run, {len(configs)} models of one log, every 60 s", result)
    )
    for line in warnings:
        print(line)
    print(json.dumps(result))


def one_row_table(title: str, row: dict[str, Any]) -> Table:
    """A table of one row: its keys the columns."""
    table = Table(title=title)
    for key in row:
        table.add_column(key, justify="right")
    table.add_row(*(str(v) for v in row.values()))
    return table


@contextlib.contextmanager
def postgres_url(wanted: bool) -> Iterator[str | None]:
    if not wanted:
        yield None
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.servers import TempPostgres

    cluster = TempPostgres()
    try:
        cluster.init()
        cluster.start()
        password = secrets.token_hex(16)
        cluster.create_database("fairwatch", password, "bench")
        yield f"postgresql+psycopg://fairwatch:{password}@127.0.0.1:{cluster.port}/bench"
    finally:
        cluster.stop_and_remove()


if __name__ == "__main__":
    main()
