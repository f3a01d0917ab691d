"""Spark local vs DuckDB: one Parquet window counted by a ``kind: spark`` source, by DuckDB, and read as rows.

Writes the Jigsaw-style log of ``bench_service.py`` as ten Parquet files (``bench_files.py``),
then

- runs the real CLI, ``fairwatch evaluate``, in a fresh process per mode - start-up included:
  counted by DuckDB (a ``kind: files`` source, the default), read as rows by pyarrow
  (``aggregate: false``) and counted by Spark ``local[2]`` (``kind: spark`` on the same folder).
  Spark's JVM is a child of the CLI: its peak RSS (``VmHWM``, sampled every 0.1 s from /proc) is
  reported apart from the CLI's own (``ru_maxrss``);
- evaluates the same window ``--ticks`` times in one long-lived process per engine, as the service
  does at every tick: the first evaluation (the JVM start, for Spark) and the median of the rest -
  DuckDB with sealed panes (the default: kept counts of hours that can no longer change) and over
  the whole window, Spark over the whole window (a spark source has no sealed panes).

Reports wall time, peak RSS, and whether the JSON reports are identical value for value. The last
line is one JSON object.

    python benchmarks/bench_spark.py [--rows 1000000] [--ticks 4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from monitor.cli.terminal import print_table

sys.path.insert(0, str(Path(__file__).parent))
from bench_counts import END, run_cli, values
from bench_files import write_config, write_files
from bench_service import NOW

MODES: dict[str, dict[str, Any]] = {
    "counts (DuckDB)": {"kind": "files", "aggregate": True},
    "rows (pyarrow)": {"kind": "files", "aggregate": False},
    "counts (Spark local[2])": {"kind": "spark", "aggregate": True},
}
# the long-lived runs: (CLI mode, sealed panes). A files source keeps the counts of sealed hours and
# re-reads only what can change; a spark source counts its whole window at every tick.
TICKS: dict[str, tuple[str, bool]] = {
    "DuckDB, sealed panes (the default)": ("counts (DuckDB)", True),
    "DuckDB, whole window": ("counts (DuckDB)", False),
    "Spark local[2], whole window": ("counts (Spark local[2])", False),
}

# Evaluates one config's model at the benchmark's window end, ``ticks`` times; prints the seconds.
_TICKS = """
import json, sys, time
from datetime import datetime
from monitor.config import load_settings
from monitor.evaluation.evaluators import build_evaluators
config, end, ticks = sys.argv[1], datetime.fromisoformat(sys.argv[2]), int(sys.argv[3])
evaluator = next(iter(build_evaluators(load_settings(config)).values()))
seconds = []
for _ in range(ticks):
    t0 = time.perf_counter()
    evaluator.evaluate(end)
    seconds.append(time.perf_counter() - t0)
evaluator.source.close()
print(json.dumps(seconds))
"""


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc: the parent of each process)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


class JvmPeak:
    """The largest peak RSS (VmHWM) of any java process below a process, sampled in a thread."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_kb = pid, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.1):
            for child in descendants(self.pid):
                try:
                    status = Path(f"/proc/{child}/status").read_text()
                except OSError:
                    continue
                fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
                if fields.get("Name", "").strip() == "java" and "VmHWM" in fields:
                    self.peak_kb = max(self.peak_kb, int(fields["VmHWM"].split()[0]))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak_kb / 1024


def run_cli_with_jvm(config: Path) -> dict[str, Any]:
    """:func:`bench_counts.run_cli`, and the peak RSS of any JVM it starts (MB)."""
    box: dict[str, Any] = {}
    sampler = JvmPeak(os.getpid())  # the CLI is this process' child; the JVM its child
    try:
        box.update(run_cli(config))
    finally:
        box["jvm_mb"] = sampler.stop()
    return box


def with_panes(config: Path, out: Path, *, enabled: bool) -> Path:
    settings = yaml.safe_load(config.read_text())
    settings["models"][0]["panes"] = {"enabled": enabled}
    out.write_text(yaml.safe_dump(settings))
    return out


def warm_ticks(config: Path, ticks: int) -> list[float]:
    command = [sys.executable, "-W", "ignore", "-c", _TICKS, str(config), END, str(ticks)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"ticks failed for {config}:\n{done.stderr[-2000:]}")
    seconds: list[float] = json.loads(done.stdout.strip().splitlines()[-1])
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--ticks", type=int, default=4, help="evaluations per long-lived process")
    args = parser.parse_args()
    console = Console(stderr=True)
    load_before = os.getloadavg()[0]
    cli = Table(
        title=f"fairwatch evaluate, {args.rows:,} rows, 24 h window of Parquet files (a fresh process)"
    )
    for col in ("mode", "seconds", "CLI peak RSS MB", "JVM peak RSS MB", "identical"):
        cli.add_column(col, justify="right")
    ticks = Table(title=f"the same window evaluated {args.ticks} times in one process (as the service ticks)")
    for col in ("mode", "first s", "later ticks s (median)"):
        ticks.add_column(col, justify="right")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        with console.status(f"writing {args.rows:,} rows as Parquet"):
            glob = write_files(args.rows, Path(tmp) / "logs")
        runs, configs = {}, {}
        for i, (mode, source) in enumerate(MODES.items()):
            configs[mode] = Path(tmp) / f"{i}.yaml"
            write_config(glob, configs[mode], source=source)
            with console.status(f"fairwatch evaluate ({mode})"):
                runs[mode] = run_cli_with_jvm(configs[mode])
        for i, (label, (mode, panes)) in enumerate(TICKS.items()):
            config = with_panes(configs[mode], Path(tmp) / f"ticks-{i}.yaml", enabled=panes)
            with console.status(f"{args.ticks} ticks in one process ({label})"):
                seconds = warm_ticks(config, args.ticks)
            later = statistics.median(seconds[1:]) if len(seconds) > 1 else float("nan")
            ticks.add_row(label, f"{seconds[0]:.2f}", f"{later:.2f}")
            results[f"ticks/{label}"] = {"first": round(seconds[0], 3), "later_median": round(later, 3)}
        reference = values(runs["rows (pyarrow)"]["report"])
        for mode, run in runs.items():
            same = values(run["report"]) == reference
            jvm = f"{run['jvm_mb']:.0f}" if run["jvm_mb"] else "-"
            cli.add_row(mode, f"{run['seconds']:.2f}", f"{run['peak_mb']:.0f}", jvm, "yes" if same else "NO")
            results[f"cli/{mode}"] = {
                "seconds": round(run["seconds"], 3),
                "peak_mb": round(run["peak_mb"]),
                "jvm_peak_mb": round(run["jvm_mb"]),
                "identical": same,
            }
    spark, duck = results["ticks/Spark local[2], whole window"], results["ticks/DuckDB, whole window"]
    ratio = spark["later_median"] / duck["later_median"]
    print_table(Console(), cli)
    print_table(Console(), ticks)
    Console().print(f"a later tick of the whole window: Spark / DuckDB = {ratio:.1f}x")
    load = {"load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}
    print(json.dumps({"now": NOW.isoformat(), "rows": args.rows, **load, **results}))


if __name__ == "__main__":
    main()
