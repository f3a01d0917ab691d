"""The layers of metrics_core and monitor hold: import-linter keeps them, and catches an upward import.

``scripts/test`` runs ``lint-imports`` on the tree itself; this test shows that the contract
would fail on a violation, by planting one in a copy of the packages.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for package in ("metrics_core", "monitor"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_layers_hold(tree: Path) -> None:
    result = _lint(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken." in result.stdout and "BROKEN" not in result.stdout


@pytest.mark.parametrize(
    ("module", "upward", "message"),
    [
        (
            "stats/judge.py",
            "metrics_core.registry",
            "metrics_core.stats is not allowed to import metrics_core.registry",
        ),
        (
            "engine/groupwise.py",
            "metrics_core.binary",
            "metrics_core.engine is not allowed to import metrics_core.binary",
        ),
        (
            "regression/kernels.py",
            "metrics_core.multiclass",
            "metrics_core.regression is not allowed to import metrics_core.multiclass",
        ),
        ("core/spec.py", "monitor.config", "metrics_core.core.spec -> monitor.config"),
    ],
)
def test_an_upward_import_breaks_a_contract(tree: Path, module: str, upward: str, message: str) -> None:
    path = tree / "metrics_core" / module
    path.write_text(path.read_text(encoding="utf-8") + f"\nimport {upward}  # noqa: E402\n", encoding="utf-8")
    result = _lint(tree)
    assert result.returncode != 0
    assert message in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("module", "imported", "message"),
    [
        # a layer importing one above it
        ("core/errors.py", "monitor.config", "monitor.core is not allowed to import monitor.config"),
        ("tasks/base.py", "monitor.config", "monitor.tasks is not allowed to import monitor.config"),
        (
            "evaluation/evaluator.py",
            "monitor.service.snapshot",
            "monitor.evaluation is not allowed to import monitor.service",
        ),
        ("outputs/json.py", "monitor.http", "monitor.outputs is not allowed to import monitor.http"),
        ("app.py", "monitor.cli", "monitor.app is not allowed to import monitor.cli"),
        # siblings that must stay independent
        (
            "sources/sql/source.py",
            "monitor.sources.files",
            "monitor.sources.sql is not allowed to import monitor.sources.files",
        ),
        (
            "tasks/binary.py",
            "monitor.tasks.text",
            "monitor.tasks.binary is not allowed to import monitor.tasks.text",
        ),
        (
            "outputs/power.py",
            "monitor.outputs.html",
            "monitor.outputs.power is not allowed to import monitor.outputs.html",
        ),
        # a cycle inside a package
        ("reading/pane_store.py", "monitor.reading.panes", "No cycles are allowed in monitor.reading"),
        # metrics_core only through its facades; terminals and SQL only where they belong
        (
            "evaluation/attributes.py",
            "metrics_core.stats.judge",
            "monitor.evaluation.attributes -> metrics_core.stats.judge",
        ),
        (
            "tasks/regression.py",
            "metrics_core.regression.kernels",
            "monitor.tasks.regression -> metrics_core.regression.kernels",
        ),
        ("service/runner.py", "rich.console", "monitor.service.runner -> rich"),
        ("reading/panes.py", "sqlalchemy", "monitor.reading.panes -> sqlalchemy"),
    ],
)
def test_the_service_breaks_a_contract_on_a_planted_import(
    tree: Path, module: str, imported: str, message: str
) -> None:
    path = tree / "monitor" / module
    path.write_text(
        path.read_text(encoding="utf-8") + f"\nimport {imported}  # noqa: E402\n", encoding="utf-8"
    )
    result = _lint(tree)
    assert result.returncode != 0
    assert message in result.stdout, result.stdout
