"""A SQL table's columns and types from ``information_schema.columns``, where reflection fails.

:class:`~monitor.sources.sql.source.SqlSource` reflects its table with SQLAlchemy to learn the columns
and which of them hold numbers, text, single-precision floats or integers (what decides whether
the database may threshold, round or join them while it counts). DuckDB's SQLAlchemy dialect
(duckdb-engine 0.17.0, the newest) derives from PostgreSQL's, whose reflection since SQLAlchemy
2.0.45 reads ``pg_catalog.pg_collation``, a table DuckDB lacks: every reflection fails with
``Binder Error: Referenced table "pg_catalog.pg_collation" not found`` (duckdb_engine#1391,
duckdb#22069). The SQL standard's ``information_schema.columns`` says the same, and DuckDB has
it; this module reads it (the table and schema names bound, never pasted) and maps its type names
onto SQLAlchemy types. Remove it once those issues are fixed and reflection works again.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

__all__ = ["columns_table", "sql_type"]

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
