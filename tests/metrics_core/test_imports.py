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


# every binary metric of a window with its interval, as the service computes them by default
_EVALUATE = """
import numpy as np
rng = np.random.default_rng(0)
race = metrics_core.categorical_attribute("race", rng.choice(["a", "b", "c"], 2_000), reference="a")
table = metrics_core.table_for(rng.random(2_000), rng.integers(0, 2, 2_000), [race])
report = metrics_core.evaluate(table, race.comparisons)
assert sum(v.ci_lower < v.value < v.ci_upper for v in report.values) > 10  # intervals were computed
assert sum(v.state == "ok" for v in report.values) > 10
"""


def _heavy_modules_loaded(probe: str) -> list[str]:
    # the child imports the same metrics_core as this process (a worktree's, not an installed one)
    root = str(Path(mc.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=120,
    ).stdout
    return list(json.loads(out.strip().splitlines()[-1]))


def test_import_metrics_core_loads_no_heavy_library() -> None:
    assert _heavy_modules_loaded(_PROBE) == []


def test_evaluating_a_binary_window_loads_no_scipy() -> None:
    """The normal quantile of every interval comes from the standard library (``scipy.special``
    alone costs an evaluation ~0.2 s to import)."""
    probe = _PROBE.replace("print(", _EVALUATE + "print(")
    assert _heavy_modules_loaded(probe) == []
