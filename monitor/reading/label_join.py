"""Labels that arrive in their own table or files, joined onto the prediction log by the prediction id."""

from __future__ import annotations

from decimal import Decimal

import pandas as pd

from monitor.config import ModelConfig
from monitor.core.errors import SourceError
from monitor.sources.contract import Batch

__all__ = ["join_labels"]


def join_labels(batch: Batch, labels: Batch, model: ModelConfig) -> Batch:
    """``batch`` with each row's label from ``labels`` where its own label column has none.

    The latest label of an id wins when the label source records arrival times (a relabel
    replaces the first judgement); of labels that arrived at the same time, the greatest, a missing
    one before all (the order the database join uses: :meth:`SqlSource.latest_labels`). Ids are
    compared as text, so 17, 17.0 and "17" join.
    """
    labels_cfg = model.labels
    assert labels_cfg is not None, "only models with a label source join labels"
    id_col, label_col = labels_cfg.columns.id, labels_cfg.columns.label
    missing = [c for c in (id_col, label_col) if c not in labels.frame.columns]
    if missing:
        raise SourceError(f"label source: column(s) {missing} missing; it has {list(labels.frame.columns)}")
    found = labels.frame
    if labels_cfg.columns.timestamp is not None:
        arrival = labels_cfg.columns.timestamp
        try:  # ties in arrival: ordered by the label too, so that which one wins does not depend on read order
            found = found.sort_values([arrival, label_col], kind="stable", na_position="last")
        except TypeError:  # labels of several types (text and numbers) have no order
            found = found.sort_values(arrival, kind="stable")
    found = found.assign(__join_key=_id_text(found[id_col]))
    found = found.dropna(subset=["__join_key"]).drop_duplicates("__join_key", keep="last")
    found = found[["__join_key", label_col]].rename(columns={label_col: "__joined_label"})
    frame = batch.frame
    pred_id = labels_cfg.join_on or model.columns.id
    if pred_id not in frame.columns:
        raise SourceError(f"column {pred_id!r} (the prediction id to join labels on) is missing")
    frame = frame.assign(__join_key=_id_text(frame[pred_id]))
    merged = frame.merge(found, on="__join_key", how="left")
    label_name = model.columns.label or "label"
    if label_name in merged.columns:
        merged[label_name] = merged[label_name].where(merged[label_name].notna(), merged["__joined_label"])
    else:
        merged[label_name] = merged["__joined_label"]
    merged = merged.drop(columns=["__join_key", "__joined_label"])
    return Batch(merged, batch.rejected + labels.rejected, batch.skipped_files + labels.skipped_files)


def _id_text(values: pd.Series) -> pd.Series:
    """Ids as text, so that 17, 17.0 (an integer column with a NULL) and "17" join; missing stays NA."""

    def text(v: object) -> str | None:
        if v is None or (isinstance(v, float | Decimal) and v != v):
            return None
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        if isinstance(v, Decimal):  # NUMERIC ids: 17.0 -> "17", 17.50 -> "17.5", as for floats
            return str(int(v)) if v == v.to_integral_value() else format(v.normalize(), "f")
        return str(v)

    return values.astype(object).map(text).astype("string")
