"""The loan scenario (issue 22): a loan-approval model's log with one bias, for tests of what a person
reads - the report, its print, incidents.

60,000 decisions over 48 hours from 2026-03-01: ``race`` with 5 values (White 50%), ``sex`` (F, M),
judged as race vs White, sex vs M and race x sex vs the rest (15 compared groups). The approval rate
is 59% for everyone until hour 24 (ONSET), then 40% for Black applicants (an income bug): their
disparate impact falls to 0.68 - in race=Black and in race_sex=Black&F and Black&M alike.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa
import yaml

START = "2026-03-01T00:00:00Z"
END = "2026-03-03T00:00:00Z"
ONSET = "2026-03-02T00:00:00Z"
RACES = ("White", "Black", "Asian", "Hispanic", "Other")


def write_loan_config(folder: Path) -> Path:
    """The log in ``folder/loans.db`` and its config ``folder/fairwatch.yaml`` (returned)."""
    rng = np.random.default_rng(22)
    n = 60_000
    start = pd.Timestamp(START)
    ts = start + pd.to_timedelta(np.sort(rng.uniform(0, 48 * 3600, n)), unit="s")
    race = rng.choice(RACES, n, p=[0.5, 0.2, 0.12, 0.13, 0.05])
    sex = rng.choice(["F", "M"], n)
    approve = 0.59 - np.where((race == "Black") & (ts >= pd.Timestamp(ONSET)), 0.19, 0.0)
    frame = pd.DataFrame(
        {
            "id": np.arange(n),
            "ts": ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "approved": (rng.random(n) < approve).astype(int),
            "race": race,
            "sex": sex,
        }
    )
    url = f"sqlite:///{folder / 'loans.db'}"
    engine = sa.create_engine(url)
    frame.to_sql("decisions", engine, index=False)
    engine.dispose()
    config = {
        "models": [
            {
                "name": "loans",
                "source": {"kind": "sql", "url": url, "table": "decisions"},
                "columns": {
                    "id": "id",
                    "timestamp": "ts",
                    "prediction": "approved",
                    "score": None,
                    "label": None,
                },
                "groups": [
                    {"attribute": "race", "kind": "categorical", "column": "race", "reference": "White"},
                    {"attribute": "sex", "kind": "categorical", "column": "sex", "reference": "M"},
                    {
                        "attribute": "race_sex",
                        "kind": "intersection",
                        "columns": ["race", "sex"],
                        "reference": "rest",
                    },
                ],
                "wording": {"outcome": "approval", "subjects": "applicants"},
                "windows": [{"name": "1d", "length": "1d"}],
                "metrics": ["disparate_impact", "statistical_parity_difference", "four_fifths_ratio"],
            }
        ]
    }
    path = folder / "fairwatch.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def write_loan_report(folder: Path, step: str = "6h") -> Path:
    """``fairwatch report`` of the scenario over its two days, every ``step``: ``folder/report.html``."""
    config = write_loan_config(folder)
    report = folder / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "report", "--config", str(config), "--start", START,
         "--end", END, "--step", step, "-o", str(report)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return report
