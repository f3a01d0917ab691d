"""``fairwatch validate --connect``: do the configured tables, files and columns exist?

A config can be valid and still name a table that is not there or a column spelt as in
another log; the service would then report a source failure at its first tick. Here each
source is opened once, before anything runs: a SQL table (or view) is reflected with
SQLAlchemy's inspector and a query is run with ``LIMIT 0`` for its column names; a files
source's glob must match, and the newest file's columns (a Parquet schema, a CSV header, the
keys of the first JSON lines) must hold the configured ones; a Spark table or path is opened
by a Spark job (a local master starts its JVM) for its schema. In-memory sources are left to
their first read. Each problem names the config key, and the name meant when one is close.
"""

from __future__ import annotations

import csv
import glob
import gzip
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import sqlalchemy as sa

from metrics_core import REST, category_name
from monitor.config import ModelConfig, Settings, SourceConfig
from monitor.core.errors import SourceError
from monitor.core.secrets import mask_url
from monitor.core.suggest import did_you_mean
from monitor.reading.frame import group_columns
from monitor.sources.sql.connection import short_cause
from monitor.tasks import TASKS

__all__ = ["SourceCheck", "check_sources"]

_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet"}
_JSON_LINES = 100  # the keys of this many first lines stand for a JSON Lines file's columns
_VALUES = 1000  # a reference is checked against at most this many distinct values of its column


@dataclass(frozen=True)
class SourceCheck:
    """What opening one source found: the columns it has, or the problems that stop a read."""

    where: str  # the config key: models[0].source
    what: str  # the source, credentials masked
    columns: tuple[str, ...]
    problems: tuple[str, ...]
    skipped: str | None = None  # why the source was not opened


def check_sources(settings: Settings) -> list[SourceCheck]:
    """Open every prediction and label source of ``settings`` once and check what the config names."""
    checks = []
    for i, model in enumerate(settings.models):
        if model.source.kind == "published":  # counts, not a log: what was published for this config
            checks.append(_published_check(f"models[{i}].source", model))
            continue
        check = _check(f"models[{i}].source", model.source, _prediction_columns(model, f"models[{i}]"))
        checks.append(_with_references(check, model, f"models[{i}]"))
        if model.labels is not None:
            cols = model.labels.columns
            named = {"labels.columns.id": cols.id, "labels.columns.label": cols.label}
            if cols.timestamp:
                named["labels.columns.timestamp"] = cols.timestamp
            where = f"models[{i}].labels"
            checks.append(
                _check(
                    f"{where}.source", model.labels.source, {f"models[{i}].{k}": v for k, v in named.items()}
                )
            )
        if model.publish is not None:
            checks.append(_publish_check(f"models[{i}].publish", model))
    return checks


def _publish_check(where: str, model: ModelConfig) -> SourceCheck:
    """Whether a publisher reaches its store (the first publication creates what is missing)."""
    from monitor.sources.published.store import open_store

    assert model.publish is not None
    store = open_store(model.publish.url, model.name, f"{where}.url")
    what = f"the store model {model.name!r} publishes to: {store.describe()}"
    try:
        problem = store.check(publishing=True)
    finally:
        store.close()
    return SourceCheck(where, what, (), () if problem is None else (f"{where}.url: {problem}",))


def _published_check(where: str, model: ModelConfig) -> SourceCheck:
    """A published source: its store, and counts published there for this model's config (the same
    fingerprint - columns, groups, thresholds, score decimals - as the publishers')."""
    from monitor.core.errors import SourceError
    from monitor.core.secrets import mask_url
    from monitor.reading.plan import count_request
    from monitor.sources.contract import WEIGHT
    from monitor.sources.published.store import open_store, request_fingerprint

    assert model.source.url is not None, "checked by the config"
    name = model.source.name or model.name
    store = open_store(model.source.url, name, f"{where}.url")
    what = f"the counts published for model {name!r} in {store.describe()}"
    try:
        problem = store.check()
        if problem is not None:
            return SourceCheck(where, what, (), (f"{where}.url: {problem}",))
        fingerprint = request_fingerprint(count_request(model, ()))
        publishers = store.heartbeats(fingerprint)
        if publishers:
            panes = (store.read(listed, fingerprint) for listed in store.listing(fingerprint))
            first = next((pane for pane in panes if pane is not None), None)
            if first is None:
                return SourceCheck(
                    where,
                    what,
                    (),
                    (f"{where}: publishers are there, but no pane they published can be read",),
                )
            columns = tuple(c for c in first.frame.columns if c != WEIGHT)
            return SourceCheck(where, f"{what} ({len(publishers)} publisher(s))", columns, ())
        others = [f for f in store.fingerprints() if f != fingerprint]
    except SourceError as exc:
        return SourceCheck(where, what, (), (f"{where}.url: {exc}",))
    finally:
        store.close()
    problem = (
        f"{where}: nothing published for this model's config, but for {len(others)} other config(s): the "
        "publishers' columns, groups, thresholds or score_decimals differ from this model's"
        if others
        else f"{where}: nothing published yet for model {name!r} (do the replicas run with publish.url "
        f"{mask_url(model.source.url)}?)"
    )
    return SourceCheck(where, what, (), (problem,))


