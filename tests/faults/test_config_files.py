"""Hostile config files get one clear error naming the file and line, fast: alias bombs, recursive
aliases, oversized files, broken YAML."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from monitor.config import load_settings
from monitor.core.errors import ConfigError


def _load(tmp_path: Path, text: str) -> ConfigError:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    t0 = time.monotonic()
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert time.monotonic() - t0 < 5  # refused, not expanded
    assert str(path) in str(info.value)
    return info.value


def test_an_alias_bomb_is_refused(tmp_path: Path) -> None:
    """Eleven levels of nine aliases each, 100 aliases in all: 9**11 leaves if anything walked it."""
    text = "\n".join(
        ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
        + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 12)]
        + ["models: *l11"]
    )
    assert "expand to more than 100,000 values" in str(_load(tmp_path, text))


def test_shared_blocks_still_load(tmp_path: Path) -> None:
    """Anchors and aliases used as intended (one block shared by several models) are fine."""
    path = tmp_path / "ok.yaml"
    first = (
        "  - name: m0\n"
        "    source: &src {kind: sql, url: 'sqlite:///p.db', table: predictions}\n"
        "    groups: &groups [{attribute: identity, kind: indicator, columns: [a, b]}]\n"
        "    windows: &windows [{name: 1h, length: 1h}]\n"
    )
    rest = "".join(
        f"  - {{name: m{i}, source: *src, groups: *groups, windows: *windows}}\n" for i in range(1, 50)
    )
    path.write_text(f"models:\n{first}{rest}")
    settings = load_settings(path)
    assert [m.name for m in settings.models] == [f"m{i}" for i in range(50)]


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    error = _load(tmp_path, "models: &m\n  - name: x\n    windows: *m\n")
    assert "refers to the block that contains it" in str(error)


def test_an_oversized_file_is_refused(tmp_path: Path) -> None:
    assert "the limit is" in str(_load(tmp_path, "# padding\n" * 200_000))


def test_broken_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    error = _load(tmp_path, "models:\n  - name: x\n    windows: [1h\n")
    assert "<unicode string>" not in str(error) and "line 4" in str(error)
