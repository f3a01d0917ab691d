"""The Grafana dashboards, checked statically (no Grafana server exists here).

The committed file is ``fairwatch dashboard``'s output; every panel reads ``${datasource}`` and
has a title, a description and a unit; every query, with its template variables made concrete,
parses as PromQL in the real ``promtool check rules``; the fair ranges drawn are the registry's
(or the model's overrides); intervals are bands, states a timeline per group, alerts annotations.
``test_dashboard_series.py`` runs the queries against a real evaluation's series, and
``test_dashboard_schema.py`` checks the JSON against Grafana's schema.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from metrics_core import REGISTRY
from monitor.cli import main
from monitor.config import Settings, settings_from_dict
from monitor.outputs.dashboards import dashboard_uid, render_dashboard, render_dashboards
from tests.servers import promtool_bin

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "deploy" / "grafana"
DASHBOARD_FILE = GRAFANA / "fairwatch-dashboard.json"
DATASOURCE_UID = "${datasource}"

# Concrete values for the template variables, as Grafana would interpolate them.
VARIABLE_VALUES = {
    "datasource": "prometheus",
    "model": "toxicity",
    "window": "24h",
    "attribute": "identity",
    "group": "female",
    "metric": "bpsn_auc",
    "__rate_interval": "5m",
    "__interval": "1m",
    "__range": "1d",
}
_VARIABLE = re.compile(r"\$(?:\{(\w+)(?::\w+)?\}|(\w+))")
_LABEL_VALUES = re.compile(r"^label_values\((.+),\s*(\w+)\)$")


def dumped(dashboard: dict[str, Any]) -> str:
    return json.dumps(dashboard, indent=2) + "\n"


def all_panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every panel, rows and the panels of collapsed rows included."""
    for panel in panels:
        yield panel
        yield from all_panels(panel.get("panels", []))


def leaf_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in all_panels(dashboard["panels"]) if p["type"] != "row"]


