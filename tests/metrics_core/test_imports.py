"""``import metrics_core`` stays light: no scipy, scikit-learn or pandas until a function needs them.

Every command of the service imports the library, so a heavy import at module level is paid
by all of them (scipy alone roughly doubles the import). The check runs in a fresh
interpreter: this test process has imported those libraries already, through other tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import metrics_core as mc

pytestmark = pytest.mark.integration

HEAVY = ("scipy", "sklearn", "pandas")

_PROBE = f"""
import json, sys
import metrics_core
print(json.dumps(sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY!r}))))
"""


def test_import_metrics_core_loads_no_heavy_library() -> None:
    # the child imports the same metrics_core as this process (a worktree's, not an installed one)
    root = str(Path(mc.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=120,
    ).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []
