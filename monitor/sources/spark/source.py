"""Spark sources: a log that outgrows one machine, counted by the user's cluster.

``kind: spark`` reads a catalog ``table`` or a ``path`` (Parquet, or Delta where the cluster has
Delta configured) through a Spark session - ``master:`` (``local[2]`` by default: Spark in a JVM
child of this process) or a Spark Connect ``remote:`` (sessions, timeouts and errors:
:mod:`monitor.sources.spark.session`). For a binary or multiclass model the window is counted
where the data lives: the same counts as :func:`~monitor.sources.count_sql.count_statement` -
columns as stored, indicator flags where the columns are numeric (NULL and NaN are no members;
one more column for rows with no value), each window's 0/1 range column, unreadable timestamps
marked - built with the DataFrame API (``groupBy(...).count()``; no SQL text, values are
literals Spark binds), and only the distinct combinations travel back, as Arrow. Rows that must
be read (other tasks, ``aggregate: false``) are filtered to the window by Spark and come back as
Arrow too.

Timestamps stored as Spark timestamps (instants), ``TIMESTAMP_NTZ`` (UTC wall time) or epoch
numbers are compared in Spark, against bounds Spark converts in the session's UTC zone (never
the fairwatch process' own zone). Text timestamps (and dates) are read as rows, as a SQL
source's are: Spark keeps ISO-8601 text of the window's dates widened by a day on each side
(offsets are at most 14 h) and any text it cannot date from its first ten characters, and
:func:`~monitor.sources.frames.filter_window` filters exactly and counts the unreadable values.
pyspark is imported only when a spark source is built (``pip install 'fairwatch[spark]'``, and
Java 17 or newer for ``local`` masters).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import pandas as pd

from monitor.config import SourceConfig
from monitor.core.secrets import mask, url_secrets
from monitor.core.times import utc
from monitor.sources.contract import (
    INVALID_TIMESTAMP,
    WEIGHT,
    Batch,
    CountRequest,
    IndicatorFlags,
    missing_column,
    range_column,
)
from monitor.sources.frames import counted_batch, filter_window, flaggable
from monitor.sources.spark.session import SparkJobs

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["SparkSource"]

log = logging.getLogger(__name__)

_NUMERIC = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType", "DecimalType")
_DATED = ("StringType", "VarcharType", "CharType", "DateType")  # read as rows, prefiltered by date
_ISO_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"  # a constant pattern; no value is pasted into it


class SparkSource:
    """Rows or counts of a window from a Spark table or path (see the module docstring)."""

    def __init__(
        self, config: SourceConfig, *, timestamp_column: str | None, model: tuple[str, str] | None = None
    ) -> None:
        self.config = config
        self._model = model  # (column, name): one model's rows of a log holding several
        self.timestamp_column = timestamp_column
        self._jobs = SparkJobs(config, self.describe)
        self._counts_unavailable: str | None = None

    # -- the Source protocol ------------------------------------------------------------------------

    def describe(self) -> str:
        remote = self.config.remote
        where = f"remote {mask(remote, url_secrets(remote))}" if remote else f"master {self._jobs.master}"
        what = f"table {self.config.table}" if self.config.table else f"path {self.config.path}"
        return f"spark ({where}) {what}"

    def close(self) -> None:
        self._jobs.close()

    def reads_narrowly(self) -> bool:
        return False  # every statement is a Spark job: one per tick, not one per pane

    def read(self, start: datetime, end: datetime) -> Batch:
        def rows(spark: SparkSession) -> pd.DataFrame:
            from pyspark.sql import functions as F

            frame = self._frame(spark)
            column = self.timestamp_column
            if column is not None:
                inside = _inside(frame, column, start, end)
                if inside is None:
                    inside = _dated(frame, column, start, end)
                if inside is not None:
                    frame = frame.where(inside | F.col(column).isNull())
            return _pandas(frame)

        frame = self._jobs.run(rows)
        if self.timestamp_column is None:
            return Batch(frame)
        return filter_window(frame, self.timestamp_column, start, end)

    def read_counts(self, request: CountRequest, start: datetime, end: datetime) -> Batch | None:
        """The window's distinct combinations of ``request``'s columns with their row counts, counted
        by Spark; ``None`` (logged once per reason) where rows must be read."""
        if not self.config.aggregate:
            self._rows_instead("source.aggregate is off")
            return None
        flagged: frozenset[str] = frozenset()

        def counts(spark: SparkSession) -> pd.DataFrame | str:
            nonlocal flagged
            plan = _count_plan(self._frame(spark), request, start, end)
            if isinstance(plan, str):
                return plan
            flagged = plan[1]
            return _pandas(plan[0])

        result = self._jobs.run(counts)
        if isinstance(result, str):
            self._rows_instead(result)
            return None
        self._counts_unavailable = None
        return counted_batch(result, request, flagged)

    def count_ranges(self, request: CountRequest, start: datetime, end: datetime) -> tuple[int, ...] | None:
        if not self.config.aggregate:
            return None

        def totals(spark: SparkSession) -> tuple[int, ...] | None:
            from pyspark.sql import functions as F

            frame = self._frame(spark)
            column = request.timestamp
            read = _inside(frame, column, start, end)
            ranges = [_inside(frame, column, lo, hi) for lo, hi in request.ranges]
            if read is None or any(r is None for r in ranges):
                return None
            sums = [F.sum(F.when(r, 1).otherwise(0)) for r in ranges if r is not None]
            row = frame.where(read).agg(*sums).collect()[0]
            return tuple(int(n or 0) for n in row)

        return self._jobs.run(totals)

    def columns(self) -> list[str]:
        """The table's or path's column names (a Spark job: a :class:`SourceError` if it cannot be read)."""
        return self._jobs.run(lambda spark: list(self._frame(spark).columns))

    # -- internals ---------------------------------------------------------------------------------

    def _frame(self, spark: SparkSession) -> DataFrame:
        """The table or path - of a log holding several models, only this model's rows, where the
        model column holds text (what the row path compares the model's name with)."""
        if self.config.table:
            frame = spark.table(self.config.table)
        else:
            fmt = "delta" if self.config.format == "delta" else "parquet"
            frame = spark.read.format(fmt).load(self.config.path)
        if self._model is not None and dict(frame.dtypes).get(self._model[0]) == "string":
            from pyspark.sql import functions as F

            frame = frame.where(F.col(self._model[0]) == F.lit(self._model[1]))
        return frame

    def _rows_instead(self, why: str) -> None:
        if why != self._counts_unavailable:  # once per reason, not at every tick
            log.info("%s: reading rows, not counts: %s", self.describe(), why)
            self._counts_unavailable = why


def _count_plan(
    frame: DataFrame, request: CountRequest, start: datetime, end: datetime
) -> tuple[DataFrame, frozenset[str]] | str:
    """The grouped DataFrame and the indicator attributes it thresholds, or why rows are read."""
    from pyspark.sql import functions as F

    names = set(frame.columns)
    request = request.without([c for c in request.optional if c not in names])
    if missing := [c for c in request.names if c not in names]:
        return f"column(s) {missing} missing"
    types = {f.name: type(f.dataType).__name__ for f in frame.schema.fields}
    read = _inside(frame, request.timestamp, start, end)
    if read is None:
        return f"timestamps stored as {types[request.timestamp]}: no instant to compare in Spark"
    flagged = flaggable(request, {c for c, t in types.items() if t in _NUMERIC})
    keys: list[Column] = [F.col(c).alias(c) for c in request.columns]
    score, decimals = request.score, request.score_decimals
    if score in request.columns and decimals is not None and types[score] in _NUMERIC:
        # the bits monitor.tasks.binary.round_scores computes: floor(x * 10^k + 1/2) / 10^k in doubles
        scale, column = float(10**decimals), F.col(score)
        rounded = F.floor(column.cast("double") * F.lit(scale) + F.lit(0.5)) / F.lit(scale)
        keys[request.columns.index(score)] = (
            F.when(F.abs(column) < F.lit(2.0**48 / scale), rounded)
            .otherwise(column.cast("double"))
            .alias(score)
        )
    for i, flags in enumerate(request.indicators):
        if flags.attribute in flagged:
            keys += _flags(flags, i, types)
        else:
            keys += [F.col(c).alias(c) for c in flags.columns if c not in request.columns]
    for i, (lo, hi) in enumerate(request.ranges):
        inside = _inside(frame, request.timestamp, lo, hi)
        assert inside is not None, "the same column as the read"
        keys.append(F.when(inside, 1).otherwise(0).alias(range_column(i)))
    invalid = F.col(request.timestamp).isNull()
    keys.append(F.when(invalid, 1).otherwise(0).alias(INVALID_TIMESTAMP))
    rows = frame.where(read | invalid).select(*keys)
    grouped = rows.groupBy(*rows.columns).count().withColumnRenamed("count", WEIGHT)
    return grouped, flagged


def _inside(frame: DataFrame, column: str, start: datetime, end: datetime) -> Column | None:
    """``start <= column < end`` compared in Spark, or ``None`` for a type Spark cannot compare.

    The bounds are aware UTC instants; for ``TIMESTAMP_NTZ`` Spark casts them to wall time in the
    session's zone (UTC). A naive Python bound would be read in the process' local zone."""
    from pyspark.sql import functions as F

    kind = type(frame.schema[column].dataType).__name__
    col = F.col(column)
    lo, hi = utc(start), utc(end)
    if kind == "TimestampType":
        return (col >= F.lit(lo)) & (col < F.lit(hi))
    if kind == "TimestampNTZType":  # UTC wall time
        return (col >= F.lit(lo).cast("timestamp_ntz")) & (col < F.lit(hi).cast("timestamp_ntz"))
    if kind in _NUMERIC:  # epoch seconds, compared as doubles like the row path
        seconds = col.cast("double")
        return (seconds >= F.lit(lo.timestamp())) & (seconds < F.lit(hi.timestamp()))
    return None


def _dated(frame: DataFrame, column: str, start: datetime, end: datetime) -> Column | None:
    """For text (or date) timestamps: the rows that may lie in ``[start, end)`` - ISO-8601 text
    (or a date) of the window's dates widened by a day each side (no offset moves a time further),
    and any value that does not start with a date, for the row path to parse or reject."""
    from pyspark.sql import functions as F

    if type(frame.schema[column].dataType).__name__ not in _DATED:
        return None
    lo_day = (utc(start).date() - timedelta(days=1)).isoformat()
    hi_day = (utc(end).date() + timedelta(days=2)).isoformat()
    text = F.col(column).cast("string")
    day = F.substring(text, 1, 10)
    return ~text.rlike(_ISO_DATE) | ((day >= F.lit(lo_day)) & (day < F.lit(hi_day)))


def _flags(flags: IndicatorFlags, index: int, types: dict[str, str]) -> list[Column]:
    """A 1/0 flag per column (``>= threshold``; NULL and NaN are no members), and 1/0 in
    :func:`missing_column` when no column has a number - as :func:`count_statement` does."""
    from pyspark.sql import functions as F

    def missing(c: str) -> Column:
        column = F.col(c)
        if types[c] in ("FloatType", "DoubleType"):
            return column.isNull() | F.isnan(column)
        return column.isNull()

    out = [
        F.when(~missing(c) & (F.col(c) >= F.lit(flags.threshold)), 1).otherwise(0).alias(c)
        for c in flags.columns
    ]
    none = missing(flags.columns[0])
    for c in flags.columns[1:]:
        none = none & missing(c)
    out.append(F.when(none, 1).otherwise(0).alias(missing_column(index)))
    return out


def _pandas(frame: DataFrame) -> pd.DataFrame:
    """A Spark result as pandas, through Arrow (not pyspark's own toPandas: no per-row objects)."""
    out: pd.DataFrame = frame.toArrow().to_pandas()
    return out
