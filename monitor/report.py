"""Deprecated: ``from monitor import build_report, instants``. The report moved to
:mod:`monitor.outputs.html.report` when the service was laid out in layers; this module keeps
notebooks written against the old path working, with a :class:`DeprecationWarning` on use."""

from __future__ import annotations

import warnings
from typing import Any

from monitor.outputs.html import report as _report

_MOVED = ("Report", "build_report", "instants")


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module 'monitor.report' has no attribute {name!r}")
    warnings.warn(
        f"monitor.report is deprecated: import {name} from monitor", DeprecationWarning, stacklevel=2
    )
    return getattr(_report, name)
