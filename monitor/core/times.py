"""Instants and durations as text, one way each: the service's times are aware UTC datetimes
(:func:`utc`), durations are written ``90s``, ``5m``, ``1h30m``, ``7d`` in configs, on the command
line and in rules (:func:`parse_duration`, :func:`format_duration`), and JSON has two formats, each
named for what it is:

- :func:`iso_z` - the results JSON (``fairwatch evaluate --format json``, ``/api/v1/results``, the
  landing page): ``datetime.isoformat()`` as it is, microseconds kept when there are any, with a
  UTC offset written ``Z``. The service's times are UTC already, so nothing is converted.
- :func:`rfc3339_utc_millis` - alerts pushed to Alertmanager and webhooks: RFC 3339 converted to
  UTC with exactly three fractional digits, the way Alertmanager writes its own times.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["format_duration", "iso_z", "parse_duration", "rfc3339_utc_millis", "utc"]


def utc(moment: datetime) -> datetime:
    """Aware UTC; a naive datetime is taken as UTC (as everywhere in fairwatch)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def iso_z(t: datetime) -> str:
    """``t.isoformat()`` with ``+00:00`` written ``Z``.

    >>> iso_z(datetime(2026, 1, 2, 3, 4, 5, 600, tzinfo=UTC))
    '2026-01-02T03:04:05.000600Z'
    """
    return t.isoformat().replace("+00:00", "Z")


def rfc3339_utc_millis(t: datetime) -> str:
    """``t`` in UTC, with milliseconds and a ``Z``, as Alertmanager writes it.

    >>> from datetime import timedelta, timezone
    >>> rfc3339_utc_millis(datetime(2026, 1, 2, 5, 4, 5, 600, tzinfo=timezone(timedelta(hours=2))))
    '2026-01-02T03:04:05.000Z'
    """
    return t.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, None: 1}


def parse_duration(value: Any) -> timedelta:
    """``"90s"``, ``"5m"``, ``"24h"``, ``"800d"``, a number of seconds, or a timedelta.

    >>> parse_duration("5m"), parse_duration("800d").days, parse_duration(90)
    (datetime.timedelta(seconds=300), 800, datetime.timedelta(seconds=90))
    """
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise ValueError(f"not a duration: {value!r} (write e.g. 90s, 5m, 24h, 7d)")
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"a duration must be finite and non-negative, got {value!r}")
    try:
        return timedelta(seconds=seconds)
    except OverflowError:  # beyond timedelta's 999,999,999 days (pydantic passes only ValueError on)
        raise ValueError(f"a duration must be at most {timedelta.max.days:,} days, got {value!r}") from None


def format_duration(value: timedelta) -> str:
    """A duration as :func:`parse_duration` and Prometheus read it: ``1d``, ``1h30m``, ``2s``, ``250ms``, ``0s``.

    >>> format_duration(timedelta(minutes=90)), format_duration(timedelta(0)), format_duration(timedelta(seconds=1.5))
    ('1h30m', '0s', '1s500ms')
    >>> format_duration(timedelta(days=7)), format_duration(timedelta(hours=24))
    ('7d', '1d')
    """
    ms = round(value.total_seconds() * 1000)
    if ms < 0:
        raise ValueError(f"a duration must not be negative, got {value}")
    parts = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        count, ms = divmod(ms, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