def _prediction_columns(model: ModelConfig, where: str) -> dict[str, str]:
    """The columns a model's prediction source must have, by the config key that names each."""
    task = TASKS[model.task]
    cols = model.columns
    named = {f"{where}.columns.timestamp": cols.timestamp}
    for key in task.reads:
        if key == "label" and model.labels is not None:
            continue  # joined from the label source
        if key in task.optional and key not in cols.model_fields_set:
            continue  # a default name that may be missing: its metrics are skipped
        value = getattr(cols, key)
        for j, name in enumerate(value if isinstance(value, list) else [value]):
            if name:
                named[f"{where}.columns.{key}" + (f"[{j}]" if isinstance(value, list) else "")] = name
    if cols.model:
        named[f"{where}.columns.model"] = cols.model
    if cols.weight:
        named[f"{where}.columns.weight"] = cols.weight
    if model.labels is not None:
        key = "labels.join_on" if model.labels.join_on else "columns.id"
        named[f"{where}.{key}"] = model.labels.join_on or cols.id
    for g, group in enumerate(model.groups):
        for j, name in enumerate(group_columns(group)):
            suffix = "column" if group.kind == "categorical" else f"columns[{j}]"
            named[f"{where}.groups[{g}].{suffix}"] = name
    return named


_UNDEFINED = "every comparison with it would be undefined"
_UNUSED = "its threshold would never apply"


def _references(model: ModelConfig, where: str) -> list[tuple[str, str, str, str]]:
    """The values ``model``'s config names in a column - its groups' references and its per-group
    ``thresholds``: (config key, column, value, what a typo in it would do)."""
    out = []
    for g, group in enumerate(model.groups):
        key = f"{where}.groups[{g}].reference"
        if group.kind == "categorical" and isinstance(group.reference, str) and group.reference != REST:
            out.append((key, group.column or "", group.reference, _UNDEFINED))
        elif group.kind == "intersection" and not isinstance(group.reference, str):
            out += [
                (f"{key}[{j}]", c, v, _UNDEFINED)
                for j, (c, v) in enumerate(zip(group.columns, group.reference, strict=False))
            ]
    for column, by_value in model.thresholds.items():
        out += [(f"{where}.thresholds.{column}.{value}", column, value, _UNUSED) for value in by_value]
    return out


def _with_references(check: SourceCheck, model: ModelConfig, where: str) -> SourceCheck:
    """``check`` with a problem for each named reference that is no value of its column: a typo in
    ``reference`` would make every comparison undefined, silently. Read from a SQL table or query
    (its distinct values: a scan of the column; not a query that reads a ``:start``/``:end`` range)
    and every matching Parquet file; a reference is judged absent only from a complete list of at
    most :data:`_VALUES` values, and a read that fails is no finding."""
    references = [r for r in _references(model, where) if r[1] in check.columns]
    if check.skipped or check.problems or not references:
        return check
    source = model.source
    reader = {"sql": _sql_values, "files": _file_values}.get(source.kind)
    if reader is None:
        return check
    problems = []
    values: dict[str, set[str] | None] = {}  # each column read once
    for key, column, value, consequence in references:
        if column not in values:
            try:
                values[column] = reader(source, column, model)
            except Exception:  # a check that cannot run is no finding: the columns were found
                values[column] = None
        seen = values[column]
        if seen is not None and category_name(value) not in seen:
            hint = did_you_mean(value, seen)
            some = ", ".join(sorted(seen)[:10]) + (", ..." if len(seen) > 10 else "")
            problems.append(
                f"{key}: `{value}` is no value of column `{column}` in {check.what}{hint} (its values: {some}); "
                f"{consequence}"
            )
    return replace(check, problems=check.problems + tuple(problems))


