"""The shapes users log, as data: what ``bench_shapes.py`` measures fairwatch on.

Each function returns a frame with a ``ts`` column (aware UTC, inside the day before :data:`NOW`) and
a model config (a dict, as in a YAML file, without its ``source``). Fixed seeds: the same frame at
every run.

- :func:`loan_log`: a loan-approval model - float64 probabilities from a real scikit-learn
  LogisticRegression, ``race`` with five values, ``sex``, and race x sex;
- :func:`zipf_log`: one categorical attribute with thousands of values of Zipf-distributed sizes;
- :func:`jigsaw_log`: the Jigsaw-like toxicity log of ``bench_service.py`` (nine REAL identity
  columns, NULL where not annotated, 4-decimal scores), with ``decimals=None`` raw float scores;
- :func:`many_models`: one log holding many models' predictions, told apart by a ``model`` column.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

NOW = datetime(2026, 11, 22, tzinfo=UTC)
START, END = NOW - timedelta(days=1), NOW

RACES = ("White", "Black", "Hispanic", "Asian", "Other")
RACE_SHARES = (0.60, 0.13, 0.17, 0.06, 0.04)
IDENTITIES = ("male", "female", "christian", "muslim", "jewish", "black", "white", "lgbt", "psychiatric")
PREVALENCE = (0.11, 0.13, 0.09, 0.05, 0.04, 0.04, 0.05, 0.03, 0.02)


def _times(rng: np.random.Generator, rows: int) -> pd.Series:
    offsets = np.sort(rng.uniform(60, 23 * 3600, rows))
    return pd.Series(pd.Timestamp(START) + pd.to_timedelta(offsets, unit="s"))


def loan_log(rows: int, seed: int = 7) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Applicants with income, debt ratio and credit history; a LogisticRegression trained on 20,000
    of them scores every one (``score``: the probability of repaying, float64); ``label``: repaid."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(seed)
    race = rng.choice(RACES, rows, p=RACE_SHARES)
    sex = rng.choice(("F", "M"), rows)
    income = rng.lognormal(10.8, 0.5, rows) * np.where(race == "Black", 0.85, 1.0)
    debt = rng.beta(2, 5, rows)
    history = rng.integers(0, 30, rows)
    features = np.column_stack([np.log(income), debt, history])
    truth = -14 + 1.3 * np.log(income) - 3.0 * debt + 0.05 * history + rng.normal(0, 1, rows)
    label = (truth > 0).astype(np.int64)
    train = rng.choice(rows, min(rows, 20_000), replace=False)
    model = LogisticRegression(max_iter=1000).fit(features[train], label[train])
    frame = pd.DataFrame(
        {
            "id": np.arange(rows),
            "ts": _times(rng, rows),
            "score": model.predict_proba(features)[:, 1],
            "label": label,
            "race": race,
            "sex": sex,
        }
    )
    config = {
        "name": "loans",
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [
            {"attribute": "race", "kind": "categorical", "column": "race", "reference": "White"},
            {"attribute": "sex", "kind": "categorical", "column": "sex", "reference": "M"},
            {"attribute": "race_sex", "kind": "intersection", "columns": ["race", "sex"]},
        ],
        "windows": [{"name": "24h", "length": "24h"}],
    }
    return frame, config


def zipf_log(rows: int, values: int = 2000, seed: int = 11) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A ``region`` attribute with ``values`` values whose sizes follow Zipf's law (exponent 1.1);
    float64 scores."""
    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, values + 1) ** 1.1
    region = rng.choice(values, rows, p=weights / weights.sum())
    label = (rng.random(rows) < 0.2).astype(np.int64)
    score = 1 / (1 + np.exp(-(-1.5 + 2.5 * label + rng.normal(0, 1, rows))))
    frame = pd.DataFrame(
        {
            "id": np.arange(rows),
            "ts": _times(rng, rows),
            "score": score,
            "label": label,
            "region": np.char.add("r", region.astype(str)),
        }
    )
    config = {
        "name": "regions",
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [{"attribute": "region", "kind": "categorical", "column": "region", "reference": "r0"}],
        "max_groups": values,
        "windows": [{"name": "24h", "length": "24h"}],
    }
    return frame, config


def jigsaw_log(rows: int, decimals: int | None = 4, seed: int = 42) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Nine identity columns, 1.0 where a comment mentions the identity, 0.0 where annotators said it
    does not, NULL where it was not annotated; ~8% toxic; scores rounded to ``decimals`` (None: raw)."""
    rng = np.random.default_rng(seed)
    toxic = rng.random(rows) < 0.08
    logit = -2.2 + 3.6 * toxic + rng.normal(0, 1, rows)
    frame = pd.DataFrame({"id": np.arange(rows), "ts": _times(rng, rows)})
    for name, p in zip(IDENTITIES, PREVALENCE, strict=True):
        member = rng.random(rows) < p
        logit += 0.8 * (member & ~toxic) * (name == "muslim")
        frame[name] = np.where(member, 1.0, np.where(rng.random(rows) < 0.3, 0.0, np.nan))
    score = 1 / (1 + np.exp(-logit))
    frame["score"] = score if decimals is None else np.round(score, decimals)
    frame["label"] = toxic.astype(np.int64)
    config = {
        "name": "toxicity",
        "columns": {"id": "id", "timestamp": "ts", "score": "score", "label": "label"},
        "groups": [{"attribute": "identity", "kind": "indicator", "columns": list(IDENTITIES)}],
        "windows": [{"name": "24h", "length": "24h"}],
    }
    return frame, config


def many_models(models: int, rows_per_model: int, seed: int = 5) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """``models`` loan models (``model-00``, ...) in one log, ``rows_per_model`` rows each, in time
    order across models (as a shared prediction log fills); one config per model, ``columns.model``."""
    frames, configs = [], []
    for i in range(models):
        frame, config = loan_log(rows_per_model, seed=seed + i)
        name = f"model-{i:02d}"
        frames.append(frame.assign(model=name, id=frame["id"] + i * rows_per_model))
        configs.append(config | {"name": name, "columns": config["columns"] | {"model": "model"}})
    log = pd.concat(frames, ignore_index=True).sort_values("ts", kind="stable", ignore_index=True)
    return log, configs
