"""fairwatch's monitoring service: sources, windows, schedule, Prometheus export, alerts.

``import monitor`` loads nothing but this module; the names of the notebook API -
``from monitor import load_settings, build_report, instants`` - are imported on first use (the
command line starts without them).

The layers, and what may import what, are drawn in ``docs/architecture.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from monitor.core.version import __version__

if TYPE_CHECKING:
    from monitor.config import load_settings
    from monitor.outputs.html.report import Report, build_report, instants

__all__ = ["Report", "__version__", "build_report", "instants", "load_settings"]

_LAZY = {
    "load_settings": "monitor.config",
    "Report": "monitor.outputs.html.report",
    "build_report": "monitor.outputs.html.report",
    "instants": "monitor.outputs.html.report",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'monitor' has no attribute {name!r}")
