"""The source contract: what every kind of source promises, and the data that crosses the boundary.

A source returns every logged row whose event timestamp lies in ``[start, end)``, with the log's
own column names and the timestamp column converted to timezone-aware UTC ``datetime64``
(:meth:`Source.read`). Rows whose timestamp cannot be parsed are dropped and counted in
``rejected`` (reason ``timestamp_invalid``), never fatal. A file that cannot be parsed (half
written, corrupt) is skipped and named in ``skipped_files``; the next read tries it again. A
source that cannot be read at all raises :class:`~monitor.core.errors.SourceError`.

A source that can count (:class:`CountingSource`: a database's ``GROUP BY``, DuckDB over files,
Spark) answers a :class:`CountRequest` with the window's distinct combinations of the requested
columns and a row count each - a *counted* :class:`Batch`, whose columns are named here: the count
in :data:`WEIGHT`, each time range as a 0/1 column (:func:`range_column`), an indicator
attribute's "no value" flag (:func:`missing_column`) and unreadable timestamps
(:data:`INVALID_TIMESTAMP`). Everything here is plain data; the helpers every source kind uses on
its frames are in :mod:`monitor.sources.frames`, the SQL they count with in
:mod:`monitor.sources.count_sql`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pandas as pd

__all__ = [
    "INVALID_TIMESTAMP",
    "RANGE_PREFIX",
    "WEIGHT",
    "Batch",
    "CountRequest",
    "CountedPanes",
    "CountingSource",
    "FleetSource",
    "IndicatorFlags",
    "LabelJoin",
    "LabelJoiningSource",
    "PaneCountingSource",
    "Source",
    "missing_column",
    "range_column",
]

#: The column of a counted batch holding each combination's row count.
WEIGHT = "__rows"

#: 1 for rows whose stored timestamp the database cannot read as an instant (SQLite text).
INVALID_TIMESTAMP = "__ts_invalid"


@dataclass
class Batch:
    """Rows of a window; or, when ``counted``, their distinct combinations with a row count each
    (:mod:`monitor.sources.count_sql`: the count in column :data:`WEIGHT`, no timestamp column, the
    request's time ranges as 0/1 columns)."""

    frame: pd.DataFrame
    rejected: Counter[str] = field(default_factory=Counter)  # bad rows dropped, by reason
    skipped_files: tuple[str, ...] = ()  # files that could not be parsed this time
    counted: bool = False
    flagged: frozenset[str] = frozenset()  # counted: indicator attributes the database thresholded

    @property
    def n_rows(self) -> int:
        """The rows the batch stands for."""
        if self.counted:
            return int(self.frame[WEIGHT].sum())
        return len(self.frame)


@dataclass(frozen=True)
class IndicatorFlags:
    """An indicator attribute's columns, thresholded into flags by the database."""

    attribute: str
    columns: tuple[str, ...]
    threshold: float


@dataclass(frozen=True)
class LabelJoin:
    """Labels kept in their own table of the same database, joined by the database while it counts:
    each prediction gets the latest label of its id that arrived in the read range, where it has
    no label of its own (what :func:`monitor.reading.label_join.join_labels` does with rows). The
    label source itself was bound to the counting source once (:meth:`LabelJoiningSource.bind_labels`)."""

    id: str  # the label table's id column
    label: str  # the label table's label column
    join_on: str  # the prediction log's id column
    column: str  # the model's label column in the counted result


@dataclass(frozen=True)
class CountRequest:
    """The columns an evaluation needs counted, and the time ranges of its windows."""

    timestamp: str
    columns: tuple[str, ...]  # grouped by as stored
    indicators: tuple[IndicatorFlags, ...]  # grouped by as flags (where the columns are numeric)
    ranges: tuple[tuple[datetime, datetime], ...]
    optional: tuple[str, ...] = ()  # columns the log may lack (then not counted by)
    score: str | None = (
        None  # the score column (a key), rounded where score_decimals is set and it holds numbers
    )
    score_decimals: int | None = None
    labels: LabelJoin | None = None  # labels joined from their own table
    # How the evaluation reads the columns, for sources that store every value as text (CSV):
    texts: tuple[str, ...] = ()  # read as text - class labels, group values - not (only) as numbers
    model: str | None = None  # compared as text with the model's name

    def without(self, columns: Collection[str]) -> CountRequest:
        """The request without the (optional) ``columns``."""
        return replace(self, columns=tuple(c for c in self.columns if c not in columns))

    @property
    def names(self) -> tuple[str, ...]:
        """Every source column the request reads."""
        flagged = (c for flags in self.indicators for c in flags.columns)
        joined = () if self.labels is None else (self.labels.join_on,)
        names = (self.timestamp, *self.columns, *flagged, *joined)
        return tuple(c for c in dict.fromkeys(names) if self.labels is None or c != self.labels.column)


def missing_column(index: int) -> str:
    """1 where the request's ``index``-th indicator attribute has no value in any column."""
    return f"__missing_{index}"


#: The 0/1 columns of the time ranges start with this.
RANGE_PREFIX = "__in_"


def range_column(index: int) -> str:
    """The 0/1 column of the request's ``index``-th time range."""
    return f"{RANGE_PREFIX}{index}"


class Source(Protocol):
    def read(self, start: datetime, end: datetime) -> Batch:
        """Rows with ``start <= timestamp < end``."""
        ...

    def describe(self) -> str:
        """Where the source reads from, for logs: passwords masked."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class CountingSource(Source, Protocol):
    """A source that can count a window's rows by columns (a database: ``GROUP BY``)."""

    def read_counts(self, request: CountRequest, start: datetime, end: datetime) -> Batch | None:
        """Counted combinations of ``request``'s columns; ``None``: cannot, read rows instead."""
        ...

    def count_ranges(self, request: CountRequest, start: datetime, end: datetime) -> tuple[int, ...] | None:
        """The number of rows in each of ``request``'s time ranges; ``None``: cannot."""
        ...

    def reads_narrowly(self) -> bool:
        """Whether counting a small part of a window costs about that part (an index range, file
        statistics), not a scan of much more: only then do sealed panes pay (:mod:`monitor.reading.panes`).
        A method, not a property: it may look at the source, and a runtime protocol check such as
        ``isinstance(source, CountingSource)`` evaluates every property (Python 3.11)."""
        ...


@dataclass(frozen=True)
class CountedPanes:
    """Consecutive epoch-aligned panes, each counted whole."""

    frames: dict[datetime, pd.DataFrame]  # each pane's counted combinations, no range columns
    flagged: frozenset[str]  # the indicator attributes the source thresholded
    rejected: Counter[str]  # rows the read rejected (unreadable timestamps: in no pane)


@runtime_checkable
class PaneCountingSource(CountingSource, Protocol):
    """A counting source that may keep its own running counts per pane (log files it tails)."""

    def count_panes(
        self, shape: CountRequest, panes: list[datetime], size: timedelta, since: datetime, until: datetime
    ) -> CountedPanes | None:
        """``panes`` (consecutive, of ``size``) counted whole for ``shape`` (no ranges); ``since``:
        no pane before it will be asked for again; ``until``: the end of the newest pane that will
        be (now). ``None``: count them with :meth:`read_counts`."""
        ...

    def keep_counts_in(self, directory: Path) -> None:
        """Keep the running counts in ``directory`` too, so that a restarted process goes on from them."""
        ...


@runtime_checkable
class FleetSource(CountingSource, Protocol):
    """A counting source whose counts several publishers wrote (``kind: published``)."""

    config: Any  # its SourceConfig (stale_after)

    def publishers(self) -> Mapping[str, datetime | None]:
        """Each publisher seen at the last read, and when it last published (``None``: unknown)."""
        ...


@runtime_checkable
class LabelJoiningSource(CountingSource, Protocol):
    """A counting source that can also join labels kept in another source's table while it counts."""

    def bind_labels(self, labels: Source) -> bool:
        """Join ``labels`` (the model's label source) into every count whose request has
        ``labels`` from now on; ``False`` when this database cannot (then labels are joined row by
        row: :mod:`monitor.reading.label_join`). Decided once, when the model's reads are planned."""
        ...