def _sql_values(source: SourceConfig, column: str, model: ModelConfig) -> set[str] | None:
    """The distinct values of ``column`` in the model's rows, named as groups are (``None``: none,
    or too many to list). Named, not compared in SQL: the database would find ``'2.0'`` in a
    column of integers, where the service's groups are named ``2``."""
    assert source.url is not None
    url = sa.make_url(source.url)
    engine = sa.create_engine(
        url, **({"connect_args": {"connect_timeout": 10}} if url.get_backend_name() == "postgresql" else {})
    )
    names = [column, *([model.columns.model] if model.columns.model else [])]
    if source.query and (":start" in source.query or ":end" in source.query):
        return None  # the query reads a time range: no range read here stands for the whole log
    if source.query:
        text = sa.text(source.query.strip().rstrip(";")).columns(*(sa.column(n) for n in names))
        rows: sa.FromClause = text.subquery("q")
    else:
        rows = sa.table(source.table or "", *(sa.column(n) for n in names), schema=source.schema_)
    # the model's rows, its name compared as text (a column of numbers holds it as a number)
    keep = [sa.cast(rows.c[model.columns.model], sa.String) == model.name] if model.columns.model else []
    params: dict[str, Any] = {}
    try:
        with engine.connect() as conn:
            distinct = sa.select(rows.c[column]).where(rows.c[column].is_not(None), *keep).distinct()
            found = conn.execute(distinct.limit(_VALUES + 1), params).scalars().all()
    finally:
        engine.dispose()
    return None if not found or len(found) > _VALUES else {category_name(v) for v in found}


def _file_values(source: SourceConfig, column: str, model: ModelConfig) -> set[str] | None:
    """The values of ``column`` in every matching Parquet file, that column alone (other formats:
    not read here)."""
    assert source.path is not None
    paths = sorted(p for p in glob.glob(source.path, recursive=True) if os.path.isfile(p))
    fmt = (
        source.format if source.format != "auto" else _EXTENSIONS.get(os.path.splitext(paths[-1].lower())[1])
    )
    if fmt != "parquet":
        return None
    wanted = [column, *([model.columns.model] if model.columns.model else [])]
    frame = pd.concat([pq.read_table(path, columns=wanted).to_pandas() for path in paths], ignore_index=True)
    if model.columns.model:
        frame = frame[frame[model.columns.model].astype(str) == model.name]
    found = frame[column].dropna().unique()
    return None if not len(found) or len(found) > _VALUES else {category_name(v) for v in found}


def _check(where: str, source: SourceConfig, named: dict[str, str]) -> SourceCheck:
    if source.kind == "memory":
        return SourceCheck(
            where, source.kind, (), (), skipped="memory sources are checked by their first read"
        )
    opened = {"sql": _sql_columns, "spark": _spark_columns}.get(source.kind, _file_columns)
    try:
        what, columns = opened(source)
    except _Missing as exc:
        key = exc.key or ("table" if source.table else ("url" if source.kind == "sql" else "path"))
        return SourceCheck(where, exc.what, (), (f"{where}.{key}: {exc}",))
    problems = [
        f"{key}: no column `{name}` in {what}{did_you_mean(name, columns)}"
        for key, name in named.items()
        if name not in columns
    ]
    return SourceCheck(where, what, tuple(columns), tuple(problems))


class _Missing(Exception):
    """The source itself cannot be opened: no database, table or file."""

    def __init__(self, what: str, problem: str, key: str | None = None) -> None:
        super().__init__(problem)
        self.what = what
        self.key = key  # the source's config key at fault, when not the usual one


