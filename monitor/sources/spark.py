"""Spark sources: a log that outgrows one machine, counted by the user's cluster.

``kind: spark`` reads a catalog ``table`` or a ``path`` (Parquet, or Delta where the cluster has
Delta configured) through a Spark session - ``master:`` (``local[2]`` by default: Spark inside
this process' JVM child) or a Spark Connect ``remote:``. For a binary or multiclass model the
window is counted where the data lives: the same counts as
:func:`~monitor.sources.counts.count_statement` - columns as stored, indicator flags where the
columns are numeric (NULL and NaN are no members; one more column for rows with no value),
each window's 0/1 range column, unreadable timestamps marked - built with the DataFrame API
(``groupBy(...).count()``; no SQL text, values are literals Spark binds), and only the distinct
combinations travel back, as Arrow. Rows that must be read (other tasks, ``aggregate: false``)
are filtered to the window by Spark and come back as Arrow too.

Timestamps stored as Spark timestamps (instants), ``TIMESTAMP_NTZ`` (UTC wall time) or epoch
numbers are compared in Spark; text timestamps are filtered after the read, exactly
(:func:`~monitor.sources.base.filter_window`), and such a window is read as rows. The session
runs with ``spark.sql.session.timeZone=UTC``. pyspark is imported only when a spark source is
built (``pip install 'fairwatch[spark]'``, and Java 17 or newer for ``local`` masters).

A session is process-wide in Spark (``getOrCreate``): closing a source does not stop it.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from monitor.config import SourceConfig
from monitor.errors import ConfigError, SourceError
from monitor.secrets import mask, url_secrets
from monitor.sources.base import WEIGHT, Batch, filter_window
from monitor.sources.counts import (
    INVALID_TIMESTAMP,
    CountRequest,
    IndicatorFlags,
    counted_batch,
    flaggable,
    missing_column,
    range_column,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["SparkSource"]

log = logging.getLogger("fairwatch")

_NUMERIC = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType", "DecimalType")


class SparkSource:
    """Rows or counts of a window from a Spark table or path (see the module docstring)."""

    def __init__(self, config: SourceConfig, *, timestamp_column: str | None) -> None:
        try:
            import pyspark  # noqa: F401  (fail at start-up, not at the first tick)
        except ImportError:
            raise ConfigError(
                "source.kind: spark needs pyspark: pip install 'fairwatch[spark]' (and Java 17+)"
            ) from None
        self.config = config
        self.timestamp_column = timestamp_column
        self._timeout = config.timeout.total_seconds()
        self._counts_unavailable: str | None = None

    @property
    def master(self) -> str:
        return self.config.master or "local[2]"

    # -- the Source protocol ------------------------------------------------------------------------

    def describe(self) -> str:
        remote = self.config.remote
        where = f"remote {mask(remote, _secrets(remote))}" if remote else f"master {self.master}"
        what = f"table {self.config.table}" if self.config.table else f"path {self.config.path}"
        return f"spark ({where}) {what}"

    def close(self) -> None:
        """Nothing to release: Spark's session is process-wide (see the module docstring)."""

    @property
    def narrow_reads(self) -> bool:
        return False  # every statement is a Spark job: one per tick, not one per pane

    def read(self, start: datetime, end: datetime) -> Batch:
        def rows(frame: DataFrame) -> pd.DataFrame:
            from pyspark.sql import functions as F

            column = self.timestamp_column
            if column is not None:
                inside = self._inside(frame, column, start, end)
                if inside is not None:
                    frame = frame.where(inside | F.col(column).isNull())
            return _pandas(frame)

        frame = self._run(rows)
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

        def counts(frame: DataFrame) -> pd.DataFrame | str:
            nonlocal flagged
            plan = self._count_plan(frame, request, start, end)
            if isinstance(plan, str):
                return plan
            flagged = plan[1]
            return _pandas(plan[0])

        result = self._run(counts)
        if isinstance(result, str):
            self._rows_instead(result)
            return None
        self._counts_unavailable = None
        return counted_batch(result, request, flagged)

    def count_ranges(self, request: CountRequest, start: datetime, end: datetime) -> tuple[int, ...] | None:
        from pyspark.sql import functions as F

        def totals(frame: DataFrame) -> tuple[int, ...] | None:
            column = request.timestamp
            read = self._inside(frame, column, start, end)
            ranges = [self._inside(frame, column, lo, hi) for lo, hi in request.ranges]
            if read is None or any(r is None for r in ranges):
                return None
            sums = [F.sum(F.when(r, 1).otherwise(0)) for r in ranges if r is not None]
            row = frame.where(read).agg(*sums).collect()[0]
            return tuple(int(n or 0) for n in row)

        return self._run(totals) if self.config.aggregate else None

    # -- internals ---------------------------------------------------------------------------------

    def _count_plan(
        self, frame: DataFrame, request: CountRequest, start: datetime, end: datetime
    ) -> tuple[DataFrame, frozenset[str]] | str:
        """The grouped DataFrame and the indicator attributes it thresholds, or why rows are read."""
        from pyspark.sql import functions as F

        names = set(frame.columns)
        request = request.without([c for c in request.optional if c not in names])
        if missing := [c for c in request.names if c not in names]:
            return f"column(s) {missing} missing"
        types = {f.name: type(f.dataType).__name__ for f in frame.schema.fields}
        read = self._inside(frame, request.timestamp, start, end)
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
            inside = self._inside(frame, request.timestamp, lo, hi)
            assert inside is not None, "the same column as the read"
            keys.append(F.when(inside, 1).otherwise(0).alias(range_column(i)))
        invalid = F.col(request.timestamp).isNull()
        keys.append(F.when(invalid, 1).otherwise(0).alias(INVALID_TIMESTAMP))
        rows = frame.where(read | invalid).select(*keys)
        grouped = rows.groupBy(*rows.columns).count().withColumnRenamed("count", WEIGHT)
        return grouped, flagged

    def _inside(self, frame: DataFrame, column: str, start: datetime, end: datetime) -> Column | None:
        """``start <= column < end`` compared in Spark, or ``None`` for a type Spark cannot compare."""
        from pyspark.sql import functions as F

        kind = type(frame.schema[column].dataType).__name__
        col = F.col(column)
        lo, hi = _utc(start), _utc(end)
        if kind == "TimestampType":
            return (col >= F.lit(lo)) & (col < F.lit(hi))
        if kind == "TimestampNTZType":  # UTC wall time: the instant, cast in the session's zone (UTC)
            # (a naive Python datetime would be read as the *process's* local time by py4j)
            naive = [F.lit(t).cast("timestamp_ntz") for t in (lo, hi)]
            return (col >= naive[0]) & (col < naive[1])
        if kind in _NUMERIC:  # epoch seconds, compared as doubles like the row path
            seconds = col.cast("double")
            return (seconds >= F.lit(lo.timestamp())) & (seconds < F.lit(hi.timestamp()))
        return None

    def _rows_instead(self, why: str) -> None:
        if why != self._counts_unavailable:  # once per reason, not at every tick
            log.info("%s: reading rows, not counts: %s", self.describe(), why)
            self._counts_unavailable = why

    def _session(self) -> SparkSession:
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName("fairwatch")
        builder = builder.remote(self.config.remote) if self.config.remote else builder.master(self.master)
        settings = {"spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "false", **self.config.conf}
        for key, value in settings.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()

    def _frame(self, spark: SparkSession) -> DataFrame:
        if self.config.table:
            table: DataFrame = spark.table(self.config.table)
            return table
        fmt = "parquet" if self.config.format in ("auto", "parquet") else self.config.format
        files: DataFrame = spark.read.format(fmt).load(self.config.path)
        return files

    def _run(self, job: Callable[[DataFrame], Any]) -> Any:
        """``job`` on the source's DataFrame as one Spark job group, cancelled after ``source.timeout``."""
        tag = f"fairwatch-{uuid.uuid4().hex[:12]}"
        timed_out = threading.Event()
        try:
            spark = self._session()
            spark.addTag(tag)  # this thread's jobs carry the tag: interrupting it cancels them

            def cancel() -> None:
                timed_out.set()
                spark.interruptTag(tag)

            timer = threading.Timer(self._timeout, cancel)
            timer.start()
            try:
                return job(self._frame(spark))
            finally:
                timer.cancel()
                spark.removeTag(tag)
        except (SourceError, ConfigError):
            raise
        except Exception as exc:
            if timed_out.is_set():
                raise SourceError(
                    f"cannot read {self.describe()}: cancelled after source.timeout ({self._timeout:g} s)"
                ) from None
            text = str(exc).strip()
            first = text.splitlines()[0] if text else type(exc).__name__
            raise SourceError(
                f"cannot read {self.describe()}: {mask(first, _secrets(self.config.remote))[:300]}"
            ) from None


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


def _secrets(remote: str | None) -> tuple[str, ...]:
    """The secrets of a Spark Connect URL (``sc://host:15002/;token=...``): its ``;key=value``
    parameters that hold credentials, and any a URL's userinfo or query holds."""
    if not remote:
        return ()
    found = re.findall(r"(?i)[;?&](?:token|password|secret)=([^;&/]+)", remote)
    return (*url_secrets(remote), *found)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
