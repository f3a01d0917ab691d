"""``fairwatch power``: plans from a real SQLite log, consistent with the library's power functions."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from metrics_core.stats.power import Plan, rows_needed
from monitor.cli import main
from monitor.cli.demo.run import write_demo_config, write_demo_log

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("power")
    write_demo_log(directory / "predictions.db", start=NOW, history=timedelta(hours=6), future=timedelta(0))
    return write_demo_config(directory, port=9810)


def _plans(config: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict]:
    argv = [
        "power",
        "--config",
        str(config),
        "--model",
        "toxicity",
        "--format",
        "json",
        "--at",
        NOW.isoformat(),
    ]
    assert main([*argv, *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_power_plans_every_plannable_alerting_value(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plans = _plans(config, capsys)
    metrics = {p["metric"] for p in plans}
    assert {
        "disparate_impact",
        "statistical_parity_difference",
        "bpsn_auc",
        "bnsp_auc",
        "subgroup_auc",
    } <= metrics
    assert not metrics & {
        "negative_aeg",
        "jigsaw_final_score",
        "selection_rate",
    }  # not contrasts / informational
    for p in plans:
        if p["rows_needed"] is not None and p["rows_now"]:
            # days at the traffic of the longest window (3h): rows needed over rows that window sees a day
            assert p["days_needed"] == pytest.approx(p["rows_needed"] / (p["rows_now"] * 8), rel=1e-9)
        one, three = p["detectable"]["1h"], p["detectable"]["3h"]
        if one is not None and three is not None:  # a longer window detects a departure nearer the bound
            assert abs(three - p["bound"]) <= abs(one - p["bound"]) + 1e-9


def test_a_stated_departure_is_planned_and_closer_ones_cost_more(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    far = {
        (p["group"]): p
        for p in _plans(config, capsys, "--effect", "disparate_impact=0.6")
        if p["metric"] == "disparate_impact"
    }
    near = {
        (p["group"]): p
        for p in _plans(config, capsys, "--effect", "air=0.75")
        if p["metric"] == "disparate_impact"
    }
    assert far and set(far) == set(near)
    for group, p in far.items():
        assert p["departure"] == 0.6 and near[group]["departure"] == 0.75
        if p["rows_needed"] is not None:
            assert near[group]["rows_needed"] is None or near[group]["rows_needed"] > p["rows_needed"]


def test_the_plan_is_the_library_plan_on_the_evaluated_window(
    config: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Each disparate-impact plan equals rows_needed() on the 3h window's own counts from `fairwatch evaluate`."""
    plans = {p["group"]: p for p in _plans(config, capsys) if p["metric"] == "disparate_impact"}
    augmented = tmp_path / "config.yaml"  # the same model, its per-group selection rates reported too
    text = config.read_text().replace(
        "overall_auc, jigsaw_final_score]", "overall_auc, jigsaw_final_score, selection_rate]"
    )
    augmented.write_text(
        text.replace("sqlite:///predictions.db", f"sqlite:///{config.parent / 'predictions.db'}")
    )
    start = (NOW - timedelta(hours=3)).isoformat()
    argv = ["evaluate", "--config", str(augmented), "--model", "toxicity", "--format", "json"]
    assert main([*argv, "--start", start, "--end", NOW.isoformat()]) == 0
    rows = json.loads(capsys.readouterr().out)  # the explicit range [now - 3h, now): the 3h window
    checked = 0
    for group, p in plans.items():
        di = next(r for r in rows if r["group"] == group and r["metric"] == "disparate_impact")
        sr = next(r for r in rows if r["group"] == group and r["metric"] == "selection_rate")
        below = di["value"] < 1
        plan = Plan(
            kind="ratio",
            reference_rate=sr["value"] / di["value"],
            bound=0.8 if below else 1.25,
            reference_ratio=di["n_reference"] / di["n_group"],
        )
        assert p["rows_now"] == sr["support"] and p["bound"] == plan.bound
        expected = rows_needed(plan, p["departure"])
        assert p["rows_needed"] == (expected if math.isfinite(expected) else None), group
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--effect", "nope=0.7"], "unknown metric 'nope'"),
        (["--effect", "disparate_impact"], "write METRIC=VALUE"),
        (["--effect", "negative_aeg=0.2"], "cannot be planned"),
        (["--power", "1.5"], "argument --power: must lie between 0 and 1"),
    ],
)
def test_bad_arguments_name_themselves(
    config: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["power", "--config", str(config), *args]) == 2
    assert message in capsys.readouterr().err


def test_the_service_serves_the_same_plans(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``/api/v1/power`` on a running service carries the figures ``fairwatch power`` prints for the
    same window (the config computes the rates plans read, as the CLI adds them itself)."""
    import urllib.request

    from monitor.app import build_app
    from monitor.config import load_settings
    from monitor.core.clock import FakeClock
    from monitor.outputs.power import with_planning_rates

    cli = {(p["attribute"], p["group"], p["metric"]): p for p in _plans(config, capsys)}
    settings = with_planning_rates(load_settings(config))
    settings = settings.model_copy(update={"server": settings.server.model_copy(update={"port": 0})})
    app = build_app(settings, clock=FakeClock(NOW))
    app.runner.run_model("toxicity")
    app.start()
    try:
        assert app.server is not None
        with urllib.request.urlopen(app.server.url + "/api/v1/power", timeout=30) as response:
            body = json.load(response)
    finally:
        app.stop()
    served = {
        (p["attribute"], p["group"], p["metric"]): p
        for p in body["data"]["plans"]
        if p["model"] == "toxicity"
    }
    assert body["status"] == "success" and len(served) >= 20
    assert served.keys() == cli.keys()
    for key, plan in served.items():
        assert plan["rows_needed"] == pytest.approx(cli[key]["rows_needed"], rel=1e-9), key
        assert plan["days_needed"] == pytest.approx(cli[key]["days_needed"], rel=1e-9), key
