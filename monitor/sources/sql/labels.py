"""Labels kept in their own table of the same database, joined by the database while it counts.

Each prediction gets the latest label of its id that arrived in the read range, where it has no
label of its own - what :func:`~monitor.reading.label_join.join_labels` does with rows, so the
values are the same. Where the database would compare ids or labels differently from the row path
(ids of different types, labels of different kinds), it does not join: the reason is returned and
rows are read.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from monitor.sources.contract import LabelJoin
from monitor.sources.sql.schema import TableSchema
from monitor.sources.sql.timestamps import TimestampEncoding, instant

__all__ = ["latest_labels", "with_labels"]


def latest_labels(
    labels: TableSchema,
    arrival: str,
    encoding: TimestampEncoding | None,
    id_column: str,
    label_column: str,
    start: datetime,
    end: datetime,
    *,
    sqlite: bool,
) -> sa.Subquery | str:
    """``(__jid, __jlabel, __rank)``: the labels of each id that arrived in ``[start, end)``, the
    latest ranked 1, or why the database cannot tell."""
    table = labels.table
    if missing := [c for c in (id_column, label_column) if c not in table.c]:
        return f"label column(s) {missing} missing"
    arrived = table.c[arrival]
    exact = instant(arrived, encoding, sqlite) if encoding is not None else None
    if encoding is None or exact is None:
        return "no labels yet" if encoding is None else f"arrival times stored as {encoding.kind}"
    moment, bound = exact
    where = [
        table.c[id_column].is_not(None),
        moment >= bound(start, "label_lo"),
        moment < bound(end, "label_hi"),
    ]
    if encoding.kind in ("iso", "iso_day"):
        low, high, sql_type = encoding.bounds(start, end) or (None, None, None)
        where += [
            arrived >= sa.bindparam("label_day_lo", low, type_=sql_type),
            arrived < sa.bindparam("label_day_hi", high, type_=sql_type),
        ]
    # ties in arrival broken like join_labels: a missing label first, then the greatest (byte order)
    label = table.c[label_column]
    ordered = sa.collate(label, "C") if labels.column_kind(label_column) == "text" and not sqlite else label
    latest_first = sa.func.row_number().over(
        partition_by=table.c[id_column],
        order_by=(moment.desc(), sa.case((label.is_(None), 1), else_=0).desc(), ordered.desc()),
    )
    return (
        sa.select(
            table.c[id_column].label("__jid"),
            table.c[label_column].label("__jlabel"),
            latest_first.label("__rank"),
        )
        .where(*where)
        .subquery("latest")
    )


def with_labels(
    log: sa.FromClause,
    schema: TableSchema,
    latest: sa.Subquery,
    labels: TableSchema,
    join: LabelJoin,
    *,
    sqlite: bool,
) -> tuple[sa.Subquery, bool] | str:
    """The log with ``join.column`` = its own label, else the latest joined one (a subquery), and
    whether that label is text; or why the database would compare them otherwise than the row path."""
    ids = (schema.id_kind(join.join_on), labels.id_kind(join.id))
    if ids[0] != ids[1] or "other" in ids:
        return f"ids compared as text in Python: {join.join_on} is {ids[0]}, {join.id} is {ids[1]}"
    own = log.c.get(join.column)
    kinds = {labels.column_kind(join.label), *([schema.column_kind(join.column)] if own is not None else [])}
    if len(kinds) != 1 or "other" in kinds:
        return f"label columns of different types ({', '.join(sorted(kinds))})"
    joined_label = latest.c["__jlabel"]
    if own is None:
        label: sa.ColumnElement[Any] = joined_label
    elif kinds == {"number"} and not sqlite:  # NaN is no label either (join_labels: notna)
        nan = sa.bindparam(None, float("nan"), type_=sa.Float())
        label = sa.case((sa.or_(own.is_(None), own == nan), joined_label), else_=own)
    else:
        label = sa.func.coalesce(own, joined_label)
    kept = [c for c in log.c if c.name != join.column]
    on = sa.and_(log.c[join.join_on] == latest.c["__jid"], latest.c["__rank"] == 1)
    joined = (
        sa.select(*kept, label.label(join.column)).select_from(log.outerjoin(latest, on)).subquery("joined")
    )
    return joined, kinds == {"text"}
