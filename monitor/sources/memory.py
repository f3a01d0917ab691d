"""An in-memory source: the test double (as httpx ships ``MockTransport``)."""

from __future__ import annotations

from datetime import datetime

import pandas as pd

from monitor.core.errors import SourceError
from monitor.sources.contract import Batch
from monitor.sources.frames import filter_window

__all__ = ["MemorySource"]


class MemorySource:
    """Serves rows from a DataFrame; ``fail_with`` makes every read raise (a source outage)."""

    def __init__(
        self, frame: pd.DataFrame, *, timestamp_column: str = "timestamp", name: str = "memory"
    ) -> None:
        self.frame = frame
        self.timestamp_column = timestamp_column
        self.name = name
        self.fail_with: str | None = None
        self.reads = 0

    def read(self, start: datetime, end: datetime) -> Batch:
        self.reads += 1
        if self.fail_with is not None:
            raise SourceError(self.fail_with)
        return filter_window(self.frame, self.timestamp_column, start, end)

    def describe(self) -> str:
        return f"memory:{self.name}"

    def close(self) -> None:
        pass
