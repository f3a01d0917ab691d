"""The task families at scale: one ``fairwatch evaluate`` of a SQLite window per family and size.

Writes a log per family (four groups 40/30/20/10%, every metric of the family fed: regression
with targets, a recommender with users, items, ranks, scores and relevance, clustering with
two feature columns, multiclass with three classes) to SQLite, then runs the real CLI in a
fresh process (start-up, the read and every metric with its interval included) and reports
wall time and peak RSS. The baseline is the same CLI at ``--baseline`` (a git revision, by
default the last one whose families re-ran each statistic on row resamples), run from a
``git worktree`` of it in the same run, at the sizes in ``--baseline-rows`` (at 1 M rows it
takes minutes per family). Point values must be identical to the baseline's; intervals are
compared in the table by the largest difference of a bound relative to the interval's width.
The last line is one JSON object.

    python benchmarks/bench_families.py [--rows 200000 1000000] [--baseline 3e51a93]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from rich.console import Console
from rich.table import Table

from monitor.cli.terminal import print_table

sys.path.insert(0, str(Path(__file__).parent))
from bench_counts import _LAUNCHER

ROOT = Path(__file__).resolve().parents[1]
START, END = "2026-11-21T00:00:00Z", "2026-11-22T00:00:00Z"
FAMILIES = ("regression", "recommender", "clustering", "multiclass")
GROUPS, SHARES = np.array(["a", "b", "c", "d"]), [0.4, 0.3, 0.2, 0.1]


def make_log(family: str, rows: int, seed: int = 0) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A window of ``rows`` log rows of ``family`` and the model's ``task``/``columns``."""
    rng = np.random.default_rng(seed)
    ts = pd.Timestamp(START) + pd.to_timedelta(rng.uniform(0, 86_400, rows), unit="s")
    frame = pd.DataFrame({"id": np.arange(rows), "ts": ts.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")})
    grp = rng.choice(GROUPS, rows, p=SHARES)
    shift = (grp == "b") * 0.1
    if family == "regression":
        frame["pred"] = rng.normal(3.0, 1.0, rows) + shift
        frame["target"] = frame["pred"] + rng.normal(0.0, 1.0, rows)
        columns = {"score": "pred", "label": "target"}
    elif family == "recommender":
        user = rng.integers(0, rows // 10, rows)
        grp = GROUPS[user % 4]  # the attribute is the user's
        frame["user"] = user
        frame["item"] = rng.zipf(1.6, rows) % 5000
        frame["rank"] = rng.integers(1, 21, rows)
        frame["score"] = rng.random(rows)
        frame["relevant"] = (rng.random(rows) < 0.2).astype(int)
        columns = {"user": "user", "item": "item", "rank": "rank", "score": "score", "label": "relevant"}
    elif family == "clustering":
        frame["cluster"] = rng.integers(0, 5, rows)
        frame["f1"] = frame["cluster"] * 3.0 + rng.normal(0.0, 1.0, rows)
        frame["f2"] = rng.normal(0.0, 1.0, rows) + shift
        columns = {"cluster": "cluster", "features": ["f1", "f2"], "score": None, "label": None}
    else:
        frame["pred"] = rng.choice(["x", "y", "z"], rows)
        frame["label"] = rng.choice(["x", "y", "z"], rows)
        columns = {"prediction": "pred", "label": "label", "score": None}
    frame["grp"] = grp
    return frame, {"task": family, "columns": columns}


def write(family: str, rows: int, folder: Path) -> Path:
    frame, model = make_log(family, rows)
    db = folder / f"{family}-{rows}.db"
    with sqlite3.connect(db) as conn:
        frame.to_sql("predictions", conn, index=False, chunksize=100_000)
        conn.execute("CREATE INDEX predictions_ts ON predictions (ts)")
    config = {
        "name": family,
        "source": {"kind": "sql", "url": f"sqlite:///{db}", "table": "predictions"},
        "groups": [{"attribute": "grp", "kind": "categorical", "column": "grp", "reference": "a"}],
        "windows": [{"name": "24h", "length": "24h"}],
        **model,
    }
    config["columns"] = {"id": "id", "timestamp": "ts", **model["columns"]}
    path = folder / f"{family}-{rows}.yaml"
    path.write_text(yaml.safe_dump({"models": [config]}))
    return path


def run_cli(config: Path, pythonpath: Path | None = None) -> dict[str, Any]:
    """One ``fairwatch evaluate`` in a fresh process: seconds, peak RSS (MB) and its JSON report."""
    script = "from monitor.cli import main; raise SystemExit(main())"
    if pythonpath is not None:  # an editable install's import hook would win over PYTHONPATH: drop it
        script = (
            "import sys; sys.meta_path[:] = [f for f in sys.meta_path if not "
            f"getattr(f, '__module__', '').startswith('__editable__')]; sys.path.insert(0, {str(pythonpath)!r}); "
            + script
        )
    command = [sys.executable, "-S", "-c", _LAUNCHER, sys.executable, "-c", script, "evaluate"]
    command += ["--config", str(config), "--start", START, "--end", END, "--format", "json"]
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"fairwatch evaluate failed for {config} ({pythonpath or 'this checkout'})")
    where = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-c",
                script.replace(
                    "from monitor.cli import main; raise SystemExit(main())",
                    "import monitor, json; print(json.dumps(monitor.__file__))",
                ),
            ],
            capture_output=True,
            check=True,
        ).stdout
    )
    assert str(pythonpath or ROOT) in where, where
    return {
        "seconds": seconds,
        "peak_mb": int(done.stderr.decode().split()[-1]) / 1024,
        "report": json.loads(done.stdout),
    }


