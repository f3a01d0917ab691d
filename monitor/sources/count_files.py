"""Counted combinations in files: one Arrow IPC file per frame, its facts in the schema metadata.

Used for the sealed panes a service keeps on disk (:mod:`monitor.reading.pane_store`) and for the
panes replicas publish to a shared store (:mod:`monitor.sources.published`). Columns of a NumPy or
pandas dtype are written by pyarrow with pandas' own metadata; a column of Python objects (a
SQLite column holding text and numbers, a categorical column with missing values, a JSON Lines
value that is a list) as a dense union with one child per Python type, so each value comes back as
the same object type (lists and mappings through their JSON text). A file is written
to a temporary name in the same folder (``.<name>.<pid>.tmp``), then renamed over
(:func:`os.replace`): a reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from monitor.core.errors import ConfigError

__all__ = [
    "Unwritable",
    "decode_frame",
    "encode_frame",
    "folder_name",
    "frame_bytes",
    "is_partial",
    "read_frame",
    "writable_folder",
    "write_frame",
    "write_table",
]

_WRITE_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")  # counts shrink ~14x (a 24 h window: 41 -> 3 MB)

# A Python object column's value types, each a union child: (child name, Arrow type, to Arrow, back)
_OBJECT_TYPES: dict[type, tuple[str, pa.DataType, Any, Any]] = {
    float: ("float", pa.float64(), None, float),
    int: ("int", pa.int64(), None, int),
    str: ("str", pa.string(), None, str),
    bool: ("bool", pa.bool_(), None, bool),
    bytes: ("bytes", pa.binary(), None, bytes),
    Decimal: ("decimal", pa.string(), str, Decimal),  # as its exact text
    list: ("list", pa.string(), json.dumps, json.loads),  # JSON Lines values: as their JSON text
    dict: ("dict", pa.string(), json.dumps, json.loads),
    np.float64: ("float64", pa.float64(), None, np.float64),
    np.int64: ("int64", pa.int64(), None, np.int64),
}
_BY_NAME = {name: back for name, _t, _to, back in _OBJECT_TYPES.values()}
_PLAIN_NAME = re.compile(r"[a-z0-9_.:-]{1,100}")  # a folder under the name itself
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]")


class Unwritable(Exception):
    """A frame whose values have a type no file column holds."""


def encode_frame(frame: pd.DataFrame, key: bytes, meta: dict[str, Any]) -> pa.Table:
    """``frame`` as the Arrow table a counts file holds, ``meta`` (JSON) under the schema metadata
    ``key``. Raises :class:`Unwritable` for values of a type no file column holds."""
    table = _table(frame)
    described = {**meta, "columns": list(frame.columns), "objects": _object_columns(frame)}
    return table.replace_schema_metadata({**(table.schema.metadata or {}), key: json.dumps(described)})


def write_table(sink: Any, table: pa.Table) -> None:
    """An :func:`encode_frame` table as an Arrow IPC file (zstd) into ``sink`` (a pyarrow stream)."""
    with pa.ipc.new_file(sink, table.schema, options=_WRITE_OPTIONS) as writer:
        writer.write_table(table)


def frame_bytes(frame: pd.DataFrame, key: bytes, meta: dict[str, Any]) -> bytes:
    """``frame`` as the bytes of a counts file (for a store that keeps them elsewhere: a database)."""
    sink = pa.BufferOutputStream()
    write_table(sink, encode_frame(frame, key, meta))
    return bytes(sink.getvalue().to_pybytes())


def write_frame(path: Path, frame: pd.DataFrame, key: bytes, meta: dict[str, Any]) -> None:
    """``frame`` into the file ``path`` atomically, ``meta`` (JSON) under the schema metadata ``key``.
    Raises :class:`Unwritable` before touching the file, :class:`OSError` (the temporary file removed)."""
    table = encode_frame(frame, key, meta)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with pa.OSFile(str(temp), "wb") as sink:
            write_table(sink, table)
        os.replace(temp, path)
    except OSError:
        temp.unlink(missing_ok=True)
        raise


def read_frame(path: Path, key: bytes) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The frame a :func:`write_frame` file holds, and its metadata (any error of a damaged file or
    of a file without ``key`` propagates: the caller decides what an unreadable file means)."""
    with pa.OSFile(str(path)) as source:
        return decode_frame(source, key)


def decode_frame(source: Any, key: bytes) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The frame and metadata of a counts file's bytes (``source``: bytes or a pyarrow file)."""
    table = pa.ipc.open_file(pa.BufferReader(source) if isinstance(source, bytes) else source).read_all()
    meta: dict[str, Any] = json.loads((table.schema.metadata or {})[key])
    objects = set(meta["objects"])
    typed = table.drop_columns(list(objects)).to_pandas()
    frame = pd.DataFrame(
        {c: _objects(table.column(c)) if c in objects else typed[c] for c in meta["columns"]},
        index=pd.RangeIndex(table.num_rows),
    )
    return frame, meta


