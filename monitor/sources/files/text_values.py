"""What a value DuckDB read as text from a CSV or JSON Lines log is on the row path.

The counted path reads every value as text (a CSV field; a JSON value's JSON text) and hands
those texts to the row path's own cleaning code (``clean_rows``, ``attributes``), which reads
them elementwise: ``to_numeric`` for scores, labels and indicator columns, ``str`` (whole
numbers without ``.0``) for classes and group values, ``astype("string")`` for the model column.
The row path, though, first lets pandas type each column, and a few texts mean something else
once typed:

- CSV (``pandas.read_csv`` types a column per file; the files' frames are concatenated): pandas'
  NA strings (``""``, ``NA``, ``null``, ``nan``, ...) are missing - here too (:func:`csv_value`).
  A column of nothing but ``True``/``false``-style words is boolean (``to_numeric`` gives 1/0,
  where the text gives NaN), and a column of nothing but numbers is numeric (``1.0`` is the class
  ``1``, the text ``1.0`` is a class of its own). Parsing agrees - ``read_csv`` and ``to_numeric``
  read the same float64 from the same digits (1.8 M random strings) - so only such words and
  numbers *not written canonically* are ambiguous (:func:`csv_ambiguous`), and only then is each
  file's type of the column worked out, by :func:`csv_type_counts` in SQL over the whole files:
  certainly text, certainly numbers, certainly booleans, or unsure (then the row path reads);
- JSON (``DataFrame.from_records``): a value is its ``json.loads`` value whatever the column's
  type, except a whole number beyond 2**53 read as text (int or float depends on the column),
  a number in the model column (``1`` or ``1.0`` depends on the column) and a boolean timestamp
  (a number, or unreadable text, depending on the column): those are refused
  (:func:`json_problem`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import sqlalchemy as sa
from pandas._libs.parsers import STR_NA_VALUES  # type: ignore[import-not-found]  # read_csv's defaults

from monitor.sources.files.parquet_counts import Uncountable

__all__ = [
    "BOOL_WORDS",
    "NA_TEXT",
    "NUMBER_TEXT",
    "csv_ambiguous",
    "csv_numbers",
    "csv_type",
    "csv_type_counts",
    "csv_typed",
    "csv_value",
    "json_problem",
    "json_value",
    "numbers",
]

#: What ``read_csv`` reads as missing (its defaults).
NA_TEXT = frozenset(STR_NA_VALUES)
_TRUE = frozenset({"True", "TRUE", "true"})
#: What ``read_csv`` reads as booleans when a column holds nothing else.
BOOL_WORDS = _TRUE | {"False", "FALSE", "false"}
#: Numbers DuckDB's ``CAST(... AS DOUBLE)`` and pandas read alike (no overflow: the exponent has two digits).
NUMBER_TEXT = r"-?[0-9]{1,20}(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,2})?"
_SURE_NUMBER = r"-?[0-9]+(\.[0-9]+)?"  # read_csv reads this as a number, always
_EXACT = 2.0**53  # whole numbers below this are the same as int and as float


def csv_value(text: object) -> str | None:
    """A CSV field (``None`` or NaN: NULL): ``None`` where ``read_csv`` reads it as missing."""
    return text if isinstance(text, str) and text not in NA_TEXT else None


def json_value(text: object) -> Any:
    """A JSON value from its JSON text (``None`` or NaN: NULL, a missing key or null)."""
    return json.loads(text) if isinstance(text, str) else None


def numbers(values: Iterable[Any]) -> np.ndarray:
    """``to_numeric`` of values, as the row path reads a numeric column (NaN: not a number)."""
    series = pd.Series(list(values), dtype=object)
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def _canonical(number: float) -> str:
    return str(int(number)) if number.is_integer() else str(number)


def csv_numbers(values: Sequence[str]) -> np.ndarray:
    """Each text as ``read_csv`` reads it in a column of numbers (NaN: not read as one). ``to_numeric``
    does not always agree: ``+3e23`` is ``2.9999999999999997e+23`` to it, ``3e+23`` to ``read_csv``."""
    candidates = [i for i, number in enumerate(numbers(values)) if not np.isnan(number)]
    out = np.full(len(values), np.nan)
    if candidates:
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows([["x"], *([values[i]] for i in candidates)])
        column = pd.read_csv(io.StringIO(text.getvalue()), low_memory=False)["x"]
        if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
            out[candidates] = column.to_numpy(dtype=np.float64)
        # else some number to_numeric reads is text to read_csv: none is sure (NaN)
    return out


def csv_ambiguous(values: Sequence[str], *, as_number: bool, as_text: bool) -> list[str]:
    """The (non-missing) CSV texts whose meaning depends on how pandas typed their column: boolean
    words, numbers ``to_numeric`` and ``read_csv`` read differently, and (``as_text``) numbers not
    written as the row path writes them back."""
    parsed, typed = numbers(values), csv_numbers(values)
    out = []
    for value, number, number_in_column in zip(values, parsed, typed, strict=True):
        word = value in BOOL_WORDS and (as_number or value not in ("True", "False"))
        differs = as_number and not np.isnan(number) and number != number_in_column  # NaN: unsure
        unwritten = (
            as_text
            and not np.isnan(number)
            and (_EXACT <= abs(number) < np.inf or _canonical(float(number)) != value)
        )
        if word or differs or unwritten:
            out.append(value)
    return out


def csv_type_counts(column: sa.ColumnElement[str]) -> list[sa.ColumnElement[Any]]:
    """Per file: whether the column holds certain numbers, boolean words, certain text, or other
    values (``bool_or`` aggregates, in this order; see :func:`csv_type`)."""
    missing = sa.or_(column.is_(None), column.in_(sorted(NA_TEXT)))
    number = sa.func.regexp_full_match(column, sa.bindparam(None, _SURE_NUMBER, type_=sa.String()))
    word = column.in_(sorted(BOOL_WORDS))
    # a character no number has, and no inf/nan/1.#INF spelling nor a boolean with spaces: text
    text = sa.and_(
        sa.func.regexp_matches(column, sa.bindparam(None, r"[^0-9eE.+\-\s]", type_=sa.String())),
        sa.not_(
            sa.func.regexp_matches(sa.func.lower(column), sa.bindparam(None, "inf|nan|#", type_=sa.String()))
        ),
        sa.func.lower(sa.func.trim(column)).not_in(["true", "false"]),
    )
    plain = sa.and_(sa.not_(missing), sa.not_(number), sa.not_(word))
    return [
        sa.func.bool_or(sa.and_(sa.not_(missing), number)),
        sa.func.bool_or(word),
        sa.func.bool_or(sa.and_(plain, text)),
        sa.func.bool_or(sa.and_(plain, sa.not_(text))),
    ]


def csv_type(number: bool, word: bool, text: bool, other: bool) -> str | None:
    """The type ``read_csv`` gives a column from :func:`csv_type_counts`: ``text``, ``number``,
    ``bool``, ``empty``, or ``None`` (unsure)."""
    if text or (number and word):
        return "text"
    if other:
        return None
    return "number" if number else "bool" if word else "empty"


def csv_typed(values: Sequence[str], kind: str) -> list[Any]:
    """CSV texts as the row path holds them in a column of type ``kind`` (see :func:`csv_type`)."""
    if kind == "number":
        parsed = csv_numbers(values)
        if np.isnan(parsed).any():
            raise Uncountable("a number read_csv does not read as one, in a column of numbers")
        return [float(x) for x in parsed]
    if kind == "bool":
        return [value in _TRUE for value in values]
    return list(values)


def json_problem(values: Sequence[Any], *, as_text: bool, model: bool, timestamp: bool) -> str | None:
    """Why JSON values read differently depending on the type pandas gives their column, if they do."""
    for value in values:
        is_number = isinstance(value, int | float) and not isinstance(value, bool)
        if model and is_number:
            return f"a number in the model column ({value!r}: 1 or 1.0 depending on the column)"
        if timestamp and isinstance(value, bool):
            return "a boolean timestamp"
        if as_text and is_number and abs(value) >= _EXACT and float(value).is_integer():
            return f"a whole number beyond 2**53 read as text ({value!r})"
    return None
