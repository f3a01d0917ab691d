"""Counts, not rows, for Parquet log files: the SQL sources' count statement, run by DuckDB.

The same SQLAlchemy Core statement :func:`~monitor.sources.count_sql.count_statement` builds for a
database runs over the window's Parquet files: DuckDB's own Parquet reader scans them (only the
columns the statement names, row groups outside the window skipped by their statistics) and
groups in parallel, so a window of millions of rows comes back as its distinct combinations
without ever being a pandas frame. Bounds and the list of files are bound parameters
(``FROM read_parquet($1)``), never pasted into SQL; pyarrow reads the first file's schema.

Only timestamps stored as Parquet timestamps are counted here (an instant DuckDB compares
exactly); epoch numbers or text, a file DuckDB cannot read (one still being written), or
a missing column return ``None``: the row path reads the window and reports why.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import sqlalchemy as sa

from monitor.sources.contract import CountRequest
from monitor.sources.count_sql import DOLLAR_DIALECT, count_statement
from monitor.sources.frames import flaggable

__all__ = ["Uncountable", "count_parquet", "holds_text"]


class Uncountable(Exception):
    """These files cannot be counted by DuckDB; the row path reads them."""


def count_parquet(
    paths: Sequence[str],
    request: CountRequest,
    start: datetime,
    end: datetime,
    *,
    timeout: float,
    totals: bool = False,
    model: tuple[str, str] | None = None,
) -> tuple[pd.DataFrame, frozenset[str]]:
    """The count statement's result over ``paths``, and the indicator attributes flagged in it
    (``totals``: the one-row statement of rows per range, see :func:`count_statement`).

    ``model`` (a column and a model's name): only that model's rows are counted, where the column
    holds text (the row path compares the model's name with the column's text).

    Raises :class:`Uncountable` (with the reason) where the row path must read instead.
    """
    import duckdb  # a second of import: only for the sources that count files

    dataset = ds.dataset(list(paths), format="parquet")
    schema = dataset.schema
    request = request.without([c for c in request.optional if c not in schema.names])
    if missing := [c for c in request.names if c not in schema.names]:
        raise Uncountable(f"column(s) {missing} missing")
    ts_type = schema.field(request.timestamp).type
    if not pa.types.is_timestamp(ts_type):
        raise Uncountable(f"timestamps stored as {ts_type}, not as Parquet timestamps")
    aware = ts_type.tz is not None
    numeric = frozenset(f.name for f in schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type))
    flagged = flaggable(request, numeric)
    files: sa.BindParameter[list[str]] = sa.bindparam("files", list(paths))  # bound like any value
    table = sa.func.read_parquet(files).table_valued(*schema.names).alias("logs")
    moment = table.c[request.timestamp]

    def bound(at: datetime, name: str) -> sa.ColumnElement[Any]:
        utc = at.astimezone(UTC) if at.tzinfo else at.replace(tzinfo=UTC)
        value = utc if aware else utc.replace(tzinfo=None)  # a naive column holds UTC wall time
        return sa.bindparam(name, value, type_=sa.DateTime(timezone=aware))

    keep = None
    if model is not None and model[0] in schema.names and holds_text(schema.field(model[0]).type):
        keep = table.c[model[0]] == sa.bindparam("model", model[1], type_=sa.String())
    statement = count_statement(
        table,
        request,
        (moment, bound),
        read=(start, end),
        invalid=moment.is_(None),
        flagged=flagged,
        sqlite=False,
        totals=totals,
        round_score=request.score in numeric,
        keep=keep,
    )
    compiled = statement.compile(dialect=DOLLAR_DIALECT, compile_kwargs={"render_postcompile": True})
    params = [compiled.params[name] for name in compiled.positiontup or ()]
    with duckdb.connect() as conn:
        timer = threading.Timer(timeout, conn.interrupt)
        timer.start()
        try:
            result = conn.execute(compiled.string, params)
            # DuckDB 1.5 renamed fetch_arrow_table (deprecated there) to to_arrow_table
            to_arrow = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
            frame: pd.DataFrame = to_arrow().to_pandas()
        finally:
            timer.cancel()
    return frame, flagged


def holds_text(arrow_type: pa.DataType) -> bool:
    """Whether a Parquet column holds text (plain or dictionary-encoded)."""
    if pa.types.is_dictionary(arrow_type):
        return holds_text(arrow_type.value_type)
    return bool(pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type))
