"""``python -m monitor.cli``: the ``fairwatch`` command."""

from monitor.cli import entry

entry()
