"""The task families other than binary classification, as the service sees them.

A model's ``task:`` picks the columns it needs, how bad rows are recognised, and which
``metrics_core`` family module evaluates its windows. Every family returns the same
:class:`~metrics_core.Report`, so export, alerts and the CLI need no special cases.
"""

from __future__ import annotations

import importlib
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd

import metrics_core as mc
from monitor.config import ModelConfig

__all__ = [
    "FAMILY_OF_TASK",
    "clean_task_rows",
    "evaluate_task",
    "family_module",
    "load_task_options",
    "task_data",
]

FAMILY_OF_TASK = {
    "multiclass": "multiclass",
    "regression": "regression",
    "recommender": "recommender",
    "clustering": "clustering",
    "text": "text",
}
PREFIX = "__d_"


def family_module(task: str) -> ModuleType:
    return importlib.import_module(f"metrics_core.{FAMILY_OF_TASK[task]}")


def load_task_options(task: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Task options with the files they name read once, at start-up (a bad file names its key).

    Text models: ``lexicon_file`` (one word per line), ``targets_file`` (one per line),
    ``word_lists_file`` (JSON ``{group: [words]}``), ``weat_sets_file`` (JSON ``{X, Y, A, B}``)
    and ``embeddings_file`` (GloVe-style text: ``word v1 v2 ...``). Inline ``lexicon``,
    ``targets``, ``word_lists`` and ``weat_sets`` work too. Without word lists or targets the
    shipped defaults (gender words, professions) are used; there is no default lexicon.
    """
    from pathlib import Path

    from monitor.errors import ConfigError

    out = dict(options)
    if task != "text":
        return out
    from metrics_core import text as tok

    readers: dict[str, Callable[[str], Any]] = {
        "lexicon_file": tok.parse_word_list,
        "targets_file": tok.parse_word_list,
        "word_lists_file": json.loads,
        "weat_sets_file": json.loads,
        "embeddings_file": tok.parse_embeddings,
    }
    for key, reader in readers.items():
        if key in out:
            path = Path(str(out.pop(key)))
            try:
                out[key.removesuffix("_file")] = reader(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"options.{key}: cannot read {path}: {exc}") from exc
    out.setdefault("word_lists", tok.default_word_lists())
    out.setdefault("targets", tok.default_targets())
    return out


def _numeric(values: pd.Series) -> np.ndarray:
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def _text(values: pd.Series) -> np.ndarray:
    """Class labels and ids as text (1 and 1.0 are one class); missing stays None."""
    out = values.astype(object).where(values.notna(), None)
    return np.array(
        [
            None if v is None else (str(int(v)) if isinstance(v, float) and v.is_integer() else str(v))
            for v in out
        ],
        dtype=object,
    )


def clean_task_rows(frame: pd.DataFrame, model: ModelConfig) -> tuple[pd.DataFrame, Counter[str]]:
    """Canonical ``__d_<key>`` columns of the model's task; bad rows dropped and counted by reason."""
    cols = model.columns
    rejected: Counter[str] = Counter()
    keep = np.ones(len(frame), dtype=bool)
    out: dict[str, Any] = {}

    def reject(mask: np.ndarray, reason: str) -> None:
        new = mask & keep
        if new.any():
            rejected[reason] += int(new.sum())
            keep[new] = False

    def required_text(key: str, column: str | None, reason: str) -> None:
        assert column is not None
        values = _text(frame[column])
        reject(np.array([v is None for v in values], dtype=bool), reason)
        out[key] = values

    def label_text() -> None:
        if cols.label and cols.label in frame.columns:
            out["y_true"] = _text(frame[cols.label])

    task = model.task
    if task == "multiclass":
        required_text("y_pred", cols.prediction, "prediction_invalid")
        label_text()
    elif task == "regression":
        score = _numeric(frame[cols.score or ""])
        reject(~np.isfinite(score), "score_invalid")
        out["y_score"] = score
        if cols.label:
            label = _numeric(frame[cols.label])
            reject(
                np.isinf(label) | (np.isnan(label) & frame[cols.label].notna().to_numpy()), "label_invalid"
            )
            out["y_true"] = label
    elif task == "recommender":
        required_text("user", cols.user, "user_missing")
        required_text("item", cols.item, "item_missing")
        if cols.rank:
            rank = _numeric(frame[cols.rank])
            reject(~np.isfinite(rank) | (rank < 1), "rank_invalid")
            out["rank"] = rank
        if cols.score:
            score = _numeric(frame[cols.score])
            reject(~np.isfinite(score), "score_invalid")
            out["y_score"] = score
        if cols.label:
            rel = _numeric(frame[cols.label])
            reject(~np.isnan(rel) & ~np.isin(rel, (0.0, 1.0)), "label_invalid")
            out["y_true"] = rel
    elif task == "clustering":
        required_text("cluster", cols.cluster, "cluster_missing")
        if cols.features:
            feats = np.column_stack([_numeric(frame[c]) for c in cols.features])
            reject(~np.isfinite(feats).all(axis=1), "features_invalid")
            for i in range(feats.shape[1]):
                out[f"features{i}"] = feats[:, i]
    elif task == "text":
        required_text("text", cols.text, "text_missing")
    else:  # pragma: no cover - config validation rules this out
        raise ValueError(f"unknown task {task!r}")

    result = pd.DataFrame({PREFIX + k: v for k, v in out.items()}, index=frame.index)
    return result.loc[keep], rejected


def task_data(frame: pd.DataFrame, model: ModelConfig) -> dict[str, np.ndarray]:
    """The row-aligned arrays a family module reads, from a cleaned frame."""
    data: dict[str, np.ndarray] = {}
    feature_cols = sorted(
        (c for c in frame.columns if c.startswith(PREFIX + "features")),
        key=lambda c: int(c.removeprefix(PREFIX + "features")),
    )
    for c in frame.columns:
        if c.startswith(PREFIX) and c not in feature_cols:
            data[c.removeprefix(PREFIX)] = frame[c].to_numpy()
    if feature_cols:
        data["features"] = frame[feature_cols].to_numpy(dtype=np.float64)
    return data


def evaluate_task(
    task: str,
    data: Mapping[str, np.ndarray],
    attributes: Sequence[mc.Attribute],
    *,
    metrics: Sequence[str],
    confidence: float,
    fair_ranges: Mapping[str, Sequence[float | None]] | None,
    min_samples: float,
    options: Mapping[str, Any],
) -> mc.Report:
    evaluate: Callable[..., mc.Report] = family_module(task).evaluate
    return evaluate(
        data,
        attributes,
        metrics=list(metrics),
        confidence=confidence,
        fair_ranges=fair_ranges,
        min_samples=min_samples,
        **dict(options),
    )
