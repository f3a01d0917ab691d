"""What the command line accepts: checked argument types and the help layout.

A bad argument is refused by argparse itself with a one-line ``error:`` naming the option
and the value (exit 2), never a traceback from deep inside the command: every number the
commands take has a type here that states its range. The help formatter shows each
option's default and keeps the examples of a subcommand's epilog as written.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["HelpFormatter", "fraction", "number", "port"]


class HelpFormatter(argparse.HelpFormatter):
    """``(default: X)`` after every option that has a meaningful default; examples kept verbatim.

    argparse's ``ArgumentDefaultsHelpFormatter`` also prints ``(default: None)`` and
    ``(default: False)`` for options without one, which says nothing; those are left out.
    A description is filled to the terminal's width; text with line breaks (the examples)
    is kept as written.
    """

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        shown = (
            action.option_strings
            and "%(default)" not in text
            and default is not None
            and default is not False
            and default not in (argparse.SUPPRESS, [])
            and not isinstance(action, argparse._VersionAction | argparse._HelpAction)
        )
        return f"{text} (default: %(default)s)" if shown else text


def number(*, minimum: float, inclusive: bool = True, maximum: float = math.inf) -> Callable[[str], float]:
    """A finite float at least (or above, ``inclusive=False``) ``minimum`` and at most ``maximum``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if value < minimum or (value == minimum and not inclusive):
            bound = f"at least {minimum:g}" if inclusive else f"above {minimum:g}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:g}, got {text}")
        return value

    parse.__name__ = "number"  # argparse names the type in some messages
    return parse


def fraction(text: str) -> float:
    """A number strictly between 0 and 1 (a power, a confidence)."""
    value = number(minimum=0.0, inclusive=False)(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must lie between 0 and 1, got {text}")
    return value


def port(text: str) -> int:
    """A TCP port, 0 (any free port) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port lies between 0 and 65535, got {value}")
    return value
