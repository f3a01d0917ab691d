"""Start-up cost: how long ``import metrics_core`` and the light CLI commands take, in fresh processes.

Every command runs ``--repeat`` times in a new interpreter (the import cache is the OS's page
cache, as for a user); the table shows the median and the spread, and the baseline measured
in the same run: an interpreter that only imports numpy (metrics_core cannot be lighter than
numpy). It also checks which heavy libraries each command pulls in: scikit-learn and scipy
must stay out of ``import metrics_core`` (they are imported inside the functions that use them).

    .venv/bin/python benchmarks/bench_imports.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from monitor.cli.terminal import print_table

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("sklearn", "scipy", "pandas", "sqlalchemy", "pyarrow", "apscheduler", "pydantic")

_PROBE = """
import sys, time
t0 = time.perf_counter()
{statement}
elapsed = time.perf_counter() - t0
import json
print(json.dumps({{"seconds": elapsed, "heavy": sorted(m for m in {heavy!r} if m in sys.modules)}}))
"""


def _in_process(statement: str) -> tuple[float, list[str]]:
    """Seconds the statement takes inside a fresh interpreter, and the heavy modules it loaded."""
    code = _PROBE.format(statement=statement, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return float(result["seconds"]), list(result["heavy"])


def _wall(argv: list[str]) -> float:
    """Wall-clock seconds of a whole command, interpreter start-up included."""
    t0 = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    fairwatch = str(Path(sys.executable).parent / "fairwatch")
    from monitor.cli.demo.run import write_demo_config

    config = write_demo_config(Path(tempfile.mkdtemp()), port=9810)

    rows: list[tuple[str, str, list[float], list[str]]] = []
    for label, statement in (
        ("baseline: import numpy", "import numpy"),
        ("import metrics_core", "import metrics_core"),
        ("import metrics_core; REGISTRY read", "import metrics_core as mc; mc.registry_as_dicts()"),
        ("import monitor.cli", "import monitor.cli"),
    ):
        times, heavy = [], []
        for _ in range(args.repeat):
            seconds, heavy = _in_process(statement)
            times.append(seconds)
        rows.append((label, "in process", times, heavy))
    for label, argv in (
        ("baseline: python -c pass", [sys.executable, "-c", "pass"]),
        ("fairwatch metrics --format json", [fairwatch, "metrics", "--format", "json"]),
        ("fairwatch validate --config demo", [fairwatch, "validate", "--config", str(config)]),
    ):
        rows.append((label, "wall clock", [_wall(argv) for _ in range(args.repeat)], []))

    table = Table(title=f"start-up cost (median of {args.repeat}; load {os.getloadavg()[0]:.1f})")
    for column in ("what", "measured", "median s", "min s", "max s", "heavy modules loaded"):
        table.add_column(column, justify="right" if column.endswith(" s") else "left")
    for label, how, times, heavy in rows:
        table.add_row(
            label,
            how,
            f"{statistics.median(times):.3f}",
            f"{min(times):.3f}",
            f"{max(times):.3f}",
            ", ".join(heavy) or "-",
        )
    print_table(Console(), table)
    base = statistics.median(rows[0][2])
    mc = statistics.median(rows[1][2])
    print(f"import metrics_core costs {mc - base:.3f} s beyond numpy ({mc / base:.1f}x numpy's own import)")


if __name__ == "__main__":
    main()