def metric_panels(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The metric panels by metric name (a per-group panel's title is ``<metric>: $group``)."""
    return {
        p["title"].split(":")[0]: p for p in leaf_panels(dashboard) if p["title"].split(":")[0] in REGISTRY
    }


def concrete(expr: str, **values: str) -> str:
    """``expr`` with its template variables replaced; label_replace's ``$1`` is no variable."""
    values = VARIABLE_VALUES | values

    def value(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name.isdigit():
            return m.group(0)
        if name not in values:
            pytest.fail(f"unknown template variable ${name} in {expr!r}")
        return values[name]

    return _VARIABLE.sub(value, expr)


def promtool_check_rules(exprs: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    rules = [{"record": f"fairwatch_dashboard_check_{i}", "expr": e} for i, e in enumerate(exprs)]
    path = tmp_path / "dashboard-queries.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, sort_keys=False))
    return subprocess.run(
        [promtool_bin(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False
    )


def promtool_eval(
    series: dict[str, str], cases: list[tuple[str, dict[str, float]]], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """Evaluate each PromQL expression at 2m over ``series`` (selector -> value) in ``promtool test rules``.

    A case is ``(expr, {labels: value})``; promtool fails when the result differs.
    """
    test = {
        "interval": "1m",
        "input_series": [
            {"series": sel, "values": f"{value} {value} {value}"} for sel, value in series.items()
        ],
        "promql_expr_test": [
            {
                "expr": expr,
                "eval_time": "2m",
                "exp_samples": [{"labels": labels, "value": value} for labels, value in samples.items()],
            }
            for expr, samples in cases
        ],
    }
    path = tmp_path / "dashboard-queries.test.yml"
    path.write_text(yaml.safe_dump({"rule_files": [], "evaluation_interval": "1m", "tests": [test]}))
    return subprocess.run(
        [promtool_bin(), "test", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False
    )


def query(dashboard: dict[str, Any], title: str, ref: str = "A") -> str:
    (panel,) = [p for p in leaf_panels(dashboard) if p["title"] == title]
    (expr,) = [str(t["expr"]) for t in panel["targets"] if t["refId"] == ref]
    return expr


def override_value(panel: dict[str, Any], ref: str, prop: str) -> Any:
    """The value of the override property ``prop`` on the series of query ``ref``."""
    found = [
        p["value"]
        for o in panel["fieldConfig"]["overrides"]
        if o["matcher"] == {"id": "byFrameRefID", "options": ref}
        for p in o["properties"]
        if p["id"] == prop
    ]
    assert len(found) == 1, (panel["title"], ref, prop, found)
    return found[0]


def config(*models: dict[str, Any]) -> Settings:
    base = {
        "source": {"kind": "memory", "name": "m"},
        "groups": [{"attribute": "identity", "kind": "indicator", "columns": ["female"]}],
    }
    return settings_from_dict({"models": [base | m for m in models]}, environ={})


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return render_dashboard()


# --- the committed file -----------------------------------------------------------------------


def test_committed_file_is_the_generated_dashboard(dashboard: dict[str, Any]) -> None:
    assert DASHBOARD_FILE.read_text(encoding="utf-8") == dumped(dashboard), (
        "deploy/grafana/fairwatch-dashboard.json is stale: run "
        "`fairwatch dashboard -o deploy/grafana/fairwatch-dashboard.json`"
    )


def test_cli_writes_the_same_dashboard(tmp_path: Path, dashboard: dict[str, Any]) -> None:
    out = tmp_path / "dashboard.json"
    assert main(["dashboard", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == dumped(dashboard)


def test_dashboard_identity(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] == "fairwatch-overview"
    assert dashboard["title"] == "fairwatch - fairness monitor"
    assert dashboard["refresh"] == "30s"
    assert dashboard["time"] == {"from": "now-24h", "to": "now"}
    assert 36 <= dashboard["schemaVersion"] <= 41
    assert "fairwatch" in dashboard["tags"]


def test_provisioning_files() -> None:
    providers = yaml.safe_load((GRAFANA / "provisioning/dashboards/fairwatch.yaml").read_text())
    (provider,) = providers["providers"]
    assert providers["apiVersion"] == 1
    assert provider["type"] == "file"
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards/fairwatch"
    sources = yaml.safe_load((GRAFANA / "provisioning/datasources/prometheus.yaml").read_text())
    (source,) = sources["datasources"]
    assert source["type"] == "prometheus"
    assert source["url"] == "http://prometheus:9090"
    assert source["uid"]


# --- static checks ----------------------------------------------------------------------------


def test_datasource_variable(dashboard: dict[str, Any]) -> None:
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert {"model", "window", "attribute", "group", "metric"} <= variables.keys()
    assert (
        variables["metric"]["definition"] == 'label_values(fairwatch_metric_state{model=~"$model"}, metric)'
    )
    assert variables["group"]["multi"] and variables["group"]["includeAll"]


def test_every_variable_query_uses_the_datasource_variable(dashboard: dict[str, Any]) -> None:
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            assert variable["datasource"]["uid"] == DATASOURCE_UID, variable["name"]
            assert variable["query"]["query"] == variable["definition"]


def test_every_panel_has_datasource_title_description_and_unit(dashboard: dict[str, Any]) -> None:
    problems = []
    for panel in all_panels(dashboard["panels"]):
        name = f"panel {panel.get('id')} {panel.get('title')!r}"
        if not panel.get("title"):
            problems.append(f"{name}: no title")
        if panel["type"] == "row":
            continue
        if panel.get("datasource") != {"type": "prometheus", "uid": DATASOURCE_UID}:
            problems.append(f"{name}: datasource {panel.get('datasource')}")
        if not panel.get("description", "").strip():
            problems.append(f"{name}: no description")
        if not panel["fieldConfig"]["defaults"].get("unit"):
            problems.append(f"{name}: no unit")
        if not panel.get("targets"):
            problems.append(f"{name}: no query")
        for target in panel.get("targets", []):
            if target.get("datasource", {}).get("uid") != DATASOURCE_UID:
                problems.append(f"{name} query {target['refId']}: datasource {target.get('datasource')}")
    assert not problems, "\n".join(problems)


def test_panel_ids_are_unique_and_panels_do_not_overlap(dashboard: dict[str, Any]) -> None:
    ids = [p["id"] for p in all_panels(dashboard["panels"])]
    assert len(ids) == len(set(ids))
    # The expanded panels share one grid; each collapsed row's panels another.
    grids = [[p for p in dashboard["panels"]]] + [
        r["panels"] for r in dashboard["panels"] if r.get("collapsed")
    ]
    for grid in grids:
        cells: dict[tuple[int, int], int] = {}
        for panel in grid:
            pos = panel["gridPos"]
            assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24, panel["title"]
            for x in range(pos["x"], pos["x"] + pos["w"]):
                for y in range(pos["y"], pos["y"] + pos["h"]):
                    assert (x, y) not in cells, f"{panel['title']} overlaps panel {cells[(x, y)]}"
                    cells[(x, y)] = panel["id"]


@pytest.mark.integration
def test_every_query_is_valid_promql(dashboard: dict[str, Any], tmp_path: Path) -> None:
    exprs = [concrete(t["expr"]) for p in leaf_panels(dashboard) for t in p["targets"]]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":  # label_values(SELECTOR, label): the selector is PromQL
            match = _LABEL_VALUES.match(variable["definition"])
            assert match, variable["definition"]
            exprs.append(concrete(match.group(1)))
    assert all("$" not in e.replace('"$1"', "") for e in exprs)
    result = promtool_check_rules(exprs, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in result.stdout


@pytest.mark.integration
def test_promtool_check_catches_a_broken_query(tmp_path: Path) -> None:
    result = promtool_check_rules(['rate(fairwatch_rows_read_total{model=~"toxicity"})'], tmp_path)
    assert result.returncode != 0
    assert "range vector" in result.stdout + result.stderr


@pytest.mark.integration
def test_queries_select_what_they_should(dashboard: dict[str, Any], tmp_path: Path) -> None:
    """The less obvious queries, evaluated by promtool on series shaped as the exporter's."""
    group = 'model="toxicity",window="24h",attribute="identity",group="female",reference="rest"'
    series = {
        f"fairwatch_disparate_impact{{{group}}}": "0.7",
        f"fairwatch_bpsn_auc{{{group}}}": "0.9",
        f'fairwatch_metric_state{{metric="disparate_impact",{group}}}': "2",
        f'fairwatch_metric_state{{metric="bpsn_auc",{group}}}': "1",
        f'fairwatch_metric_fair_min{{metric="bpsn_auc",{group}}}': "0.85",
        f'fairwatch_metric_fair_min{{metric="bpsn_auc",{group.replace("female", "male")}}}': "-Inf",
        'fairwatch_last_evaluation_success_timestamp_seconds{model="toxicity"}': "0",
        'fairwatch_model_interval_seconds{model="toxicity"}': "30",
    }
    table_value = query(dashboard, "Current values and states", "B")
    cases: list[tuple[str, dict[str, float]]] = [
        # the value column takes `metric` from the family name and keeps the metrics of $metric
        (
            concrete(table_value, metric="disparate_impact"),
            {f'{{metric="disparate_impact",{group}}}': 0.7},
        ),
        (concrete(query(dashboard, "In violation"), metric=".*"), {"{}": 1}),
        (concrete(query(dashboard, "Values ok"), metric=".*"), {"{}": 0}),  # `or vector(0)`: zero, not empty
        # values computed at 0 s, interval 30 s, evaluated at 120 s: behind schedule
        (concrete(query(dashboard, "Models behind schedule")), {"{}": 1}),
        # the relative fair range of each group; an open end (-Inf) is no line
        (
            concrete(query(dashboard, "bpsn_auc: $group", "D"), group=".*"),
            {f'{{__name__="fairwatch_metric_fair_min",metric="bpsn_auc",{group}}}': 0.85},
        ),
    ]
    result = promtool_eval(series, cases, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# --- the metrics and their fair ranges --------------------------------------------------------


def steps(panel: dict[str, Any]) -> list[float]:
    thresholds = panel["fieldConfig"]["defaults"]["thresholds"]
    assert thresholds["mode"] == "absolute"
    return [s["value"] for s in thresholds["steps"] if s["value"] is not None]


def thresholds_style(panel: dict[str, Any]) -> str:
    mode: str = panel["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"]["mode"]
    return mode


def exprs(panel: dict[str, Any]) -> list[str]:
    return [t["expr"] for t in panel["targets"]]


def test_the_shipped_dashboard_holds_the_binary_and_ranking_metrics(dashboard: dict[str, Any]) -> None:
    """What a binary model with a score and a label computes: no other task's metrics, and no
    AUC rounding bounds (reported only for models that round their scores)."""
    binary = {
        name
        for name, spec in REGISTRY.items()
        if spec.family in ("classification", "ranking", "model") and not name.endswith("_rounding_error")
    }
    panels = metric_panels(dashboard)
    assert sorted(panels) == sorted(binary)
    assert len(leaf_panels(dashboard)) < 60  # 113 when every family was drawn
    for name, panel in panels.items():
        assert panel["type"] == "timeseries"
        assert exprs(panel)[0].startswith(f"fairwatch_{name}{{"), name
        assert REGISTRY[name].meaning[1:] in panel["description"]  # capitalised


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("disparate_impact", [0.8, 1.25]),
        ("statistical_parity_difference", [-0.1, 0.1]),
        ("four_fifths_ratio", [0.8, 1.0]),
        (
            "standardized_selection_rate_difference",
            [-0.2, 0.2],
        ),  # two_sd_rule became informational (issue 11)
    ],
)
def test_fair_range_thresholds_examples(
    dashboard: dict[str, Any], metric: str, expected: list[float]
) -> None:
    panel = metric_panels(dashboard)[metric]
    assert steps(panel) == expected
    assert thresholds_style(panel) == "line+area"
    colors = [s["color"] for s in panel["fieldConfig"]["defaults"]["thresholds"]["steps"]]
    assert colors == ["red", "green", "red"]


def test_every_absolute_fair_range_is_drawn_from_the_registry(dashboard: dict[str, Any]) -> None:
    panels = metric_panels(dashboard)
    for name, spec in REGISTRY.items():
        fr = spec.fair_range
        if name not in panels:
            continue
        if fr is None or fr.relative_to is not None:
            continue
        assert steps(panels[name]) == [v for v in (fr.min, fr.max) if v is not None], name
        assert fr.describe() in panels[name]["description"]
        assert spec.source in panels[name]["description"]


@pytest.mark.parametrize("metric", ["subgroup_auc", "bpsn_auc", "bnsp_auc"])
def test_relative_range_is_the_exported_fair_min(dashboard: dict[str, Any], metric: str) -> None:
    panel = metric_panels(dashboard)[metric]
    assert thresholds_style(panel) == "off"
    assert steps(panel) == []
    bounds = [e for e in exprs(panel) if "fairwatch_metric_fair_" in e]
    assert len(bounds) == 1  # the range is open above: no fair_max line
    assert f'fairwatch_metric_fair_min{{metric="{metric}",' in bounds[0] and bounds[0].endswith("> -Inf")
    assert "overall_auc - 0.05" in panel["description"]
    # the region below the lower end, outside the range, is shaded
    assert override_value(panel, "D", "custom.fillOpacity") > 0
    assert override_value(panel, "D", "color") == {"mode": "fixed", "fixedColor": "red"}


def test_intervals_are_drawn_for_metrics_that_have_one(dashboard: dict[str, Any]) -> None:
    for name, panel in metric_panels(dashboard).items():
        has_ci = any(f'fairwatch_metric_ci_lower{{metric="{name}",' in e for e in exprs(panel))
        assert has_ci == (REGISTRY[name].interval != "none"), name


def test_informational_metrics_draw_no_range(dashboard: dict[str, Any]) -> None:
    panels = metric_panels(dashboard)
    for name in ("selection_rate", "true_positive_rate", "overall_auc", "theil_index"):
        assert steps(panels[name]) == []
        assert thresholds_style(panels[name]) == "off"
        assert not any("fairwatch_metric_fair_" in e for e in exprs(panels[name]))
    assert panels["selection_rate"]["fieldConfig"]["defaults"]["unit"] == "percentunit"


def test_state_table_maps_the_exported_state_codes(dashboard: dict[str, Any]) -> None:
    (table,) = [p for p in leaf_panels(dashboard) if p["title"] == "Current values and states"]
    (state,) = [o for o in table["fieldConfig"]["overrides"] if o["matcher"]["options"] == "state"]
    (mappings,) = [p["value"] for p in state["properties"] if p["id"] == "mappings"]
    options = mappings[0]["options"]
    assert {k: (v["text"], v["color"]) for k, v in options.items()} == {
        "0": ("ok", "green"),
        "1": ("inconclusive", "yellow"),
        "2": ("violation", "red"),
        "3": ("insufficient data", "#8e8e8e"),
    }
    assert any(e.startswith("max by") and "fairwatch_metric_state{" in e for e in exprs(table))


def test_service_health_panels(dashboard: dict[str, Any]) -> None:
    by_title = {p["title"]: p for p in leaf_panels(dashboard)}
    age = by_title["Evaluation age"]
    assert exprs(age)[0].startswith("time() - fairwatch_last_evaluation_success_timestamp_seconds{")
    assert age["fieldConfig"]["defaults"]["unit"] == "s"
    assert "increase(fairwatch_evaluation_failures_total{" in exprs(by_title["Evaluation failures"])[0]
    assert "rate(fairwatch_rows_rejected_total{" in exprs(by_title["Rows rejected"])[0]
    assert by_title["Label coverage"]["fieldConfig"]["defaults"]["unit"] == "percentunit"
    for title in ("Group sizes", "Groups dropped", "Rows without a group", "Source up", "Alert deliveries"):
        assert title in by_title


# --- with a config ----------------------------------------------------------------------------


def test_config_metrics_only() -> None:
    settings = config({"name": "toxicity", "metrics": ["disparate_impact", "bpsn_auc", "selection_rate"]})
    dashboard = render_dashboard(settings.models[0])
    assert sorted(metric_panels(dashboard)) == ["bpsn_auc", "disparate_impact", "selection_rate"]
    (table,) = [p for p in leaf_panels(dashboard) if p["title"] == "Current values and states"]
    assert 'fairwatch_(selection_rate|disparate_impact|bpsn_auc)"' in "".join(exprs(table))
    rows = [p["title"] for p in dashboard["panels"] if p["type"] == "row"]
    assert "Model-level metrics" not in rows  # no panels, no row


def test_config_without_scores_drops_the_ranking_metrics() -> None:
    settings = config({"name": "loans", "columns": {"score": None, "prediction": "approved"}})
    names = metric_panels(render_dashboard(settings.models[0]))
    assert "disparate_impact" in names and "equal_opportunity_difference" in names
    assert not any("auc" in n or "aeg" in n or n == "standardized_mean_difference" for n in names)


def test_config_fair_range_override_changes_the_thresholds() -> None:
    settings = config(
        {
            "name": "toxicity",
            "metrics": ["disparate_impact", "bpsn_auc"],
            "fair_ranges": {"adverse_impact_ratio": [0.9, 1.1], "bpsn_auc": [0.7, None]},
        }
    )
    panels = metric_panels(render_dashboard(settings.models[0]))
    assert steps(panels["disparate_impact"]) == [0.9, 1.1]
    assert "[0.9, 1.1] (configured in fair_ranges)" in panels["disparate_impact"]["description"]
    # An absolute override of the AUC family's relative range is drawn as a threshold.
    assert steps(panels["bpsn_auc"]) == [0.7]
    assert thresholds_style(panels["bpsn_auc"]) == "line+area"
    assert not any("fairwatch_metric_fair_" in e for e in exprs(panels["bpsn_auc"]))


def test_one_dashboard_per_model_with_its_own_ranges() -> None:
    settings = config(
        {"name": "a", "metrics": ["disparate_impact"], "fair_ranges": {"disparate_impact": [0.9, 1.1]}},
        {"name": "b.v2", "metrics": ["disparate_impact"]},
    )
    dashboards = render_dashboards(settings)
    assert list(dashboards) == ["a", "b.v2"]
    for name, expected in (("a", [0.9, 1.1]), ("b.v2", [0.8, 1.25])):
        dashboard = dashboards[name]
        assert dashboard["title"] == f"fairwatch - {name}"
        assert steps(metric_panels(dashboard)["disparate_impact"]) == expected
        (model,) = [v for v in dashboard["templating"]["list"] if v["name"] == "model"]
        assert (model["type"], model["query"], model["hide"]) == ("constant", name, 2)
    assert dashboards["a"]["uid"] == "fairwatch-a"
    # Grafana uids take [A-Za-z0-9_-] only: the dot is replaced, and a digest keeps uids apart
    assert re.fullmatch(r"fairwatch-b-v2-[0-9a-f]{8}", dashboards["b.v2"]["uid"])
    assert dashboard_uid("b-v2") != dashboard_uid("b.v2")
    assert len(dashboard_uid("m" * 100)) <= 40


def test_cli_writes_one_file_per_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fairwatch.yaml"
    model = {
        "source": {"kind": "sql", "url": "sqlite:///log.db", "table": "predictions"},
        "groups": [{"attribute": "identity", "kind": "indicator", "columns": ["female"]}],
    }
    path.write_text(yaml.safe_dump({"models": [{"name": "a", **model}, {"name": "b", **model}]}))
    out = tmp_path / "dashboards"
    assert main(["dashboard", "--config", str(path), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["fairwatch-a.json", "fairwatch-b.json"]
    assert json.loads((out / "fairwatch-b.json").read_text())["uid"] == "fairwatch-b"
    # several models and no directory: a message, not one file holding two dashboards
    assert main(["dashboard", "--config", str(path)]) == 2
    assert "name a directory with --output" in capsys.readouterr().err.replace("\n", " ")


# --- bands, states and alerts -----------------------------------------------------------------


def test_intervals_are_shaded_bands(dashboard: dict[str, Any]) -> None:
    for name, panel in metric_panels(dashboard).items():
        if REGISTRY[name].interval == "none":
            continue
        legends = {t["refId"]: t["legendFormat"] for t in panel["targets"]}
        assert (legends["B"], legends["C"]) == ("CI low", "CI high"), name
        assert "metric_ci_lower" in query(dashboard, panel["title"], "B")
        assert "metric_ci_upper" in query(dashboard, panel["title"], "C")
        # the upper bound's series fills down to the lower bound's: a band, not two lines
        assert override_value(panel, "C", "custom.fillBelowTo") == "CI low", name
        assert override_value(panel, "C", "custom.fillOpacity") > 0
        assert override_value(panel, "B", "custom.lineWidth") == 0


def test_per_group_metrics_repeat_one_panel_per_group(dashboard: dict[str, Any]) -> None:
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    for name, panel in metric_panels(dashboard).items():
        if REGISTRY[name].level == "group":
            assert panel["repeat"] == "group" and panel["repeatDirection"] == "h", name
            assert panel["title"] == f"{name}: $group"
        else:
            assert "repeat" not in panel, name
    assert variables["group"]["multi"]


def test_a_state_timeline_per_group(dashboard: dict[str, Any]) -> None:
    (timeline,) = [p for p in leaf_panels(dashboard) if p["title"] == "States: $group"]
    assert timeline["type"] == "state-timeline"
    assert timeline["repeat"] == "group"
    (expr,) = exprs(timeline)
    assert expr.startswith("fairwatch_metric_state{")
    # one row per fairness metric: the informational ones have no state worth a row
    listed = set(re.search(r'metric=~"([^"]+)"', expr).group(1).split("|"))  # type: ignore[union-attr]
    assert listed == {n for n, p in metric_panels(dashboard).items() if REGISTRY[n].level == "group"} - {
        n for n, s in REGISTRY.items() if s.informational
    }
    assert 'metric=~"$metric"' in expr
    options = timeline["fieldConfig"]["defaults"]["mappings"][0]["options"]
    assert {v["text"] for v in options.values()} == {"ok", "inconclusive", "violation", "insufficient data"}


def test_alert_annotations(dashboard: dict[str, Any]) -> None:
    annotations = {a["name"]: a for a in dashboard["annotations"]["list"]}
    fairness = annotations["Fairness alerts"]
    assert fairness["enable"] and fairness["datasource"] == {"type": "prometheus", "uid": DATASOURCE_UID}
    assert fairness["expr"].startswith('fairwatch_alerts{alertstate="firing",')
    assert 'group=~"$group"' in fairness["expr"]
    service = annotations["Service alerts"]
    named = set(re.search(r'alertname=~"([^"]+)"', service["expr"]).group(1).split("|"))  # type: ignore[union-attr]
    rules = yaml.safe_load((ROOT / "deploy/prometheus/rules.yml").read_text())
    health = {r["alert"] for g in rules["groups"] if g["name"] == "fairwatch-health" for r in g["rules"]}
    assert named == health


def test_the_documented_command_writes_the_documented_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/grafana.md's example, run on docs/configuration.md's example config."""
    page = (ROOT / "docs" / "grafana.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(fairwatch dashboard --config .*?)```", page, re.S)
    assert block is not None
    command, wrote = block.group(1).splitlines()[:2]
    example = re.search(r"```yaml\n(.*?)```", (ROOT / "docs" / "configuration.md").read_text(), re.S)
    assert example is not None
    monkeypatch.chdir(tmp_path)
    Path("fairwatch.yaml").write_text(example.group(1))
    assert main(command.split()[1:]) == 0
    assert capsys.readouterr().err.strip() == wrote.removeprefix("# ")
    dashboard = json.loads((tmp_path / "dashboards" / "fairwatch-toxicity.json").read_text())
    assert dashboard["uid"] == "fairwatch-toxicity"
