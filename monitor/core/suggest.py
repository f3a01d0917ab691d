""" "Did you mean ...?": the closest known name to a misspelt one.

A misspelt config key, option or model name is refused with the nearest known name
(difflib's ratio of matching characters, as Python's own ``NameError`` suggestions
and git's "did you mean" do), so that the fix is a copy, not a search through the docs.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest", "did_you_mean"]

# difflib's default: "fairnes" -> "fairness", but "foo" suggests nothing
_CUTOFF = 0.6


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known name most like ``word``, if any is alike enough.

    >>> closest("sourc", ["source", "labels", "columns"])
    'source'
    >>> closest("xyz", ["source", "labels"]) is None
    True
    """
    names = list(known)
    match = difflib.get_close_matches(word, names, n=1, cutoff=_CUTOFF)
    if not match:  # case slips ("Threshold") are closer than the ratio says
        match = [n for n in names if n.lower() == word.lower()][:1]
    return match[0] if match else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``" (did you mean `x`?)"`` for the closest known name, or ``""``.

    >>> "unknown key `thresold`" + did_you_mean("thresold", ["threshold", "groups"])
    'unknown key `thresold` (did you mean `threshold`?)'
    """
    match = closest(word, known)
    return "" if match is None else f" (did you mean `{match}`?)"
