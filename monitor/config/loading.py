"""Reading the configuration file: YAML, ``${ENV}`` interpolation, errors with the file and line.

Strings may hold ``${VAR}`` or ``${VAR:-default}``; they are replaced from the environment
before validation, so passwords live in the environment (a Kubernetes Secret), never in the
file. Relative paths (``sqlite:///x.db``, ``duckdb:///x.duckdb``, file globs, text option files,
``panes.directory``, ``server.history.directory``, ``server.web_config_file``) are relative to the config file.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from monitor.config.keys import keys_at
from monitor.config.schema import Settings, SourceConfig
from monitor.core.errors import ConfigError
from monitor.core.suggest import did_you_mean

#: A config larger than this is refused (the biggest real ones are a few KB).
MAX_CONFIG_BYTES = 1 << 20
#: Nodes a config may hold once its YAML aliases (``*name``) are expanded: shared blocks fit
#: easily; an alias bomb (each level repeating the previous one) does not.
MAX_YAML_NODES = 100_000

__all__ = ["load_settings", "settings_from_dict", "with_web_config"]


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# a path that is a URI (s3a://bucket/logs, hdfs://nn/logs, file:///x): a spark source's, never a local file's
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _interpolate(value: Any, path: tuple[str | int, ...], environ: dict[str, str]) -> Any:
    if isinstance(value, str):

        def repl(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            if name in environ:
                return environ[name]
            if default is not None:
                return default
            raise ConfigError(f"{_dotted(path)}: environment variable {name} is not set")

        return _ENV.sub(repl, value)
    if isinstance(value, dict):
        return {k: _interpolate(v, (*path, k), environ) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, (*path, i), environ) for i, v in enumerate(value)]
    return value


def _dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _line_of(node: yaml.Node | None, path: tuple[str | int, ...], *, key: bool = False) -> int | None:
    """1-based line of the deepest node of ``path`` found in the composed YAML (with ``key``: of the
    last key itself, not of its value, which may start on the next line)."""
    line = None if node is None else node.start_mark.line + 1
    for i, part in enumerate(path):
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if getattr(k, "value", None) == part), None)
            if key and pair is not None and i == len(path) - 1:
                return int(pair[0].start_mark.line) + 1
            nxt = None if pair is None else pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            nxt = node.value[part]
        else:
            nxt = None
        if nxt is None:
            break
        node, line = nxt, nxt.start_mark.line + 1
    return line


def settings_from_dict(
    data: Any, *, environ: dict[str, str] | None = None, _node: yaml.Node | None = None, _file: str = ""
) -> Settings:
    """Validate a parsed config; raise :class:`ConfigError` naming the first bad key."""
    if not isinstance(data, dict):
        raise ConfigError(f"{_file or 'config'}: the top level must be a mapping with a `models` list")
    data = _interpolate(data, (), dict(os.environ) if environ is None else environ)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            path = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            line = _line_of(_node, path, key=err["type"] == "extra_forbidden")
            where = f"{_file}:{line}: " if _file and line else (f"line {line}: " if line else "")
            lines.append(f"{where}{_dotted(path)}: {_message(err, path)}")
        raise ConfigError("invalid config:\n  " + "\n  ".join(lines)) from None


def _message(err: ErrorDetails, path: tuple[str | int, ...]) -> str:
    """pydantic's message, said as a config's reader needs it: an unknown key with the key it
    most likely meant, a missing key as missing."""
    if err["type"] == "extra_forbidden" and path:
        known = keys_at(Settings, path[:-1])
        key = str(path[-1])
        if known:
            hint = did_you_mean(key, known) or f"; the keys here are: {', '.join(known)}"
            return f"unknown key `{key}`{hint}"
        return f"unknown key `{key}`"
    if err["type"] == "missing":
        return "a required key is missing"
    return err["msg"].removeprefix("Value error, ")


def load_settings(path: str | Path, *, environ: dict[str, str] | None = None) -> Settings:
    """Read, interpolate and validate a YAML config file."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{p}: the config file is {size:,} bytes; the limit is {MAX_CONFIG_BYTES:,}")
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {p}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:  # a config saved as Latin-1 or UTF-16, say
        before = exc.object[: exc.start]
        line, column = before.count(b"\n") + 1, exc.start - before.rfind(b"\n")
        raise ConfigError(
            f"{p}:{line}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at line {line}, column {column}): "
            "save the config as UTF-8"
        ) from None
    try:
        node = yaml.compose(_named_stream(text, p), Loader=yaml.SafeLoader)
        _check_expansion(node, p)
        data = yaml.safe_load(_named_stream(text, p))
    except yaml.YAMLError as exc:
        raise ConfigError(_yaml_error(exc, p, text)) from exc
    settings = settings_from_dict(data, environ=environ, _node=node, _file=str(p))
    return _resolve_relative_paths(settings, p.parent)


