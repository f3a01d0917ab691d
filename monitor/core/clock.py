"""Clocks: the service asks one for "now" instead of reading the system time itself.

Tests inject :class:`FakeClock`; ``fairwatch demo`` runs on :class:`AcceleratedClock`
so that hours of a drifting model pass in seconds.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["AcceleratedClock", "Clock", "FakeClock", "SystemClock"]


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FakeClock:
    """A clock that moves only when told to.

    >>> c = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    >>> c.advance(timedelta(minutes=5)).isoformat()
    '2026-01-01T00:05:00+00:00'
    """

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("FakeClock needs a timezone-aware start time")
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta) -> datetime:
        with self._lock:
            self._now += delta
            return self._now

    def set(self, when: datetime) -> None:
        with self._lock:
            self._now = when


class AcceleratedClock:
    """Simulated time that starts at ``start`` and runs ``speed`` times faster than real time."""

    def __init__(self, start: datetime, speed: float) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be positive, got {speed}")
        self._start = start
        self._speed = speed
        self._t0 = time.monotonic()

    def now(self) -> datetime:
        return self._start + timedelta(seconds=(time.monotonic() - self._t0) * self._speed)
