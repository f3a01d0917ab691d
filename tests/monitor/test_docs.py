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
from monitor.cli.demo.run import write_demo_log
from monitor.config import load_settings
from monitor.evaluation.evaluators import build_evaluators
from monitor.outputs.metrics_doc import render_metrics_reference

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


def _documented_queries() -> dict[str, str]:
    """docs/prometheus.md's "Useful queries": {comment: PromQL}."""
    text = (ROOT / "docs" / "prometheus.md").read_text(encoding="utf-8")
    block = re.search(r"## Useful queries\s+```promql\n(.*?)```", text, re.S)
    assert block is not None
    queries: dict[str, str] = {}
    comment = ""
    for line in block.group(1).splitlines():
        if line.startswith("#"):
            comment = line.lstrip("# ")
            queries[comment] = ""
        else:
            queries[comment] += line + "\n"
    return queries


@pytest.mark.integration
def test_documented_fair_range_queries_compare(tmp_path: Path) -> None:
    """The fair-range queries of docs/prometheus.md, run by promtool's PromQL engine: one group below
    its bound, one above, another window and another metric's bound that must not match."""
    from tests.servers import promtool_bin

    queries = [q for comment, q in _documented_queries().items() if "fair range" in comment]
    assert len(queries) == 2
    below, distance = queries
    labels = 'job="fairwatch",instance="fw:9810",model="toxicity",attribute="identity",reference="background"'

    def series(name: str, extra: str, value: float) -> dict[str, str]:
        return {"series": f"{name}{{{extra},{labels}}}", "values": f"{value}x5"}

    muslim, jewish = 'window="24h",group="muslim"', 'window="24h",group="jewish"'
    test = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    series("fairwatch_bpsn_auc", muslim, 0.75),
                    series("fairwatch_bpsn_auc", jewish, 0.875),
                    series("fairwatch_bpsn_auc", 'window="1h",group="muslim"', 0.5),
                    series("fairwatch_metric_fair_min", f'metric="bpsn_auc",{muslim}', 0.8125),
                    series("fairwatch_metric_fair_min", f'metric="bpsn_auc",{jewish}', 0.8125),
                    series("fairwatch_metric_fair_min", 'metric="bpsn_auc",window="1h",group="muslim"', 0.25),
                    series("fairwatch_metric_fair_min", f'metric="subgroup_auc",{jewish}', 0.9),
                ],
                "promql_expr_test": [
                    {
                        "expr": below,
                        "eval_time": "2m",
                        "exp_samples": [
                            {"labels": f"fairwatch_bpsn_auc{{{muslim},{labels}}}", "value": 0.75}
                        ],
                    },
                    {
                        "expr": distance,
                        "eval_time": "2m",
                        "exp_samples": [
                            {"labels": f"{{{muslim},{labels}}}", "value": -0.0625},
                            {"labels": f"{{{jewish},{labels}}}", "value": 0.0625},
                        ],
                    },
                ],
            }
        ],
    }
    path = tmp_path / "queries_test.yml"
    path.write_text(json.dumps(test), encoding="utf-8")  # JSON is YAML
    result = subprocess.run(
        [promtool_bin(), "test", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
