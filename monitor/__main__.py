"""``python -m monitor``: the ``fairwatch`` command."""

from monitor.cli import entry

entry()
