"""The keys a config may hold at a place in it, read from the schema's pydantic models.

An unknown key is reported with the closest allowed one (``sourc`` -> ``source``); the
allowed keys at ``models[0].labels.columns`` are the fields of the model the schema puts
there, by the names a config spells them (``for``, not the attribute ``for_``).
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

__all__ = ["keys_at"]


def keys_at(root: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    """The keys of the mapping at ``path`` under ``root`` (empty when no model is there).

    >>> from monitor.config.schema import Settings
    >>> keys_at(Settings, ("models", 0, "labels"))
    ['source', 'join_on', 'columns']
    >>> keys_at(Settings, ("alerts",))[:2]
    ['for', 'keep_firing_for']
    """
    kind: Any = root
    for part in path:
        kind = _unwrap(kind)
        if isinstance(part, int):
            if get_origin(kind) not in (list, tuple):
                return []
            kind = get_args(kind)[0]
        elif _is_model(kind):
            fields = {f.alias or name: f for name, f in kind.model_fields.items()}
            if part not in fields:
                return []
            kind = fields[part].annotation
        elif get_origin(kind) is dict:
            kind = get_args(kind)[1]
        else:
            return []
    kind = _unwrap(kind)
    if not _is_model(kind):
        return []
    return [f.alias or name for name, f in kind.model_fields.items()]


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, BaseModel)


def _unwrap(kind: Any) -> Any:
    """``X`` of ``Annotated[X, ...]`` and of ``X | None``."""
    while True:
        origin = get_origin(kind)
        if origin is Annotated:
            kind = get_args(kind)[0]
        elif origin in (Union, types.UnionType):
            options = [a for a in get_args(kind) if a is not type(None)]
            if len(options) != 1:
                return kind
            kind = options[0]
        else:
            return kind