def _sql_columns(source: SourceConfig) -> tuple[str, list[str]]:
    assert source.url is not None
    try:
        url = sa.make_url(source.url)
    except (sa.exc.ArgumentError, ValueError):  # its message may quote the URL, password included
        raise _Missing("a sql source", "not a valid SQLAlchemy URL (dialect+driver://...)", "url") from None
    shown = mask_url(url.render_as_string(hide_password=False))
    name = f"{source.schema_}.{source.table}" if source.schema_ else source.table
    what = f"table {name!r} in {shown}" if source.table else f"the query's result on {shown}"
    database = url.database or ""
    local = url.get_backend_name() == "sqlite" and database not in ("", ":memory:")
    if local and not database.startswith("file:") and not Path(database).is_file():
        # SQLAlchemy would create an empty database there
        problem = "is a directory, not a database file" if Path(database).is_dir() else "does not exist"
        raise _Missing(what, f"{shown}: the SQLite database file {database} {problem}")
    options: dict[str, Any] = {}
    if url.get_backend_name() == "postgresql":
        options["connect_args"] = {"connect_timeout": 10}
    try:
        engine = sa.create_engine(url, **options)
    except (sa.exc.NoSuchModuleError, ImportError) as exc:  # a dialect or its driver not installed
        raise _Missing(what, f"cannot use {shown}: {exc}", "url") from None
    try:
        with engine.connect() as conn:
            if source.query:
                return what, _query_columns(conn, source.query)
            inspector = sa.inspect(conn)
            tables = [
                *inspector.get_table_names(schema=source.schema_),
                *inspector.get_view_names(schema=source.schema_),
            ]
            if source.table not in tables:
                hint = did_you_mean(source.table or "", tables)
                raise _Missing(what, f"no table or view {name!r} in {shown}{hint}")
            return what, [c["name"] for c in inspector.get_columns(source.table or "", schema=source.schema_)]
    except sa.exc.SQLAlchemyError as exc:
        raise _Missing(what, f"cannot read {what}: {short_cause(exc)}") from None
    finally:
        engine.dispose()


def _spark_columns(source: SourceConfig) -> tuple[str, list[str]]:
    from monitor.sources.spark.source import SparkSource  # pyspark: the spark extra

    spark = SparkSource(source, timestamp_column=None)
    what = spark.describe()
    try:
        return what, spark.columns()
    except SourceError as exc:
        raise _Missing(what, str(exc)) from None
    finally:
        spark.close()


def _query_columns(conn: sa.Connection, query: str) -> list[str]:
    now = datetime.now(UTC)
    text = sa.text(query.strip().rstrip(";"))
    params = {k: v for k, v in {"start": now - timedelta(seconds=1), "end": now}.items() if f":{k}" in query}
    probe: sa.Select[Any] = (
        sa.select(sa.literal_column("*")).select_from(text.columns().subquery("q")).limit(0)
    )
    return list(conn.execute(probe, params).keys())


def _file_columns(source: SourceConfig) -> tuple[str, list[str]]:
    assert source.path is not None
    what = f"files {source.path}"
    paths = [p for p in glob.glob(source.path, recursive=True) if os.path.isfile(p)]
    if not paths:
        raise _Missing(what, f"no file matches {source.path}")
    newest = max(paths, key=os.path.getmtime)
    stem = newest.lower().removesuffix(".gz")
    fmt = source.format if source.format != "auto" else _EXTENSIONS.get(os.path.splitext(stem)[1])
    if fmt is None:
        raise _Missing(what, f"cannot tell the format of {newest} from its extension; set `format:`")
    try:
        if fmt == "parquet":
            return f"{newest} ({len(paths)} file(s) match)", list(pq.read_schema(newest).names)
        opener: Any = gzip.open if newest.lower().endswith(".gz") else open
        with opener(newest, "rt", encoding="utf-8") as fh:
            columns = _csv_header(fh) if fmt == "csv" else _json_keys(fh)
    except (OSError, ValueError, UnicodeDecodeError, csv.Error) as exc:
        raise _Missing(what, f"cannot read {newest}: {exc}") from None
    return f"{newest} ({len(paths)} file(s) match)", columns


def _csv_header(lines: Iterable[str]) -> list[str]:
    return next(csv.reader(lines), [])


def _json_keys(lines: Iterable[str]) -> list[str]:
    keys: dict[str, None] = {}
    for n, line in enumerate(lines):
        if n >= _JSON_LINES:
            break
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a torn line: the service skips and counts it too
        if isinstance(record, dict):
            keys.update(dict.fromkeys(record))
    return list(keys)
