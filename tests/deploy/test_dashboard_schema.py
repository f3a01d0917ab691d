"""The dashboards against Grafana's schema, as far as it can be checked without a Grafana server.

``grafana-foundation-sdk`` holds Python classes generated from Grafana's own schema (the
dashboard, each panel plugin's options and field config, the Prometheus query), one attribute
per field with its type. Each dashboard is read into them (with the panel plugins registered,
so a time series' ``custom`` field config is read as the time series' own) and written back:
a key the schema does not know is dropped on the way, and the test names it. Then every value
read is checked against its field's type: enumerations (``thresholdsStyle.mode``,
``legend.placement``, ...), literals, numbers, strings and booleans.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from collections.abc import Iterator
from typing import Any

import pytest
from grafana_foundation_sdk.cog import plugins
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import Dashboard

from monitor.config import settings_from_dict
from monitor.outputs.dashboards import render_dashboard
from tests.monitor.test_tasks import MODELS, _settings

plugins.register_default_plugins()

#: Keys Grafana itself writes that the schema does not model: a query variable's ``definition``
#: (the query as text, saved by Grafana's editor), the ``id`` of a dashboard not yet saved, and the
#: Prometheus data source's own annotation fields (the schema's annotation query is left open for
#: each data source's fields; these are what Grafana's Prometheus annotation editor saves).
KNOWN_OUTSIDE_THE_SCHEMA = {
    ".templating.list[].definition",
    ".id",
    *(
        f".annotations.list[].{key}"
        for key in ("step", "tagKeys", "textFormat", "titleFormat", "useValueForTime")
    ),
}


def dropped_keys(ours: Any, back: Any, path: str = "") -> Iterator[str]:
    """Paths (list indexes as ``[]``) of the keys of ``ours`` missing from ``back``."""
    if isinstance(ours, dict) and isinstance(back, dict):
        for key, value in ours.items():
            if key not in back:
                yield f"{path}.{key}"
            else:
                yield from dropped_keys(value, back[key], f"{path}.{key}")
    elif isinstance(ours, list) and isinstance(back, list):
        for mine, theirs in zip(ours, back, strict=True):
            yield from dropped_keys(mine, theirs, f"{path}[]")


def type_errors(obj: Any, path: str = "") -> Iterator[str]:
    """Values of the schema objects that do not fit their field's declared type."""
    if isinstance(obj, list):
        for item in obj:
            yield from type_errors(item, f"{path}[]")
        return
    if not hasattr(obj, "__init__") or type(obj).__module__.split(".")[0] != "grafana_foundation_sdk":
        return
    hints = typing.get_type_hints(type(obj))
    for name, hint in hints.items():
        value = getattr(obj, name, None)
        if value is not None and not fits(value, hint):
            yield f"{path}.{name}: {value!r} is not {hint}"
        yield from type_errors(value, f"{path}.{name}")


def fits(value: Any, hint: Any) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is typing.Any or hint is object:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if origin is list:
        return isinstance(value, list) and all(fits(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if isinstance(value, dict) and isinstance(hint, type) and hasattr(hint, "from_json"):
        # read as it is (a panel's transformations): check it as the schema class it should be
        return not list(type_errors(hint.from_json(value)))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return value in {m.value for m in hint} or isinstance(value, hint)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True  # a type the walk does not know (a variant): its fields are walked on their own


def schema_problems(dashboard: dict[str, Any]) -> list[str]:
    read = Dashboard.from_json(json.loads(json.dumps(dashboard)))
    back = json.loads(json.dumps(read, cls=JSONEncoder))
    dropped = set(dropped_keys(dashboard, back)) - KNOWN_OUTSIDE_THE_SCHEMA
    problems = sorted(f"not in the schema: {p}" for p in dropped) + sorted(set(type_errors(read)))
    overridden = _overrides_as_defaults(dashboard)
    if overridden != dashboard:
        problems += [f"override {p}" for p in schema_problems(overridden)]
    return problems


def _overrides_as_defaults(dashboard: dict[str, Any]) -> dict[str, Any]:
    """A dashboard of one panel per override property, the property set as the panel's default
    (``custom.fillBelowTo`` as ``fieldConfig.defaults.custom.fillBelowTo``): the schema types
    defaults, not the free-form ``{id, value}`` pairs of overrides."""

    def leaves(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for panel in panels:
            yield panel
            yield from leaves(panel.get("panels", []))

    panels = []
    for panel in leaves(dashboard["panels"]):
        for o in panel.get("fieldConfig", {}).get("overrides", []):
            for prop in o["properties"]:
                path = prop["id"].split(".")
                defaults: dict[str, Any] = {}
                node = defaults
                for key in path[:-1]:
                    node = node.setdefault(key, {})
                node[path[-1]] = prop["value"]
                panels.append({"type": panel["type"], "fieldConfig": {"defaults": defaults, "overrides": []}})
    return {"panels": panels} if panels else dashboard


@pytest.mark.parametrize("name", ["shipped", *MODELS])
def test_dashboards_fit_grafanas_schema(name: str) -> None:
    dashboard = render_dashboard() if name == "shipped" else render_dashboard(_settings(name).models[0])
    assert schema_problems(dashboard) == []


def test_the_check_finds_unknown_keys_and_bad_values() -> None:
    settings = settings_from_dict(
        {
            "models": [
                {
                    "name": "m",
                    "source": {"kind": "memory", "name": "m"},
                    "metrics": ["disparate_impact"],
                    "groups": [{"attribute": "a", "kind": "indicator", "columns": ["g"]}],
                }
            ]
        },
        environ={},
    )
    dashboard = render_dashboard(settings.models[0])
    panel = next(p for p in dashboard["panels"] if p["title"] == "disparate_impact: $group")
    custom = panel["fieldConfig"]["defaults"]["custom"]
    custom["fillBelow"] = "CI low"  # misspelt fillBelowTo
    custom["thresholdsStyle"]["mode"] = "area+line"  # the schema's value is line+area
    custom["lineWidth"] = "1"
    panel["options"]["legend"]["placement"] = "top"
    panel["repeatDirection"] = "horizontal"
    band = next(o for o in panel["fieldConfig"]["overrides"] if o["matcher"]["options"] == "C")
    band["properties"].append({"id": "custom.fillBellowTo", "value": "CI low"})
    problems = "\n".join(schema_problems(dashboard))
    assert "not in the schema: .panels[].fieldConfig.defaults.custom.fillBelow" in problems
    assert "override not in the schema: .panels[].fieldConfig.defaults.custom.fillBellowTo" in problems
    for field, value in (
        ("mode", "'area+line'"),
        ("line_width", "'1'"),
        ("placement", "'top'"),
        ("repeat_direction", "'horizontal'"),
    ):
        assert f".{field}: {value} is not" in problems, problems
    assert len(problems.splitlines()) == 6, problems
