"""The configuration file: YAML, validated by pydantic, errors that name the key and line.

:mod:`~monitor.config.schema` holds the models (every key, its default and its checks);
:mod:`~monitor.config.loading` reads a file into them: ``${VAR}`` / ``${VAR:-default}``
replaced from the environment (passwords live there, never in the file), errors reported
with the file and line of the offending key, relative paths made relative to the file.
See ``docs/configuration.md`` for every key.
"""

from monitor.config.loading import load_settings, settings_from_dict, with_web_config
from monitor.config.schema import (
    AlertmanagerConfig,
    AlertsConfig,
    ColumnsConfig,
    GroupConfig,
    HistoryConfig,
    LabelColumnsConfig,
    LabelsConfig,
    ModelConfig,
    NowcastConfig,
    PanesConfig,
    PublishConfig,
    ServerConfig,
    Settings,
    SourceConfig,
    WebhookConfig,
    WindowConfig,
    parse_duration,
    store_kind,
)

__all__ = [
    "AlertmanagerConfig",
    "AlertsConfig",
    "ColumnsConfig",
    "GroupConfig",
    "HistoryConfig",
    "LabelColumnsConfig",
    "LabelsConfig",
    "ModelConfig",
    "NowcastConfig",
    "PanesConfig",
    "PublishConfig",
    "ServerConfig",
    "Settings",
    "SourceConfig",
    "WebhookConfig",
    "WindowConfig",
    "load_settings",
    "parse_duration",
    "settings_from_dict",
    "store_kind",
    "with_web_config",
]
