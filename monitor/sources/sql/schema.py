"""A SQL source's table as fairwatch sees it: its columns, which hold numbers, text, single-precision
floats or integers, and whether an index leads with the timestamp - what decides whether the
database may threshold, round or join a column while it counts, and how a time range is read.

Tables are reflected with SQLAlchemy. DuckDB's SQLAlchemy dialect (duckdb-engine 0.17.0, the newest)
derives from PostgreSQL's, whose reflection since SQLAlchemy 2.0.45 reads ``pg_catalog.pg_collation``,
a table DuckDB lacks: every reflection fails with ``Binder Error: Referenced table
"pg_catalog.pg_collation" not found`` (duckdb_engine#1391, duckdb#22069). The SQL standard's
``information_schema.columns`` says the same, and DuckDB has it: :func:`columns_table` reads it (the
table and schema names bound, never pasted) and maps its type names onto SQLAlchemy types. Remove
that once those issues are fixed and reflection works again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from monitor.core.errors import SourceError
from monitor.sources.count_sql import numeric_columns

__all__ = ["TableSchema", "columns_table", "reflect", "sql_type"]


@dataclass(frozen=True)
class TableSchema:
    """A reflected table: untyped columns to select from, and the facts about their types.

    The columns are untyped: values come back as the driver returns them (SQLAlchemy's SQLite
    DATETIME type would otherwise try to parse ISO text it did not write itself, and fail)."""

    table: sa.TableClause
    numeric: frozenset[str]  # columns of a numeric type
    text: frozenset[str]  # columns of a text type
    single: frozenset[str]  # REAL columns (float4, except on SQLite)
    floating: frozenset[str]  # floating-point columns (REAL, DOUBLE PRECISION, FLOAT)
    integer: frozenset[str]  # integer columns
    timestamp_indexed: bool  # an index leads with the timestamp column: a time range is an index range

    def id_kind(self, name: str) -> Literal["integer", "text", "other"]:
        """How an id column compares: integers and text the database compares as the row path does
        (text of an integer is the integer); other numbers (17.0 vs 17, NUMERIC read as text) not."""
        return "integer" if name in self.integer else "text" if name in self.text else "other"

    def column_kind(self, name: str) -> Literal["number", "text", "other"]:
        return "number" if name in self.numeric else "text" if name in self.text else "other"


def reflect(
    conn: Connection,
    name: str,
    schema: str | None,
    timestamp_column: str | None,
    *,
    describe: Callable[[], str],
    fallback: Callable[[Exception], None],
) -> TableSchema:
    """The table's schema; a :class:`SourceError` when it or its timestamp column is missing.
    ``fallback(error)`` is told why reflection failed when the columns came from ``information_schema``."""
    try:
        # the columns alone: a Table's autoload also reads its keys, constraints and comments (eight
        # statements on PostgreSQL, ~50 ms of a one-shot evaluate), none of which is used here
        found = sa.inspect(conn).get_columns(name, schema=schema)
        columns: list[tuple[str, sa.types.TypeEngine[Any]]] | None = [(c["name"], c["type"]) for c in found]
    except sa.exc.NoSuchTableError:
        columns = None
    except sa.exc.ProgrammingError as exc:  # DuckDB: see the module docstring
        conn.rollback()
        table = columns_table(conn, name, schema)
        columns = None if table is None else [(c.name, c.type) for c in table.columns]
        fallback(exc)
    if columns is None:
        raise SourceError(f"table {name!r} not found: {describe()}")
    names = [n for n, _ in columns]
    if timestamp_column is not None and timestamp_column not in names:
        raise SourceError(f"column {timestamp_column!r} not found in {describe()}; its columns are {names}")

    def of_type(kind: type[sa.types.TypeEngine[Any]]) -> frozenset[str]:
        return frozenset(n for n, t in columns if isinstance(t, kind))

    return TableSchema(
        sa.table(name, *(sa.column(n) for n in names), schema=schema),
        numeric=numeric_columns(columns),
        text=of_type(sa.String),
        single=of_type(sa.REAL),
        floating=of_type(sa.Float),
        integer=of_type(sa.Integer),
        timestamp_indexed=_leads_an_index(conn, name, schema, timestamp_column),
    )


def _leads_an_index(conn: Connection, name: str, schema: str | None, column: str | None) -> bool:
    """Whether an index of the table - its own, or its primary key's or a unique constraint's -
    starts with ``column`` (then a time range is an index range)."""
    if column is None or conn.dialect.name == "duckdb":  # duckdb-engine reflects no indexes (and warns)
        return False
    try:
        inspector = sa.inspect(conn)
        leading = [list(i["column_names"]) for i in inspector.get_indexes(name, schema=schema)]
        leading.append(list(inspector.get_pk_constraint(name, schema=schema)["constrained_columns"]))
        leading += [list(u["column_names"]) for u in inspector.get_unique_constraints(name, schema=schema)]
    except (sa.exc.SQLAlchemyError, NotImplementedError):  # a dialect that cannot tell
        conn.rollback()
        return False
    return any(columns[:1] == [column] for columns in leading)


_COLUMNS = sa.table(
    "columns",
    sa.column("table_catalog"),
    sa.column("table_schema"),
    sa.column("table_name"),
    sa.column("column_name"),
    sa.column("data_type"),
    sa.column("ordinal_position"),
    schema="information_schema",
)

# Type names as information_schema spells them: DuckDB's (INTEGER, DOUBLE, VARCHAR, DECIMAL(18,3),
# TIMESTAMP WITH TIME ZONE) and the standard's (integer, double precision, character varying).
_INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "INT", "BIGINT", "HUGEINT"}
_UNSIGNED = {"U" + name for name in _INTEGERS}
_SINGLE = {"FLOAT", "REAL", "FLOAT4"}  # DuckDB's FLOAT is 4 bytes
_DOUBLE = {"DOUBLE", "DOUBLE PRECISION", "FLOAT8"}
_TEXT = ("VARCHAR", "CHARACTER VARYING", "CHARACTER", "CHAR", "TEXT", "STRING", "BPCHAR")


def columns_table(conn: Connection, name: str, schema: str | None) -> sa.Table | None:
    """The table's columns with their types (``None``: no such table in the current database; no
    schema means the connection's current schema, as for reflection)."""
    rows = conn.execute(
        sa.select(_COLUMNS.c.column_name, _COLUMNS.c.data_type)
        .where(
            _COLUMNS.c.table_catalog == sa.func.current_database(),
            _COLUMNS.c.table_schema == (sa.func.current_schema() if schema is None else schema),
            _COLUMNS.c.table_name == name,
        )
        .order_by(_COLUMNS.c.ordinal_position)
    ).all()
    if not rows:
        return None
    return sa.Table(name, sa.MetaData(), *(sa.Column(c, sql_type(t)) for c, t in rows), schema=schema)


def sql_type(name: str) -> sa.types.TypeEngine[Any]:
    """The SQLAlchemy type of an ``information_schema`` type name, as far as a source needs it.

    >>> [type(sql_type(t)).__name__ for t in ("BIGINT", "FLOAT", "DECIMAL(18,3)", "VARCHAR", "INTEGER[]")]
    ['BigInteger', 'REAL', 'Numeric', 'String', 'NullType']
    """
    upper = name.strip().upper()
    if upper in _INTEGERS or upper in _UNSIGNED:
        return sa.BigInteger()
    if upper in _SINGLE:
        return sa.REAL()
    if upper in _DOUBLE:
        return sa.Double()
    if upper.startswith(("DECIMAL", "NUMERIC")):
        return sa.Numeric()
    if upper.startswith(_TEXT) and not upper.endswith("]"):
        return sa.String()
    if upper == "BOOLEAN":
        return sa.Boolean()
    if upper.startswith("TIMESTAMP"):
        return sa.DateTime(timezone="WITH TIME ZONE" in upper or upper == "TIMESTAMPTZ")
    if upper == "DATE":
        return sa.Date()
    return sa.types.NullType()  # lists, structs, blobs, intervals: neither numbers nor text