def _yaml_error(exc: yaml.YAMLError, path: Path, text: str) -> str:
    """``file:line: not valid YAML: problem``, the offending line and a caret under the column."""
    mark = getattr(exc, "problem_mark", None)
    if not isinstance(exc, yaml.MarkedYAMLError) or mark is None:
        return f"{path}: not valid YAML: {exc}"
    line, column = mark.line + 1, mark.column + 1
    message = f"{path}:{line}: not valid YAML (line {line}, column {column}): {exc.problem}"
    context = exc.context_mark
    if exc.context and context is not None and context.line != mark.line:
        message += f", {exc.context} at line {context.line + 1}"
    lines = text.splitlines()
    if mark.line < len(lines):
        message += f"\n    {lines[mark.line]}\n    {' ' * mark.column}^"
    return message


def _named_stream(text: str, path: Path) -> io.StringIO:
    """A stream whose name PyYAML's error marks show: the file, not ``<unicode string>``."""
    stream = io.StringIO(text)
    stream.name = str(path)
    return stream


def _check_expansion(root: yaml.Node | None, path: Path) -> None:
    """Refuse a config whose aliases expand beyond :data:`MAX_YAML_NODES` nodes, or that holds an
    alias inside its own anchor. The composed graph shares aliased nodes, so it is small; what
    reads the config afterwards (interpolation, validation) walks the expansion, which for an
    alias bomb grows exponentially and for a recursive alias never ends."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def expanded(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            line = node.start_mark.line + 1 if node.start_mark else 0
            raise ConfigError(f"{path}:{line}: a YAML alias refers to the block that contains it")
        open_nodes.add(key)
        if isinstance(node, yaml.SequenceNode):
            children: list[yaml.Node] = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        total = 1
        for child in children:
            total += expanded(child)
            if total > MAX_YAML_NODES:
                raise ConfigError(
                    f"{path}: its YAML aliases expand to more than {MAX_YAML_NODES:,} values; "
                    "write the shared blocks out or use fewer levels of aliases"
                )
        open_nodes.discard(key)
        sizes[key] = total
        return total

    if root is not None:
        expanded(root)


def _resolve_relative_paths(settings: Settings, base: Path) -> Settings:
    """``sqlite:///x.db``, ``duckdb:///x.duckdb``, file globs, ``panes.directory`` and the store
    directories of ``publish.url`` and published sources are relative to the config file, as users
    expect."""

    def database_file(url: str | None) -> str | None:
        """``url`` with its relative database file made relative to the config file (else None)."""
        for scheme in ("sqlite:///", "duckdb:///"):
            rel = (url or "").removeprefix(scheme)
            if rel != url and rel and rel != ":memory:" and not rel.startswith(("/", "file:", "?", "md:")):
                return scheme + str((base / rel).resolve())
        return None

    def fix(src: SourceConfig) -> SourceConfig:
        update: dict[str, Any] = {}
        if (resolved := database_file(src.url)) is not None:
            update["url"] = resolved
        if src.kind == "published" and src.url and not _URI.match(src.url) and not os.path.isabs(src.url):
            update["url"] = str(base / src.url)  # a store directory
        path = src.path if src.path and not _URI.match(src.path) else None  # s3a://, hdfs://: as written
        if path and not os.path.isabs(path):
            update["path"] = str(base / path)
        return src.model_copy(update=update) if update else src

    models = []
    for m in settings.models:
        labels = m.labels.model_copy(update={"source": fix(m.labels.source)}) if m.labels else None
        options = m.options.relative_to(base)
        panes = m.panes
        if panes.directory and not os.path.isabs(panes.directory):
            panes = panes.model_copy(update={"directory": str(base / panes.directory)})
        publish = m.publish
        if publish and not _URI.match(publish.url) and not os.path.isabs(publish.url):
            publish = publish.model_copy(update={"url": str(base / publish.url)})
        elif publish and (resolved := database_file(publish.url)) is not None:  # sqlite:///fleet.db
            publish = publish.model_copy(update={"url": resolved})
        update: dict[str, Any] = {"source": fix(m.source), "labels": labels, "options": options}
        update |= {"panes": panes, "publish": publish}
        models.append(m.model_copy(update=update))
    server = settings.server
    if server.web_config_file and not os.path.isabs(server.web_config_file):
        server = server.model_copy(update={"web_config_file": str(base / server.web_config_file)})
    if server.history.directory and not os.path.isabs(server.history.directory):
        history = server.history.model_copy(update={"directory": str(base / server.history.directory)})
        server = server.model_copy(update={"history": history})
    return settings.model_copy(update={"models": models, "server": server})


def with_web_config(settings: Settings, web_config_file: str | None) -> Settings:
    """``settings`` serving with ``--web.config.file`` (relative to the working directory), if given."""
    if web_config_file is None:
        return settings
    server = settings.server.model_copy(update={"web_config_file": os.path.abspath(web_config_file)})
    return settings.model_copy(update={"server": server})
