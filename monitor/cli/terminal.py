"""Printing to a terminal or a pipe: tables that never cut a name, and a closed pipe that is no error.

Rich fits a table to the console's width and, when the columns cannot all fit, cuts cells
with an ellipsis - a metric name or a group included. Here a table is printed at least as
wide as its names need: in a terminal at the terminal's width (wider only when the names
do not fit), and into a pipe or file one row per line at its natural width, whatever
``COLUMNS`` says, so that ``grep`` and ``head`` see whole rows. Rich writes no colour
codes when the output is not a terminal.

``fairwatch metrics | head`` closes the pipe while fairwatch still writes; that is how
``head`` works, not a failure, so :func:`stdout_closed` quiets Python's late complaint.
"""

from __future__ import annotations

import os
import signal
import sys

from rich.cells import cell_len
from rich.console import Console, JustifyMethod
from rich.measure import Measurement
from rich.table import Table

__all__ = [
    "EXIT_BROKEN_PIPE",
    "name_column",
    "print_table",
    "stdout_closed",
    "stdout_console",
    "text_column",
]

#: The exit status of a process that wrote into a closed pipe (killed by SIGPIPE, as ``cat`` would be).
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
# wider than any table fairwatch prints: the measure of a table's natural width
_UNBOUNDED = 100_000
# the narrowest a column of wrapped text gets in a narrow terminal
_WRAPPED_MIN = 6


class _StdoutConsole(Console):
    def on_broken_pipe(self) -> None:
        raise BrokenPipeError  # to the command line's handler, which exits as a closed pipe should


def stdout_console() -> Console:
    """A console on stdout whose closed pipe ends the command quietly with :data:`EXIT_BROKEN_PIPE`
    (rich's own answer is exit status 1)."""
    return _StdoutConsole()


def name_column(table: Table, header: str) -> None:
    """A column of names (metrics, groups, models): never wrapped or cut."""
    table.add_column(header, no_wrap=True, overflow="ignore")


def text_column(table: Table, header: str, *, justify: JustifyMethod = "left") -> None:
    """A column of values or prose: wrapped at spaces, a long word folded, never cut."""
    table.add_column(header, overflow="fold", justify=justify)


def print_table(console: Console, table: Table) -> None:
    """Print ``table`` without cutting the cells of its no-wrap (name) columns."""
    if console.is_terminal:  # the terminal's width, unless the names need more
        width = max(console.width, _names_width(table))
    else:  # one row per line
        width = Measurement.get(console, console.options.update(max_width=_UNBOUNDED), table).maximum
    kept = console.width
    console.width = width  # Console.print(width=) can only narrow
    try:
        console.print(table)
    finally:
        console.width = kept


def _names_width(table: Table) -> int:
    """The width at which the name columns fit whole and every other column keeps a few characters
    to wrap its text in."""
    width = len(table.columns) + 1  # borders
    for column in table.columns:
        if column.no_wrap:
            cells = [column.header, *column.cells]
            width += max(cell_len(c) if isinstance(c, str) else 1 for c in cells)
        else:
            width += _WRAPPED_MIN
        width += 2  # padding
    return width


def stdout_closed() -> int:
    """After a :class:`BrokenPipeError` on stdout: point stdout at the null device, so that the
    interpreter's final flush does not fail again, and return the exit status."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file (an in-process caller's buffer)
        pass
    return EXIT_BROKEN_PIPE