def _values(report: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, float]]:
    """The report's rows by (metric, attribute, group); null (undefined) read as NaN."""

    def number(x: Any) -> float:
        return math.nan if x is None else float(x)

    return {
        (v["metric"], v["attribute"], v["group"]): {
            k: number(v[k]) for k in ("value", "ci_lower", "ci_upper")
        }
        for v in report
    }


def compare(new: list[dict[str, Any]], old: list[dict[str, Any]]) -> tuple[bool, float]:
    """(every point value identical, largest bound difference / interval width)."""
    a, b = _values(new), _values(old)
    same = a.keys() == b.keys() and all(
        (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
        for k in a
        for x, y in [(a[k]["value"], b[k]["value"])]
    )
    worst = 0.0
    for k in a.keys() & b.keys():
        lo, hi = b[k]["ci_lower"], b[k]["ci_upper"]
        width = hi - lo
        if not (math.isfinite(width) and width > 0):
            continue
        for bound in ("ci_lower", "ci_upper"):
            x, y = a[k][bound], b[k][bound]
            if math.isfinite(x) and math.isfinite(y):
                worst = max(worst, abs(x - y) / width)
    return same, worst


def baseline_tree(revision: str, folder: Path) -> Path:
    tree = folder / "baseline"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), revision],
        check=True,
        capture_output=True,
    )
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument(
        "--baseline", default="3e51a93", help="git revision of the baseline (default: %(default)s)"
    )
    parser.add_argument("--baseline-rows", type=int, nargs="*", default=[200_000])
    args = parser.parse_args()
    console = Console(stderr=True)
    table = Table(
        title=f"fairwatch evaluate, one 24 h SQLite window per family (load {os.getloadavg()[0]:.1f})"
    )
    for col in (
        "family",
        "rows",
        "seconds",
        "peak RSS MB",
        f"baseline {args.baseline} s",
        "speed-up",
        "values",
        "max CI shift",
    ):
        table.add_column(col, justify="right")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tree = baseline_tree(args.baseline, folder) if args.baseline_rows else None
        try:
            for family in args.families:
                for rows in args.rows:
                    with console.status(f"{family}: writing {rows:,} rows"):
                        config = write(family, rows, folder)
                    with console.status(f"{family}, {rows:,} rows: fairwatch evaluate"):
                        new = run_cli(config)
                    entry: dict[str, Any] = {
                        "seconds": round(new["seconds"], 2),
                        "peak_mb": round(new["peak_mb"]),
                    }
                    cells = ["", "", "", ""]
                    if tree is not None and rows in args.baseline_rows:
                        with console.status(f"{family}, {rows:,} rows: baseline {args.baseline}"):
                            old = run_cli(config, tree)
                        same, shift = compare(new["report"], old["report"])
                        speedup = old["seconds"] / new["seconds"]
                        entry |= {
                            "baseline_seconds": round(old["seconds"], 2),
                            "identical_values": same,
                            "max_ci_shift": round(shift, 3),
                        }
                        cells = [
                            f"{old['seconds']:.2f}",
                            f"{speedup:.1f}x",
                            "same" if same else "DIFFER",
                            f"{shift:.0%}",
                        ]
                    table.add_row(
                        family, f"{rows:,}", f"{new['seconds']:.2f}", f"{new['peak_mb']:.0f}", *cells
                    )
                    results[f"{family}/{rows}"] = entry
        finally:
            if tree is not None:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False
                )
    print_table(Console(), table)
    print(json.dumps({"load": round(os.getloadavg()[0], 2), "baseline": args.baseline, **results}))


if __name__ == "__main__":
    main()
