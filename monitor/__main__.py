"""``python -m monitor``: the ``fairwatch`` command."""

from monitor.cli import main

raise SystemExit(main())
