"""The task table: one source of truth that config, evaluation and the dashboard agree on."""

from __future__ import annotations

import importlib
import inspect
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, get_args

import numpy as np
import pandas as pd
import pytest

from metrics_core import REGISTRY
from monitor.config import load_settings, settings_from_dict
from monitor.core.errors import ConfigError
from monitor.evaluation.evaluators import build_evaluators
from monitor.outputs.dashboards import render_dashboard
from monitor.sources import MemorySource
from monitor.tasks import TASKS, TaskName

NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)
N = 600
# Keywords every group-vs-reference family takes from the model's own keys, not from `options:`.
COMMON = {"metrics", "confidence", "fair_ranges", "min_samples", "adjust", "family_size", "method"}


def _log(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ts = NOW - timedelta(hours=1) + pd.to_timedelta(rng.uniform(0, 3600, N), unit="s")
    y = rng.random(N) < 0.4
    frame = pd.DataFrame(
        {
            "id": np.arange(N),
            "ts": ts,
            "grp": rng.choice(["a", "b"], N),
            "score": np.clip(0.4 * y + 0.6 * rng.random(N), 0, 1),
            "label": y.astype(int),
            "pred": rng.integers(0, 2, N),
            "klass": rng.choice(["x", "y", "z"], N),
            "true_class": rng.choice(["x", "y", "z"], N),
            "target": rng.normal(10, 2, N),
            "user": [f"u{i % 60}" for i in range(N)],
            "item": rng.choice(["i1", "i2", "i3", "i4"], N),
            "rank": rng.integers(1, 6, N),
            "relevant": rng.integers(0, 2, N),
            "cluster": rng.choice([0, 1, 2], N),
            "f1": rng.normal(0, 1, N),
            "f2": rng.normal(0, 1, N),
            "completion": rng.choice(["she is an idiot engineer", "he is a nurse"], N),
        }
    )
    frame["grp"] = np.where(frame.user.str[1:].astype(int) < 25, "a", "b")  # a property of the user
    return frame


MODELS: dict[str, dict[str, Any]] = {
    "binary_scores_and_labels": {"columns": {"score": "score", "label": "label"}},
    "binary_without_labels": {"columns": {"score": "score", "label": None}},
    "binary_predictions_only": {"columns": {"score": None, "prediction": "pred", "label": None}},
    "multiclass": {"task": "multiclass", "columns": {"prediction": "klass", "label": "true_class"}},
    "regression": {"task": "regression", "columns": {"score": "target", "label": "target"}},
    "recommender": {
        "task": "recommender",
        "columns": {"user": "user", "item": "item", "rank": "rank", "score": "score", "label": "relevant"},
    },
    "clustering": {"task": "clustering", "columns": {"cluster": "cluster", "features": ["f1", "f2"]}},
    "text": {"task": "text", "columns": {"text": "completion"}, "options": {"lexicon": ["idiot"]}},
}


def _settings(name: str) -> Any:
    model = MODELS[name]
    config = {
        "name": name,
        "source": {"kind": "memory", "name": name},
        "groups": [{"attribute": "grp", "kind": "categorical", "column": "grp", "reference": "a"}],
        "min_samples": 5,
        **model,
        "columns": {"id": "id", "timestamp": "ts", **model["columns"]},
    }
    return settings_from_dict({"models": [config]}, environ={})


@pytest.mark.parametrize("name", list(MODELS))
def test_the_dashboard_draws_exactly_the_metrics_the_evaluator_computes(name: str) -> None:
    settings = _settings(name)
    source = MemorySource(_log(7), timestamp_column="ts")
    (evaluator,) = build_evaluators(settings, memory_sources={name: source}).values()
    (window,) = evaluator.evaluate(NOW).windows
    computed = {v.metric for v in window.values} | {m.metric for m in window.model_values}

    panels = render_dashboard(settings.models[0])["panels"]
    leaves = [p for row in panels for p in [row, *row.get("panels", [])] if p["type"] != "row"]
    drawn = {p["title"].split(":")[0] for p in leaves} & set(REGISTRY)

    assert computed, "the scenario must compute something to compare"
    assert drawn == computed
    families = TASKS[settings.models[0].task].families
    assert {REGISTRY[m].family for m in drawn} <= set(families)


def test_the_families_of_a_plain_binary_model() -> None:
    """The bug this table fixed: a binary model's dashboard drew every family's metrics."""
    drawn = {
        p["title"].split(":")[0]
        for row in render_dashboard(_settings("binary_scores_and_labels").models[0])["panels"]
        for p in [row, *row.get("panels", [])]
    } & set(REGISTRY)
    assert drawn
    assert not any(REGISTRY[m].family in ("regression", "text", "multiclass") for m in drawn)


def test_every_task_name_has_one_entry_and_every_metric_one_task() -> None:
    assert set(get_args(TaskName)) == set(TASKS)
    owners = {m: [t for t in TASKS.values() if spec.family in t.families] for m, spec in REGISTRY.items()}
    assert {m: len(ts) for m, ts in owners.items() if len(ts) != 1} == {}


@pytest.mark.parametrize("task", [t for t in TASKS if t != "binary"])
def test_options_models_mirror_the_family_keywords_and_defaults(task: str) -> None:
    entry = TASKS[task]
    module = importlib.import_module(entry.evaluate.module)
    params = inspect.signature(module.evaluate).parameters.values()
    keywords = {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
    fields = {n: f.default for n, f in entry.options.model_fields.items() if not n.endswith("_file")}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        # a family still taking **options (before metrics_core names them all): ours must include its own
        assert set(fields) >= set(keywords) - COMMON
    else:
        assert set(fields) == set(keywords) - COMMON
    for name, default in fields.items():
        if name not in keywords:
            continue
        assert default == keywords[name] or tuple(default) == tuple(keywords[name]), name
    assert set(entry.families) == {s.family for s in module.SPECS}


def test_binary_takes_no_options_and_the_error_says_so(tmp_path: Path) -> None:
    config = {
        "name": "m",
        "options": {"k": 3},
        "source": {"kind": "memory", "name": "m"},
        "groups": [{"attribute": "g", "kind": "indicator", "columns": ["g"]}],
    }
    with pytest.raises(
        ConfigError,
        match=r"models\[0\]\.options: options \['k'\] are not options of task binary; its options are: none",
    ):
        settings_from_dict({"models": [config]}, environ={})


def test_a_bad_option_value_names_the_option_and_its_line(tmp_path: Path) -> None:
    path = tmp_path / "fairwatch.yml"
    path.write_text(
        """\
models:
  - name: recs
    task: recommender
    source: {kind: sql, url: "sqlite:///log.db", table: recs}
    columns: {id: id, timestamp: ts, user: u, item: i, rank: r}
    options:
      k: ten
    groups: [{attribute: segment, kind: categorical, column: segment}]
"""
    )
    with pytest.raises(
        ConfigError, match=r"fairwatch\.yml:7: models\[0\]\.options: k: Input should be a valid integer"
    ):
        load_settings(path)


def test_text_option_files_are_relative_to_the_config_and_read_at_start_up(tmp_path: Path) -> None:
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "hurtful.txt").write_text("# hurtful\nidiot\nstupid\n")
    (tmp_path / "fairwatch.yml").write_text(
        """\
models:
  - name: chat
    task: text
    source: {kind: memory, name: chat}
    columns: {id: id, timestamp: ts, text: completion}
    options: {lexicon_file: lists/hurtful.txt, n_permutations: 50}
    groups: [{attribute: grp, kind: categorical, column: grp}]
"""
    )
    (model,) = load_settings(tmp_path / "fairwatch.yml", environ={}).models
    kwargs = model.options.evaluate_kwargs()
    assert kwargs["lexicon"] == ["idiot", "stupid"]
    assert kwargs["n_permutations"] == 50 and "lexicon_file" not in kwargs
    assert kwargs["word_lists"] and kwargs["targets"]  # the shipped defaults


def test_every_task_option_is_documented() -> None:
    page = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text(encoding="utf-8")
    options = {name for task in TASKS.values() for name in task.options.model_fields}
    assert sorted(o for o in options if f"`{o}`" not in page) == []


@pytest.mark.parametrize("name", list(MODELS))
def test_the_onsets_runs_of_bins_give_the_evaluations_values(name: str) -> None:
    """Evaluator.segments counts the span per bin where the task counts (binary, multiclass) and keeps
    rows where its evaluator reads rows: the whole span as one run gives the values the evaluation of
    the same range gives (a review: a regression model's values all became 0 or 1 when counted)."""
    log = _log(7)
    if name == "regression":  # whole-number predictions and targets: many identical rows
        log["target"] = np.random.default_rng(1).integers(1, 6, len(log)).astype(float)
    settings = _settings(name)
    with build_evaluators(settings, memory_sources={name: MemorySource(log, timestamp_column="ts")}) as built:
        (evaluator,) = built.values()
        start, end = NOW - timedelta(hours=1), NOW
        (window,) = evaluator.evaluate(NOW, start=start, end=end).windows
        checked = 0
        for v in (v for v in window.values if v.group == "b"):
            runs = evaluator.segments(
                start, end, timedelta(minutes=10), attribute=v.attribute, group="b", metric=v.metric
            )
            whole = runs.value(0, len(runs.times) - 1)
            assert whole is not None and (whole.value == pytest.approx(v.value, abs=1e-9, nan_ok=True)), (
                v.metric
            )
            checked += 1
    assert checked >= 3
