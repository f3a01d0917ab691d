"""The dashboards' queries against the series the service really exposes.

A binary model is evaluated by the real service (:func:`monitor.app.build_app` over an in-memory
log, biased so that alerts fire, with an invalid score, rows without a group and a group under
``min_size``), and the exposition text of its registry - what ``/metrics`` serves - becomes
promtool's input series. Every query of the model's dashboard and of the shipped one (panels,
alert annotations, variables) is then evaluated by promtool's PromQL engine, and each must
return data: a misspelt family or label, or a filter that excludes everything, fails.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from metrics_core import REGISTRY
from monitor.app import build_app
from monitor.config import settings_from_dict
from monitor.core.clock import FakeClock
from monitor.outputs.dashboards import render_dashboard
from monitor.sources import MemorySource
from tests.deploy.test_dashboard import _LABEL_VALUES, concrete, leaf_panels
from tests.monitor.test_tasks import NOW, _log
from tests.servers import promtool_bin

MODEL = "toxicity"
# Grafana's values for the variables: the model, its one window, "All" for the multi-value ones.
VALUES = {"model": MODEL, "window": "1h", "attribute": ".*", "group": ".*", "metric": ".*"}


@pytest.fixture(scope="module")
def exposition() -> list[tuple[str, dict[str, str], float]]:
    """The samples of one evaluated model's ``/metrics``: (name, labels, value)."""
    log = _log(7)
    b = log.grp == "b"
    log.loc[b, "score"] = np.clip(log.loc[b, "score"] + 0.4, 0, 1)  # group b is scored higher
    log.loc[0, "score"] = np.nan  # a rejected row
    log.loc[1:3, "grp"] = None  # rows without a group
    log.loc[4, "grp"] = "tiny"  # a group under min_size, dropped
    model = {
        "name": MODEL,
        "source": {"kind": "memory", "name": MODEL},
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [
            {"attribute": "grp", "kind": "categorical", "column": "grp", "reference": "a", "min_size": 3}
        ],
        "min_samples": 5,
    }
    settings = settings_from_dict({"models": [model], "alerts": {"for": "0s", "log": True}}, environ={})
    source = MemorySource(log, timestamp_column="ts")
    clock = FakeClock(NOW)
    app = build_app(settings, clock=clock, memory_sources={MODEL: source})
    app.runner.run_model(MODEL)
    clock.advance(timedelta(minutes=1))
    app.runner.run_model(MODEL)
    text = generate_latest(app.registry).decode()
    app.stop()
    return [
        (s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def model_dashboard() -> dict[str, Any]:
    settings = settings_from_dict(
        {
            "models": [
                {
                    "name": MODEL,
                    "source": {"kind": "memory", "name": MODEL},
                    "columns": {"score": "score", "label": "label"},
                    "groups": [{"attribute": "grp", "kind": "categorical", "column": "grp"}],
                }
            ]
        },
        environ={},
    )
    return render_dashboard(settings.models[0])


def dashboard_queries(dashboard: dict[str, Any]) -> list[str]:
    """Every PromQL expression of the dashboard, its variables given Grafana's values."""
    exprs = [t["expr"] for p in leaf_panels(dashboard) for t in p["targets"]]
    exprs += [
        a["expr"] for a in dashboard["annotations"]["list"] if "expr" in a and "ALERTS" not in a["expr"]
    ]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            match = _LABEL_VALUES.match(variable["definition"])
            assert match, variable["definition"]
            exprs.append(match.group(1))
    return [concrete(e, **VALUES) for e in exprs]


def _number(value: float) -> str:
    return (
        "NaN" if math.isnan(value) else ("Inf" if value > 0 else "-Inf") if math.isinf(value) else repr(value)
    )


def each_returns_data(
    samples: list[tuple[str, dict[str, str], float]], exprs: list[str], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """promtool evaluates ``absent(expr)`` for each expression over the samples (three scrapes a
    minute apart, so rates have points): it must be empty, i.e. each expression returns data."""
    series = [
        {
            "series": name + "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in labels.items()) + "}",
            "values": " ".join([_number(value)] * 3),
        }
        for name, labels, value in samples
    ]
    test = {
        "interval": "1m",
        "input_series": series,
        "promql_expr_test": [{"expr": f"absent({e})", "eval_time": "2m", "exp_samples": []} for e in exprs],
    }
    path = tmp_path / "dashboard-series.test.yml"
    path.write_text(yaml.safe_dump({"rule_files": [], "evaluation_interval": "1m", "tests": [test]}))
    return subprocess.run(
        [promtool_bin(), "test", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.integration
@pytest.mark.parametrize("which", ["model", "shipped"])
def test_every_query_returns_data_from_the_exported_series(
    which: str, exposition: list[tuple[str, dict[str, str], float]], tmp_path: Path
) -> None:
    dashboard = model_dashboard() if which == "model" else render_dashboard()
    exprs = dashboard_queries(dashboard)
    assert len(exprs) > 60
    result = each_returns_data(exposition, exprs, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.mark.integration
def test_the_check_fails_on_a_series_that_is_not_exported(
    exposition: list[tuple[str, dict[str, str], float]], tmp_path: Path
) -> None:
    exprs = [
        'fairwatch_disparate_impact{model=~"toxicity"}',
        'fairwatch_disparate_impact_ratio{model=~"toxicity"}',  # no such family
        'fairwatch_metric_state{model=~"toxicity",group=~"female"}',  # no such group
    ]
    result = each_returns_data(exposition, exprs, tmp_path)
    assert result.returncode != 0
    failures = result.stdout + result.stderr
    assert failures.count("got: {} 1E+00") == 2, failures
    assert "disparate_impact_ratio" in failures and 'group=~\\"female\\"' in failures


def test_the_model_dashboard_draws_exactly_the_exported_metrics(
    exposition: list[tuple[str, dict[str, str], float]],
) -> None:
    exported = {
        name.removeprefix("fairwatch_")
        for name, labels, _ in exposition
        if labels.get("model") == MODEL and name.removeprefix("fairwatch_") in REGISTRY
    }
    drawn = {re.sub(r":.*", "", p["title"]) for p in leaf_panels(model_dashboard())}
    assert exported == drawn & set(REGISTRY)
    assert len(exported) == 34  # a binary model with scores and labels
