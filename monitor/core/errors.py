"""fairwatch's exceptions.

    FairwatchError
    ├── ConfigError           a config file or value is wrong; names the key
    ├── SourceError           a prediction or label source cannot be read
    └── AlertDeliveryError    an alert sink (Alertmanager, webhook) refused or is unreachable

Driver errors (SQLAlchemy, pyarrow, HTTP) are re-raised as these at the boundary, with
``from exc`` so the cause stays in the traceback.
"""

from __future__ import annotations

__all__ = ["AlertDeliveryError", "ConfigError", "FairwatchError", "SourceError"]


class FairwatchError(Exception):
    """Base class of every error fairwatch raises on purpose."""


class ConfigError(FairwatchError):
    """The configuration is invalid; the message names the offending key (and line)."""


class SourceError(FairwatchError):
    """A source could not be read (unreachable database, missing table or column, bad file)."""


class AlertDeliveryError(FairwatchError):
    """An alert could not be delivered to a sink. ``undelivered``: the resolved alerts a partly
    delivered attempt did not deliver (``None``: none was, as far as the sink knows)."""

    def __init__(self, message: str, *, undelivered: tuple[object, ...] | None = None) -> None:
        super().__init__(message)
        self.undelivered = undelivered
