"""How the service writes times in JSON: two formats, each named for what it is.

- :func:`iso_z` - the results JSON (``fairwatch evaluate --format json``, ``/api/v1/results``, the
  landing page): ``datetime.isoformat()`` as it is, microseconds kept when there are any, with a
  UTC offset written ``Z``. The service's times are UTC already, so nothing is converted.
- :func:`rfc3339_utc_millis` - alerts pushed to Alertmanager and webhooks: RFC 3339 converted to
  UTC with exactly three fractional digits, the way Alertmanager writes its own times.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["iso_z", "rfc3339_utc_millis"]


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
