"""The docs stay true: the metrics page is the registry's, the documented example config runs."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from metrics_core import REGISTRY
from monitor.config import load_settings
from monitor.demo import write_demo_log
from monitor.evaluation import build_evaluators
from monitor.reference import render_metrics_reference

ROOT = Path(__file__).resolve().parents[2]


def test_metrics_page_matches_the_registry() -> None:
    page = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    assert page == render_metrics_reference(), (
        "regenerate: fairwatch metrics --format markdown > docs/metrics.md"
    )
    for name, spec in REGISTRY.items():
        assert f"`{name}`" in page
        assert spec.source.replace("|", "\\|") in page


def test_metrics_json_lists_every_metric() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "metrics", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = json.loads(out.stdout)
    assert [r["name"] for r in rows] == list(REGISTRY)
    for r in rows:
        assert {"name", "family", "ideal", "fair_min", "fair_max", "source"} <= r.keys()
    di = next(r for r in rows if r["name"] == "disparate_impact")
    assert (di["fair_min"], di["fair_max"]) == (0.8, 1.25)


def test_documented_example_config_runs(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.*?)```", text, re.S)
    assert block is not None
    now = datetime.now(UTC).replace(microsecond=0)
    write_demo_log(tmp_path / "predictions.db", start=now - timedelta(hours=3), rows_per_hour=2000)
    cfg = tmp_path / "example.yaml"
    cfg.write_text(block.group(1))
    settings = load_settings(cfg)
    ev = build_evaluators(settings)["toxicity"].evaluate(now)
    assert [w.window for w in ev.windows] == ["1h", "24h"]
    assert ev.windows[1].n_rows > 0
    with sqlite3.connect(tmp_path / "predictions.db") as conn:
        total = conn.execute("SELECT COUNT(*) FROM predictions WHERE ts < ?", (now.isoformat(),)).fetchone()[
            0
        ]
    assert ev.windows[1].n_rows == pytest.approx(total, abs=0)
