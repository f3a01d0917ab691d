"""CSV views of the judged values, for spreadsheets: ``fairwatch evaluate --format csv`` and
``/api/v1/results?format=csv``.

The columns are those of :class:`~monitor.outputs.json.EvaluationRow`, in its order, one row per
judged value - the objects of ``--format json``. A value JSON writes as ``null`` (NaN, an infinite
fair bound, no reason) is an empty cell; numbers are written as Python writes them (``repr``: the
shortest text that reads back as the same float). Text that a spreadsheet would run as a formula
(a group value logged as ``=HYPERLINK(...)``; cells starting with ``=``, ``+``, ``-``, ``@``, a tab
or a carriage return) is prefixed with ``'``, as OWASP advises against CSV injection; numbers never are.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

from monitor.outputs.json import EvaluationRow

__all__ = ["COLUMNS", "rows_csv"]

#: The columns, in order: the fields of one judged value.
COLUMNS: tuple[str, ...] = tuple(EvaluationRow.__annotations__)
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def rows_csv(rows: Iterable[Mapping[str, Any]], columns: tuple[str, ...] = COLUMNS) -> str:
    """``rows`` as CSV text with a header line (``\\r\\n`` line ends, as RFC 4180)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in columns])
    return out.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    return "'" + text if text.startswith(_FORMULA) else text
