"""``columns.weight``: each row counts as its weight.

The reference for count weights is the log with every row repeated as many times as its weight,
evaluated without weights (itself pinned to the row path by test_counts): every value, interval and
group count must equal it, on every source and path - SQLite counted and row by row, PostgreSQL,
Parquet, JSON Lines, and the fleet's published counts. Bad rows are rows of the log: counted as the
unweighted log counts them. Rows whose weight is unusable (missing, text, negative, a fraction for
counts) are dropped and counted as ``weight_invalid``, one each.

Sampling weights (``weights: sampling``) give the same point values, and intervals on Kish's
effective sample size of each side of each comparison: with every weight equal, the effective
sample is the log itself.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from monitor.config import settings_from_dict
from monitor.evaluation.evaluators import build_evaluators
from monitor.evaluation.results import ModelEvaluation
from tests.monitor.test_counts import NOW, comparable, dirty_log, model_config

_UNUSABLE = (None, "x", -1.0, 2.5, float("inf"))  # each a row of weight_invalid (2.5: for counts)


def _weighted_log(rows: int = 2000) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A log with integer weights 0-4, and the same log expanded (each row repeated weight times);
    a few rows of the weighted log carry an unusable weight and are in no expansion."""
    frame = dirty_log(rows).drop(columns=["pred", "cls"])
    rng = np.random.default_rng(11)
    weight = rng.choice([0, 1, 1, 2, 3, 4], len(frame)).astype(float)
    expanded = frame.loc[frame.index.repeat(weight.astype(int))].reset_index(drop=True)
    recent = frame[(frame["model"] == "tox") & (frame["ts"] >= NOW - pd.Timedelta(hours=6))]
    bad = recent.sample(len(_UNUSABLE), random_state=5).assign(weight=list(_UNUSABLE))
    weighted = pd.concat([frame.assign(weight=weight).astype({"weight": object}), bad], ignore_index=True)
    return weighted.sort_values("ts", ignore_index=True), expanded, frame


def _model(source: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return model_config(source) | {"panes": {"enabled": False}} | keys


def _evaluate(model: dict[str, Any]) -> ModelEvaluation:
    with build_evaluators(settings_from_dict({"models": [model]})) as evaluators:
        return evaluators["tox"].evaluate(NOW)


def _sqlite(tmp_path: Path, frame: pd.DataFrame, name: str) -> str:
    url = f"sqlite:///{tmp_path / name}.db"
    stored = frame.assign(ts=frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3] + "Z")
    engine = sa.create_engine(url)
    stored.to_sql("predictions", engine, index=False)
    engine.dispose()
    return url


def _windows(result: ModelEvaluation) -> dict[str, Any]:
    out = comparable(result)
    del out["rows_read"]  # entries read: the weighted log has fewer
    return _rounded(out)


def _close(a: Any, b: Any) -> bool:
    """Equal, floats to 1e-9 (an interval found by bisection differs in its last digits)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (
            math.isfinite(a) and math.isfinite(b) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
        )
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _rounded(value: Any) -> Any:
    """Floats to 10 significant digits: a weighted sum adds w x value where the expanded rows add
    value w times, which may differ in the last bits (an SMD's variance: 4e-16; an interval found by
    bisection: 1e-11)."""
    if isinstance(value, float):
        return value if not math.isfinite(value) else float(f"{value:.10g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_rounded(v) for v in value)
    return value


def _expected(expanded: ModelEvaluation, plain: ModelEvaluation) -> dict[str, Any]:
    """The expanded log's windows; the rejected rows of the log as it is, and the unusable weights."""
    out = _windows(expanded)
    out["rejected"] = dict(Counter(_windows(plain)["rejected"]) + Counter(weight_invalid=len(_UNUSABLE)))
    return out


def _references(
    tmp_path: Path, expanded: pd.DataFrame, plain: pd.DataFrame
) -> tuple[ModelEvaluation, ModelEvaluation]:
    return tuple(  # type: ignore[return-value]
        _evaluate(_model({"kind": "sql", "url": _sqlite(tmp_path, frame, name), "table": "predictions"}))
        for frame, name in ((expanded, "expanded"), (plain, "plain"))
    )


def _write_jsonl(folder: Path, frame: pd.DataFrame) -> str:
    folder.mkdir()
    records = frame.assign(ts=frame["ts"].map(lambda t: t.isoformat())).astype(object)
    with (folder / "log.jsonl").open("w") as out:
        for record in records.to_dict("records"):
            out.write(
                json.dumps(
                    {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in record.items()}
                )
                + "\n"
            )
    return str(folder / "log.jsonl")


def test_count_weights_equal_the_expanded_rows_on_sqlite(tmp_path: Path) -> None:
    weighted, expanded, plain = _weighted_log()
    reference, as_logged = _references(tmp_path, expanded, plain)
    assert reference.windows[1].values and reference.windows[1].n_rows > 1000
    url = _sqlite(tmp_path, weighted, "weighted")
    # counted by the database, row by row, and through sealed panes
    for aggregate, panes in ((True, False), (False, False), (True, True)):
        source = {"kind": "sql", "url": url, "table": "predictions", "aggregate": aggregate}
        columns = model_config(source)["columns"] | {"weight": "weight"}
        result = _evaluate(_model(source, columns=columns, panes={"enabled": panes}))
        assert _windows(result) == _expected(reference, as_logged), (aggregate, panes)