def folder_name(model: str) -> str:
    """The folder of ``model``: its name where that is safe as a name of its own on any file
    system, else the first 64 characters and ``~`` and a hash of the whole name.

    Names of capitals (``Tox`` and ``tox`` would share a folder where names are compared
    ignoring case), longer than 100 characters (a file name's limit is 255 bytes) or of dots
    only (``.``, ``..``) are hashed; ``~`` is no model name's character, so no hashed folder is
    another model's. The kept prefix is the name's characters that are safe in a file name (a
    name from the environment - a publisher's ``$HOSTNAME`` - may hold ``/``); ``_`` for the others."""
    if _PLAIN_NAME.fullmatch(model) and model.strip("."):
        return model
    prefix = _UNSAFE.sub("_", model[:64])
    return f"{prefix}~{hashlib.sha256(model.encode()).hexdigest()[:16]}"


def writable_folder(root: Path, key: str, what: str) -> Path:
    """``root``, made if missing and checked writable by writing a probe file into it; a
    :class:`~monitor.core.errors.ConfigError` naming ``key`` and ``what`` (``sealed panes``) if not."""
    probe = root / f".probe-{os.getpid()}.tmp"
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot write {what} into {root}: {exc.strerror or exc}") from None
    return root


def is_partial(name: str) -> bool:
    """Whether the file ``name`` is a write cut short (a temporary file of :func:`write_frame`)."""
    return name.startswith(".") and name.endswith(".tmp")


def _object_columns(frame: pd.DataFrame) -> list[str]:
    return [str(c) for c in frame.columns if frame[c].dtype == object]


def _table(frame: pd.DataFrame) -> pa.Table:
    """The frame as an Arrow table: typed columns by pyarrow, object columns as dense unions."""
    objects = [c for c in frame.columns if frame[c].dtype == object]
    typed = frame.drop(columns=objects)
    try:
        table = pa.Table.from_pandas(typed, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise Unwritable(str(exc)[:200]) from exc
    for column in objects:
        table = table.append_column(str(column), _union(frame[column].to_numpy()))
    return table


_TYPE_OF = np.frompyfunc(type, 1, 1)


def _union(values: np.ndarray) -> pa.Array:
    """Python objects as a dense union: one child per value type, each value's type and offset."""
    # each value's type, in a C loop (a generator over the values took ~12 ms per 20 k values)
    types, uniques = pd.factorize(_TYPE_OF(values) if len(values) else np.array([], dtype=object))
    kinds: dict[type, int] = {kind: code for code, kind in enumerate(uniques)}
    codes = types.astype(np.int8)
    offsets = np.zeros(len(values), dtype=np.int32)
    children: list[pa.Array] = []
    names: list[str] = []
    for kind, code in kinds.items():
        mask = codes == code
        if kind is type(None):
            child, name = pa.nulls(int(mask.sum())), "none"
        elif kind in _OBJECT_TYPES:
            name, arrow_type, to_arrow, _back = _OBJECT_TYPES[kind]
            picked = values[mask]
            try:
                child = pa.array([to_arrow(v) for v in picked] if to_arrow else list(picked), type=arrow_type)
            except (pa.ArrowException, OverflowError) as exc:
                raise Unwritable(f"{name} values: {str(exc)[:200]}") from exc
        else:
            raise Unwritable(f"values of type {kind.__name__}")
        offsets[mask] = np.arange(int(mask.sum()), dtype=np.int32)
        children.append(child)
        names.append(name)
    if not children:  # an empty frame
        children, names = [pa.nulls(0)], ["none"]
    return pa.UnionArray.from_dense(
        pa.array(codes, pa.int8()), pa.array(offsets, pa.int32()), children, names
    )


def _objects(column: pa.ChunkedArray) -> pd.Series:
    """A dense union column back as Python objects of their original types."""
    parts = [_union_values(chunk) for chunk in column.chunks]  # (unions cannot be concatenated)
    return pd.Series(np.concatenate(parts) if parts else np.empty(0, dtype=object), dtype=object)


def _union_values(union: pa.UnionArray) -> np.ndarray:
    codes = union.type_codes.to_numpy(zero_copy_only=False)
    offsets = union.offsets.to_numpy(zero_copy_only=False)
    out = np.empty(len(union), dtype=object)
    for code, field in enumerate(union.type):
        mask = codes == code
        if field.name == "none" or not mask.any():
            continue
        back = _BY_NAME[field.name]
        child = union.field(code).to_pylist()
        picked = offsets[mask]
        out[mask] = np.fromiter((back(child[i]) for i in picked), dtype=object, count=len(picked))
    return out
