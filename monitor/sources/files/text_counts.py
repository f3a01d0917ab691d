"""Counts, not rows, for CSV and JSON Lines log files: the count statement, run by DuckDB.

The window's files are read by DuckDB's own readers - ``read_csv`` with every column as text
(explicit dialect: comma, double quotes, the header pandas reads, strict rows), ``read_json``
with each needed key as JSON text - in parallel, gzip included, and grouped by the same
statement as every other source (:func:`~monitor.sources.count_sql.count_statement`: the request's
columns as stored, indicator flags, a 0/1 column per time range, rows whose timestamp cannot be
read marked). Only the distinct combinations come back. The values stay text, and the row path's
cleaning reads them, so scores, labels, classes and groups are those of reading every row; where
a text's meaning depends on how pandas types the column, that is checked
(:mod:`monitor.sources.files.text_values`). In SQL:

- timestamps: epoch seconds and ISO 8601 of the usual shapes are placed exactly
  (:mod:`monitor.sources.files.text_timestamps`); NULL and pandas' NA strings are rejected; any other
  text is not decided in SQL: it is a key of its own, and the row path's ``normalize_timestamps``
  places the (few) distinct texts;
- indicator columns become flags where the text is a plain number (``-?digits[.digits][e±dd]``:
  DuckDB's and pandas' float64 agree) or missing; a row with any other text (``n/a``, ``1e-3 ``,
  ``"0.5"`` in JSON) keeps that attribute's texts as keys, and its flags are computed here, by
  the row path's ``to_numeric``.

What DuckDB would read differently from the row path is found in the bytes first
(:mod:`monitor.sources.files.text_files`: unterminated rows, files being written, gzip, spaces around
quotes, lenient JSON); what DuckDB refuses (a malformed row, invalid UTF-8, a duplicate key)
fails the count. Either way :class:`~monitor.sources.files.parquet_counts.Uncountable` sends the window
to the row path, which reads it and counts what it drops. The file list is a Python list given
to DuckDB's reader, never SQL text; bounds, patterns and thresholds are bound parameters.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
import sqlalchemy as sa

from monitor.sources.contract import INVALID_TIMESTAMP, CountRequest, missing_column, range_column
from monitor.sources.count_sql import DOLLAR_DIALECT, count_statement
from monitor.sources.files.parquet_counts import Uncountable
from monitor.sources.files.text_files import TextFiles, prepare
from monitor.sources.files.text_timestamps import TextInstant, place
from monitor.sources.files.text_values import (
    BOOL_WORDS,
    NA_TEXT,
    NUMBER_TEXT,
    csv_ambiguous,
    csv_type,
    csv_type_counts,
    csv_typed,
    csv_value,
    json_problem,
    json_value,
    numbers,
)

__all__ = ["count_text"]

_VIEW = "fairwatch_log"
_TS_RAW = "__ts_text"  # an undecided timestamp's text
_TS_MISSING = "__ts_missing"
_EPOCH, _NANOS = "__epoch", "__nanos"


def _raw(column: str) -> str:
    return f"__text_{column}"  # an indicator column's text, where a row's flags are computed here


def _texts(index: int) -> str:
    return f"__texts_{index}"  # the index-th indicator attribute's texts, where one is no plain number


def count_text(
    paths: Sequence[str],
    fmt: str,
    request: CountRequest,
    start: datetime,
    end: datetime,
    *,
    timeout: float,
    part: bool = False,
    conn: Any = None,
    absent: list[str] | None = None,
) -> tuple[pd.DataFrame, frozenset[str], Counter[str]]:
    """The count statement's result over ``paths`` (``fmt``: ``csv`` or ``jsonl``), the indicator
    attributes flagged in it, and the rows the row path would drop on reading (``line_invalid``).

    ``part``: the paths hold new lines of a log, not whole files (:mod:`monitor.sources.files.tail`):
    a CSV text whose value depends on how pandas types the whole file's column is refused; a JSON
    key no line of the part has is not refused (other lines may have it) but added to ``absent``;
    and the part files, complete and written by the caller, are read in place. ``conn``: a DuckDB
    connection to count with (a tail's, kept between ticks: connecting takes ~15 ms), else a new one.

    Raises :class:`Uncountable` (with the reason) where the row path must read instead.
    """
    began = time.monotonic()
    for copy_all in (False, True):  # a file a writer appended to during the count: again, from copies
        files = prepare(paths, fmt, copy_all=copy_all, deadline=began + timeout, settled=part)
        try:
            if not files.paths:
                raise Uncountable("no complete rows in the files")
            left = max(began + timeout - time.monotonic(), 0.0)
            counting = _Count(files, fmt, request, start, end, part=part)
            frame, flagged = counting.run(left, conn)
            if absent is not None:
                absent.extend(counting.absent)
        except Exception:
            if files.unchanged():
                raise
            continue  # DuckDB may have met a half-written row
        finally:
            files.close()
        if files.unchanged():
            return frame, flagged, files.rejected
    raise Uncountable("files kept changing while being counted")


class _Count:
    """One count over prepared files: the DuckDB statements, then the texts read as the row path reads them."""

    def __init__(
        self,
        files: TextFiles,
        fmt: str,
        request: CountRequest,
        start: datetime,
        end: datetime,
        *,
        part: bool = False,
    ) -> None:
        self.files, self.csv, self.part = files, fmt == "csv", part
        self.absent: list[str] = []  # part: JSON keys no line of the part has
        if self.csv:
            header = files.header or ()
            request = request.without([c for c in request.optional if c not in header])
            if missing := [c for c in request.names if c not in header]:
                raise Uncountable(f"column(s) {missing} missing")
        self.request, self.start, self.end = request, start, end
        self.flagged = frozenset(f.attribute for f in request.indicators)  # every value is text: flag here

    def run(self, timeout: float, given: Any = None) -> tuple[pd.DataFrame, frozenset[str]]:
        import duckdb  # a second of import: only for the sources that count files

        with nullcontext(given) if given is not None else duckdb.connect() as conn:
            timer = threading.Timer(timeout, conn.interrupt)
            timer.start()
            try:
                self.conn = conn
                # DuckDB would push the WHERE below the projections that match and cast each text,
                # and match and cast them again there (twice the work: no file statistics to gain)
                conn.execute("SET disabled_optimizers = 'filter_pushdown'")
                self._relation(self.files.paths).create_view(_VIEW)
                frame = self._fetch(self._statement())
                frame = self._place_timestamps(frame)
                frame = self._flag_undecided(frame)
                frame = self._values(frame)
            finally:
                timer.cancel()
        return frame, self.flagged

    # -- DuckDB ---------------------------------------------------------------------------------

    def _relation(self, paths: list[str], *, filename: bool = False) -> Any:
        if self.csv:
            header = self.files.header or ()
            return self.conn.read_csv(
                paths,  # type: ignore[arg-type]  # a list of files is read as one
                header=True,
                auto_detect=False,
                columns={c: "VARCHAR" for c in header},
                sep=",",
                quotechar='"',
                escapechar='"',
                strict_mode=True,
                null_padding=False,
                filename=filename,
            )
        return self.conn.read_json(
            paths,  # type: ignore[arg-type]
            format="newline_delimited",
            columns={c: "JSON" for c in self.request.names},
        )

    def _fetch(self, statement: sa.Select[Any]) -> pd.DataFrame:
        compiled = statement.compile(dialect=DOLLAR_DIALECT, compile_kwargs={"render_postcompile": True})
        params = [compiled.params[name] for name in compiled.positiontup or ()]
        result = self.conn.execute(compiled.string, params)
        to_arrow = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
        frame: pd.DataFrame = to_arrow().to_pandas()
        return frame

    def _text(self, log: sa.TableClause, column: str) -> sa.ColumnElement[str]:
        """A column's values as text: the CSV field, or the JSON value's JSON text."""
        value = log.c[column]
        return value if self.csv else sa.cast(value, sa.String())

    def _missing(self, text: sa.ColumnElement[str]) -> sa.ColumnElement[bool]:
        if self.csv:
            na = sa.bindparam(None, sorted(NA_TEXT), type_=sa.ARRAY(sa.String()))
            return sa.or_(text.is_(None), sa.func.list_contains(na, text))
        return text.is_(None)  # JSON null, or no such key

    def _statement(self) -> sa.Select[Any]:
        """The count statement over three layers of the log - each text matched and cast once
        (``read``); rows with texts SQL cannot decide found (``sorted``), their texts kept as keys
        (``decided``) - then grouped by :func:`count_statement`. A NA check runs only on texts that
        are no number (few)."""
        request = self.request
        indicators = [c for flags in request.indicators for c in flags.columns]
        log = sa.table(_VIEW, *(sa.column(c) for c in request.names))
        plain = sa.bindparam(None, NUMBER_TEXT, type_=sa.String())
        cells: list[sa.ColumnElement[Any]] = [self._text(log, c).label(c) for c in request.columns]
        for c in indicators:
            text = self._text(log, c)
            cells += [sa.case((sa.func.regexp_full_match(text, plain), sa.cast(text, sa.Double()))).label(c)]
            cells += [text.label(_raw(c))]
        ts = self._text(log, request.timestamp)
        readable = ts if self.csv else sa.func.json_extract_string(log.c[request.timestamp], "$")
        cells += [*TextInstant.read(readable), ts.label(_TS_RAW)]
        read = sa.select(*cells).select_from(log).subquery("read")

        instant = TextInstant.of(read)
        cells = [read.c[c] for c in [*request.columns, *indicators, _TS_RAW]]
        cells += [instant.epoch.label(_EPOCH), instant.nanos.label(_NANOS)]
        for i, flags in enumerate(request.indicators):
            # a text that is no plain number (NA strings too: Python tells those apart, few rows)
            odd = sa.or_(*(sa.and_(read.c[c].is_(None), read.c[_raw(c)].is_not(None)) for c in flags.columns))
            texts = sa.func.list_value(*(read.c[_raw(c)] for c in flags.columns))
            cells += [sa.case((odd, texts)).label(_texts(i))]
        missing = self._missing(read.c[_TS_RAW])
        cells += [sa.case((sa.not_(instant.decided), missing), else_=False).label(_TS_MISSING)]
        sorted_ = sa.select(*cells).select_from(read).subquery("sorted")

        cells = [sorted_.c[c] for c in [*request.columns, *indicators, _EPOCH, _NANOS, _TS_MISSING]]
        cells += [sorted_.c[_texts(i)] for i in range(len(request.indicators))]
        undecided = sa.and_(
            sorted_.c[_EPOCH].is_(None), sorted_.c[_NANOS].is_(None), sa.not_(sorted_.c[_TS_MISSING])
        )
        cells += [sa.case((undecided, sorted_.c[_TS_RAW])).label(_TS_RAW)]
        rows = sa.select(*cells).select_from(sorted_).subquery("decided")
        return count_statement(
            rows,
            request,
            TextInstant(rows.c[_EPOCH], rows.c[_NANOS]).between,
            read=(self.start, self.end),
            invalid=sa.or_(rows.c[_TS_MISSING], rows.c[_TS_RAW].is_not(None)),
            flagged=self.flagged,
            sqlite=False,
            extra=[
                rows.c[_TS_RAW].label(_TS_RAW),
                *(rows.c[_texts(i)].label(_texts(i)) for i in range(len(request.indicators))),
            ],
        )

    # -- the texts, as the row path reads them --------------------------------------------------

    def _place_timestamps(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Rows whose timestamp text SQL left undecided: placed by ``normalize_timestamps``."""
        undecided = frame[_TS_RAW].notna().to_numpy()
        if undecided.any():
            texts = frame.loc[undecided, _TS_RAW].tolist()
            if self.csv:
                if csv_ambiguous(list(dict.fromkeys(texts)), as_number=True, as_text=False):
                    raise Uncountable(
                        "a timestamp text whose meaning depends on the column's type (true, +1e9)"
                    )
                values: list[Any] = texts
            else:
                values = [json_value(t) for t in texts]
                if problem := json_problem(values, as_text=False, model=False, timestamp=True):
                    raise Uncountable(problem)
            ranges = [*self.request.ranges, (self.start, self.end)]
            unreadable, inside = place(values, ranges)
            for i in range(len(self.request.ranges)):
                _set(frame, range_column(i), undecided, inside[i])
            _set(frame, INVALID_TIMESTAMP, undecided, unreadable)
            keep = ~undecided
            keep[undecided] = unreadable | inside[-1]  # outside the read range: not read at all
            frame = frame.loc[keep]
        return frame.drop(columns=_TS_RAW).reset_index(drop=True)

    def _flag_undecided(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Flags of rows whose indicator texts SQL could not read as numbers: by ``to_numeric``."""
        for i, flags in enumerate(self.request.indicators):
            rows = frame[_texts(i)].notna().to_numpy()
            if rows.any():
                texts = np.array(frame.loc[rows, _texts(i)].tolist(), dtype=object)  # rows x columns
                missing = np.ones(len(texts), dtype=bool)
                for j, c in enumerate(flags.columns):
                    number = numbers(self._values_of(list(texts[:, j])))
                    missing &= np.isnan(number)
                    with np.errstate(invalid="ignore"):
                        _set(frame, c, rows, ~np.isnan(number) & (number >= flags.threshold))
                _set(frame, missing_column(i), rows, missing)
            frame = frame.drop(columns=_texts(i))
        return frame

    def _values_of(self, texts: list[Any]) -> list[Any]:
        if not self.csv:
            return [json_value(t) for t in texts]
        values = [csv_value(t) for t in texts]
        present = [v for v in dict.fromkeys(values) if v is not None]
        if csv_ambiguous(present, as_number=True, as_text=False):
            raise Uncountable(
                "an indicator text whose meaning depends on the column's type (a boolean word, +1e5)"
            )
        return values

    def _values(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The request's columns' texts as the values the row path's columns hold."""
        request = self.request
        for column in request.columns:
            texts = frame[column]
            distinct = [t for t in pd.unique(texts) if isinstance(t, str)]
            as_text = column in request.texts
            as_number = column != request.model  # a class or group column may be an indicator's too
            if self.csv:
                present = [t for t in distinct if t not in NA_TEXT]
                mapping: dict[str, Any] = {t: t for t in present}
                if column == request.model and (
                    not np.isnan(numbers(present)).all() or any(t in BOOL_WORDS for t in present)
                ):
                    raise Uncountable("a number or boolean word in the model column")
                if ambiguous := csv_ambiguous(present, as_number=as_number, as_text=as_text):
                    if self.part:
                        raise Uncountable(
                            f"column {column!r} holds texts whose values depend on how the whole "
                            "file's column is typed (numbers, boolean words)"
                        )
                    mapping.update(zip(ambiguous, csv_typed(ambiguous, self._csv_type(column)), strict=True))
                frame[column] = texts.map(mapping).astype(object)  # NA strings and NULL: NaN
            else:
                parsed = {t: json_value(t) for t in distinct}
                problem = json_problem(
                    list(parsed.values()), as_text=as_text, model=column == request.model, timestamp=False
                )
                if problem:
                    raise Uncountable(problem)
                frame[column] = texts.map(parsed).astype(object)
        if not self.csv and len(frame):
            self._require_present(frame)
        return frame

    def _csv_type(self, column: str) -> str:
        """How ``read_csv`` typed ``column`` in every file of the read (they must agree)."""
        relation = self._relation(self.files.paths, filename=True)
        relation.create_view(f"{_VIEW}_files")
        log = sa.table(f"{_VIEW}_files", sa.column(column), sa.column("filename"))
        statement = sa.select(*csv_type_counts(log.c[column])).select_from(log).group_by(log.c.filename)
        kinds = {csv_type(*(bool(x) for x in row)) for row in self._fetch(statement).itertuples(index=False)}
        kinds.discard("empty")
        if len(kinds) != 1 or None in kinds:
            raise Uncountable(
                f"column {column!r} is typed differently across files, or unsure ({sorted(map(str, kinds))})"
            )
        kind = kinds.pop()
        assert kind is not None
        return kind

    def _require_present(self, frame: pd.DataFrame) -> None:
        """JSON: a key no line has (or only as null) is a missing column to the row path: refuse."""
        request = self.request
        suspects = [c for c in request.columns if frame[c].isna().all()]
        if (frame[INVALID_TIMESTAMP] == 1).all():
            suspects.append(request.timestamp)
        for i, flags in enumerate(request.indicators):
            if not (frame[missing_column(i)] == 0).any():
                suspects += flags.columns
            else:
                suspects += [c for c in flags.columns if not (frame[c] == 1).any()]
        if not suspects:
            return
        log = sa.table(_VIEW, *(sa.column(c) for c in suspects))
        counts_of: list[sa.ColumnElement[Any]] = [sa.func.count(log.c[c]).label(c) for c in suspects]
        statement = sa.select(*counts_of)
        counts = self._fetch(statement.select_from(log))
        if absent := [c for c in suspects if int(counts[c].iloc[0]) == 0]:
            if self.part:  # other lines of the file may have them: the tail decides
                self.absent = absent
                return
            raise Uncountable(f"column(s) {absent} have no value in the files")


def _set(frame: pd.DataFrame, column: str, rows: np.ndarray, flags: np.ndarray) -> None:
    """``frame[column][rows] = flags`` for a 0/1 column."""
    values = frame[column].to_numpy().copy()
    values[rows] = flags
    frame[column] = values