@pytest.mark.parametrize("kind", ["parquet", "jsonl", "postgresql", "published"])
def test_count_weights_equal_the_expanded_rows_everywhere(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    weighted, expanded, plain = _weighted_log()
    reference, as_logged = _references(tmp_path, expanded, plain)
    columns = model_config({})["columns"] | {"weight": "weight"}
    if kind == "parquet":
        path = tmp_path / "log.parquet"
        table = pa.Table.from_pandas(
            weighted.astype({"weight": "float64"}, errors="ignore").assign(
                weight=pd.to_numeric(weighted["weight"], errors="coerce")
            ),
            preserve_index=False,
        )
        pq.write_table(table, path)
        source: dict[str, Any] = {"kind": "files", "path": str(path)}
        result = _evaluate(_model(source, columns=columns))
        # text in a float column cannot be stored: "x" is a NULL there, still one weight_invalid row
    elif kind == "jsonl":
        source = {"kind": "files", "path": _write_jsonl(tmp_path / "jsonl", weighted)}
        result = _evaluate(_model(source, columns=columns))
    elif kind == "postgresql":
        url = request.getfixturevalue("postgres_url")
        engine = sa.create_engine(url)
        stored = weighted.assign(weight=pd.to_numeric(weighted["weight"], errors="coerce"))
        stored.to_sql("weighted_predictions", engine, index=False, if_exists="replace")
        engine.dispose()
        source = {"kind": "sql", "url": url, "table": "weighted_predictions"}
        result = _evaluate(_model(source, columns=columns))
    else:  # three sidecars publish their thirds of the weighted log, a central judges them
        store = tmp_path / "store"
        for i in range(3):
            url = _sqlite(tmp_path, weighted.iloc[i::3], f"pod-{i}")
            source = {"kind": "sql", "url": url, "table": "predictions", "timestamp_format": "iso_utc"}
            _evaluate(_model(source, columns=columns, publish={"url": str(store), "publisher": f"pod-{i}"}))
        result = _evaluate(_model({"kind": "published", "url": str(store)}, columns=columns))
    assert _windows(result) == _expected(reference, as_logged)


def test_sampling_weights_all_equal_are_the_log_itself(tmp_path: Path) -> None:
    """Every row weighted 3 as a sampling weight: the effective sample is the log (values, intervals
    and counts of the unweighted log); as counts, three copies of each row."""
    frame = dirty_log(2000).drop(columns=["pred", "cls"])
    plain = _evaluate(
        _model({"kind": "sql", "url": _sqlite(tmp_path, frame, "plain"), "table": "predictions"})
    )
    url = _sqlite(tmp_path, frame.assign(weight=3.0), "weighted")
    columns = model_config({})["columns"] | {"weight": "weight"}
    sampled = _evaluate(
        _model({"kind": "sql", "url": url, "table": "predictions"}, columns=columns, weights="sampling")
    )
    mine, theirs = _windows(sampled), _windows(plain)
    assert mine["rejected"] == theirs["rejected"]  # rows of the log
    for window in ("1h", "6h"):  # every value, interval and judged size: the log's
        for part in ("values", "model", "dropped", "missing"):
            assert _close(mine[window][part], theirs[window][part]), (window, part)
        # the rows the window stands for: three times the log's
        assert mine[window]["counts"] == tuple(3 * n for n in theirs[window]["counts"])
    tripled = _evaluate(
        _model(
            {
                "kind": "sql",
                "url": _sqlite(tmp_path, pd.concat([frame] * 3), "tripled"),
                "table": "predictions",
            }
        )
    )
    counted = _evaluate(_model({"kind": "sql", "url": url, "table": "predictions"}, columns=columns))
    counted_windows, tripled_windows = _windows(counted), _windows(tripled)
    assert counted_windows.pop("rejected") == theirs["rejected"]  # rows of the log, not their copies
    del tripled_windows["rejected"]
    assert counted_windows == tripled_windows


def test_sampling_weights_keep_the_values_and_use_the_effective_sample(tmp_path: Path) -> None:
    """Weights 1 and 4: every point value equals the expanded log's (a weighted rate is a rate of the
    expanded rows); each group's judged size is Kish's (sum w)^2 / sum w^2 of its own rows, computed
    here by hand; the window's row count is the rows it stands for, sum w."""
    frame = dirty_log(2000).drop(columns=["pred", "cls"])
    weight = np.where(np.random.default_rng(2).random(len(frame)) < 0.3, 4.0, 1.0)
    expanded = frame.loc[frame.index.repeat(weight.astype(int))]
    reference = _evaluate(
        _model({"kind": "sql", "url": _sqlite(tmp_path, expanded, "expanded"), "table": "predictions"})
    )
    url = _sqlite(tmp_path, frame.assign(weight=weight), "weighted")
    columns = model_config({})["columns"] | {"weight": "weight"}
    sampled = _evaluate(
        _model({"kind": "sql", "url": url, "table": "predictions"}, columns=columns, weights="sampling")
    )
    for mine, theirs in zip(sampled.windows, reference.windows, strict=True):
        got = {(v.metric, v.attribute, v.group): v.value for v in mine.values}
        want = {(v.metric, v.attribute, v.group): v.value for v in theirs.values}
        # an intersection's group below its min_size in the effective sample is left out
        assert got.keys() <= want.keys() and len(got) > len(want) / 2
        # the effective sample of the window's rows of model tox with a usable score and label ...
        inside = frame["ts"].between(mine.start, mine.end, inclusive="left").to_numpy()
        kept = inside & (frame["model"] == "tox").to_numpy()
        kept &= frame["score"].between(0, 1).to_numpy() & (frame["label"] != 2.0).to_numpy()
        w = weight[kept]
        assert mine.n_rows == round(w.sum()) == theirs.n_rows
        for race in ("b", "c"):  # the race groups' own effective samples
            mask = (frame["race"] == race).to_numpy()[kept]
            own = w[mask].sum() ** 2 / (w[mask] ** 2).sum()
            (judged,) = [v for v in mine.values if v.metric == "disparate_impact" and v.group == race]
            assert judged.n_group == pytest.approx(own, rel=1e-9)
        for key, value in got.items():
            if key[0] == "two_sd_rule":  # a z statistic: of the effective samples, smaller than theirs
                assert abs(value) < abs(want[key]) or value == want[key] == 0, key
            elif key[0].startswith("standardized_"):  # a variance with n - 1 (n: the sample's): nearly
                assert value == pytest.approx(want[key], rel=1e-2, nan_ok=True), key
            else:  # rates, AUCs, ratios, differences: exactly
                assert value == pytest.approx(want[key], rel=1e-9, abs=1e-12, nan_ok=True), key
    # ... and intervals wider than the expanded rows' (which count 1.9x as many rows as there are)
    theirs_by = {(r.metric, r.attribute, r.group): r for r in reference.windows[1].values}
    widths = [
        (v.ci_upper - v.ci_lower, r.ci_upper - r.ci_lower)
        for v in sampled.windows[1].values
        if v.metric != "two_sd_rule"  # a z statistic: its interval is in units of its own SE
        and (r := theirs_by[(v.metric, v.attribute, v.group)]) is not None
        and np.isfinite(v.ci_upper - v.ci_lower)
        and np.isfinite(r.ci_upper - r.ci_lower)
    ]
    assert widths and all(m[0] >= m[1] - 1e-12 for m in widths)
    assert sum(mine > theirs for mine, theirs in widths) > 0.9 * len(widths)


def test_a_group_of_unit_weights_keeps_its_own_sample_size(tmp_path: Path) -> None:
    """Found by review: one factor for the whole window made a group of 1,000 rows of weight 1 a group
    of 5 when another group had weights of 200 (its intervals 10x too wide), and a group of equal
    large weights larger than its rows (too narrow). Each side is its own effective sample now."""
    rng = np.random.default_rng(8)
    n = 3000
    frame = dirty_log(n).drop(columns=["pred", "cls"]).assign(model="tox")
    race = np.where(np.arange(n) % 3 == 0, "a", "b")
    weight = np.where(race == "a", 1.0, np.where(rng.random(n) < 0.5, 200.0, 1.0))
    stored = frame.assign(race=race, weight=weight)
    url = _sqlite(tmp_path, stored, "weighted")
    columns = model_config({})["columns"] | {"weight": "weight"}
    groups = [{"attribute": "race", "kind": "categorical", "column": "race", "reference": "b"}]
    source = {"kind": "sql", "url": url, "table": "predictions"}
    sampled = _evaluate(_model(source, columns=columns, weights="sampling", groups=groups))
    plain = _evaluate(
        _model({**source, "url": _sqlite(tmp_path, stored.drop(columns="weight"), "plain")}, groups=groups)
    )
    for mine, theirs in zip(sampled.windows, plain.windows, strict=True):
        (rate,) = [v for v in mine.values if v.metric == "selection_rate" and v.group == "a"]
        (same,) = [v for v in theirs.values if v.metric == "selection_rate" and v.group == "a"]
        assert rate.n_group == same.n_group > 100  # group a's rows, each of weight 1
        assert (rate.value, rate.ci_lower, rate.ci_upper) == pytest.approx(
            (same.value, same.ci_lower, same.ci_upper)
        )


def test_weight_config_errors_name_the_key() -> None:
    source = {"kind": "sql", "url": "sqlite:///x.db", "table": "predictions"}
    with pytest.raises(Exception, match=r"columns\.weight: only a binary model weighs its rows"):
        settings_from_dict(
            {
                "models": [
                    _model(
                        source,
                        task="multiclass",
                        columns={"timestamp": "ts", "prediction": "p", "label": "l", "weight": "w"},
                    )
                ]
            }
        )
    with pytest.raises(Exception, match=r"weights: says what columns\.weight holds"):
        settings_from_dict({"models": [_model(source, weights="sampling")]})
