"""``python -m monitor.cli``: the ``fairwatch`` command."""

from monitor.cli import main

raise SystemExit(main())
