"""The shipped Prometheus files: generated rules, their promtool unit tests, example configs.

``deploy/prometheus/rules.yml`` is ``fairwatch rules`` output (one source of truth: the registry), checked
and unit-tested by the real promtool; ``prometheus.yml`` and ``alertmanager.yml`` pass the real checkers.
A missing binary fails these tests (``scripts/install-system-deps`` installs them).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from metrics_core import REGISTRY
from monitor.config import Settings, settings_from_dict
from monitor.outputs.prometheus.rules import ALERTNAME, HEALTH_ALERTS, alerting_metrics, render_rules
from tests.servers import amtool_bin, promtool_bin

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "prometheus"
RUNBOOK = ROOT / "docs" / "runbook.md"
RUNBOOK_URL = "https://wiki.example.internal/fairwatch/runbook"


def _run(argv: list[str], cwd: Path = DEPLOY) -> str:
    """Run a checker; fail with its output unless it exits 0."""
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, f"{' '.join(argv)} failed:\n{result.stdout}{result.stderr}"
    return result.stdout + result.stderr


def _rules(text: str) -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(text)["groups"] for rule in group["rules"]]


def _override_settings() -> Settings:
    source = {"kind": "sql", "url": "sqlite:///predictions.db", "table": "predictions"}
    groups = [{"attribute": "identity", "kind": "indicator", "columns": ["muslim", "jewish"]}]
    return settings_from_dict(
        {
            "models": [
                {
                    "name": "toxicity",
                    "source": source,
                    "groups": groups,
                    "fair_ranges": {"disparate_impact": [0.7, 1.4], "bpsn_auc": [0.6, None]},
                },
                {"name": "spam.v2", "source": source, "groups": groups},
                {
                    "name": "toxicity.eu",
                    "source": source,
                    "groups": groups,
                    "fair_ranges": {"adverse_impact_ratio": [0.7, 1.4]},  # an alias, the same range
                },
            ],
            "alerts": {"for": "10m", "keep_firing_for": "2m", "severity": "page", "runbook_url": RUNBOOK_URL},
        },
        environ={},
    )


# -- the generated file ----------------------------------------------------------------------------------


def test_rules_file_is_the_generated_one() -> None:
    shipped = (DEPLOY / "rules.yml").read_text(encoding="utf-8")
    assert shipped == render_rules(), "regenerate: fairwatch rules -o deploy/prometheus/rules.yml"


def test_cli_writes_the_generated_rules() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "rules"], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout == render_rules()


def test_one_fairness_rule_per_judged_metric() -> None:
    rules = _rules(render_rules())
    fairness = [r for r in rules if r["alert"] == ALERTNAME]
    assert [r["labels"]["metric"] for r in fairness] == [spec.name for spec in alerting_metrics()]
    # informational rates and model-level values never alert
    assert {r["labels"]["metric"] for r in fairness}.isdisjoint(
        name for name, spec in REGISTRY.items() if spec.informational or spec.level == "model"
    )
    for rule in fairness:
        metric = rule["labels"]["metric"]
        assert f'fairwatch_metric_state{{metric="{metric}"}} == 2' in rule["expr"]
        assert rule["for"] == "5m"
        assert rule["labels"]["severity"] == "warning"
        assert "{{ $labels.group }}" in rule["annotations"]["summary"]
        assert "{{ $value" in rule["annotations"]["summary"]
        assert (
            "runbook_url" not in rule["annotations"]
        )  # no alerts.runbook_url: no link to a page nobody hosts
    assert [r["alert"] for r in rules if r["alert"] != ALERTNAME] == list(HEALTH_ALERTS)


def test_every_runbook_link_has_a_section() -> None:
    headings = re.findall(r"^#{2,4} (.+?)\s*$", RUNBOOK.read_text(encoding="utf-8"), re.M)
    anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
    for rule in _rules(render_rules(_override_settings())):
        url, anchor = rule["annotations"]["runbook_url"].rsplit("#", 1)
        assert url == RUNBOOK_URL
        assert anchor in anchors, f"docs/runbook.md has no section for #{anchor}"


def test_config_overrides_show_in_the_rules() -> None:
    text = render_rules(_override_settings())
    rules = _rules(text)
    di = [r for r in rules if r.get("labels", {}).get("metric") == "disparate_impact"]
    assert len(di) == 2
    default, override = di
    # one rule per distinct range; a model the config does not know gets the registry's
    assert r'fairwatch_disparate_impact{model!~"toxicity|toxicity\\.eu"}' in default["expr"]
    assert "fair range [0.8, 1.25]" in default["annotations"]["summary"]
    assert r'fairwatch_disparate_impact{model=~"toxicity|toxicity\\.eu"}' in override["expr"]
    assert "fair range [0.7, 1.4]" in override["annotations"]["summary"]
    assert "configured in the model's fair_ranges" in override["annotations"]["description"]
    bpsn = [r for r in rules if r.get("labels", {}).get("metric") == "bpsn_auc"]
    assert "at least overall_auc - 0.05" in bpsn[0]["annotations"]["summary"]
    assert 'model="toxicity"' in bpsn[1]["expr"]
    assert "fair range at least 0.6" in bpsn[1]["annotations"]["summary"]
    # a metric nobody overrides keeps one rule, for every model
    spd = [r for r in rules if r.get("labels", {}).get("metric") == "statistical_parity_difference"]
    assert len(spd) == 1 and "model" not in spd[0]["expr"]
    for rule in rules:
        if rule["alert"] == ALERTNAME:
            assert (rule["for"], rule["keep_firing_for"], rule["labels"]["severity"]) == ("10m", "2m", "page")


# -- the real tools --------------------------------------------------------------------------------------


def test_promtool_accepts_the_rules() -> None:
    out = _run([promtool_bin(), "check", "rules", "rules.yml"])
    assert f"SUCCESS: {len(_rules(render_rules()))} rules found" in out


def test_promtool_unit_tests_pass() -> None:
    out = _run([promtool_bin(), "test", "rules", "rules_test.yml"])
    assert "SUCCESS" in out


def test_promtool_accepts_the_example_prometheus_config(tmp_path: Path) -> None:
    # from another directory: rule_files must resolve relative to the config file, as shipped
    out = _run([promtool_bin(), "check", "config", str(DEPLOY / "prometheus.yml")], cwd=tmp_path)
    assert "1 rule files found" in out


def test_amtool_accepts_the_example_alertmanager_config(tmp_path: Path) -> None:
    out = _run([amtool_bin(), "check-config", str(DEPLOY / "alertmanager.yml")], cwd=tmp_path)
    assert "SUCCESS" in out
    config = yaml.safe_load((DEPLOY / "alertmanager.yml").read_text(encoding="utf-8"))
    assert {"model", "incident"} <= set(config["route"]["group_by"])
    stale = next(r for r in config["inhibit_rules"] if 'FairwatchEvaluationStale"' in r["source_matchers"][0])
    assert ALERTNAME in stale["target_matchers"][0] and stale["equal"] == ["model"]


_OVERRIDE_LABELS = {"window": "1h", "attribute": "identity", "group": "muslim", "reference": "rest"}


def _override_series(model: str) -> list[dict[str, str]]:
    """Input series of one disparate impact violation (0.6, CI 0.5 to 0.65) of ``model``."""
    labels = ",".join(f'{k}="{v}"' for k, v in {"model": model, **_OVERRIDE_LABELS}.items())
    return [
        {"series": f"{name}{{{extra}{labels}}}", "values": f"{value}x15"}
        for name, extra, value in (
            ("fairwatch_disparate_impact", "", 0.6),
            ("fairwatch_metric_state", 'metric="disparate_impact",', 2),
            ("fairwatch_metric_ci_lower", 'metric="disparate_impact",', 0.5),
            ("fairwatch_metric_ci_upper", 'metric="disparate_impact",', 0.65),
        )
    ]


def _override_alert(model: str, fair_range: str, source: str) -> dict[str, Any]:
    """The alert promtool must see for ``model``: its labels and fully rendered annotations."""
    description = (
        "below 1: the group is selected less often than its reference (PiML's adverse impact ratio) "
        "(SR_G / SR_R). fairwatch judged the whole 95% interval, 0.5 to 0.65, to lie outside the fair "
        f"range {fair_range} ({source}), with enough rows (min_samples). A firing alert keeps firing "
        "while the value stays out of range."
    )
    return {
        "exp_labels": {
            "severity": "page",
            "metric": "disparate_impact",
            "model": model,
            "incident": "identity=muslim",
            **_OVERRIDE_LABELS,
        },
        "exp_annotations": {
            "summary": f"disparate_impact for identity=muslim (vs rest) in model {model}, window 1h: 0.6, "
            f"fair range {fair_range}",
            "description": description,
            "runbook_url": f"{RUNBOOK_URL}#disparate_impact",  # alerts.runbook_url, through the real promtool
        },
    }


def test_override_rules_give_each_model_its_range(tmp_path: Path) -> None:
    """In the real rule engine: each model's alert fires once (after 10m), quoting its own range."""
    (tmp_path / "rules.yml").write_text(render_rules(_override_settings()), encoding="utf-8")
    firing = [
        _override_alert("spam.v2", "[0.8, 1.25]", "registry default"),
        _override_alert("toxicity", "[0.7, 1.4]", "configured in the model's fair_ranges"),
        _override_alert("toxicity.eu", "[0.7, 1.4]", "configured in the model's fair_ranges"),
    ]
    test = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    *_override_series("toxicity"),
                    *_override_series("toxicity.eu"),
                    *_override_series("spam.v2"),
                ],
                "alert_rule_test": [
                    {"eval_time": "9m", "alertname": ALERTNAME, "exp_alerts": []},
                    {"eval_time": "10m", "alertname": ALERTNAME, "exp_alerts": firing},
                ],
            }
        ],
    }
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test, sort_keys=False), encoding="utf-8")
    _run([promtool_bin(), "test", "rules", "test.yml"], cwd=tmp_path)
