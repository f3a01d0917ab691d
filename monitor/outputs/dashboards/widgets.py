"""Building blocks of the dashboards: label filters, queries, thresholds, panels, variables and layout.

Panels are plain JSON-ready dicts (Grafana 10/11, ``schemaVersion`` 39); every panel, query and
variable reads the ``datasource`` template variable. A model's own dashboard fixes the ``model``
variable to a hidden constant, so the queries read the same either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from metrics_core import FairRange
from monitor.outputs.prometheus import series
from monitor.outputs.prometheus.series import FAMILY_PREFIX, STATE_CODES, Family

UID = "fairwatch-overview"
#: The data source of every panel, query and variable: the ``datasource`` template variable.
DATASOURCE: dict[str, str] = {"type": "prometheus", "uid": "${datasource}"}

Panel = dict[str, Any]
Query = tuple[str, str]  # (PromQL, legend)

# Label filters by template variable, per family shape (no variable picks a reference).
GROUP = series.GROUP_LABELS
COMPANION = (*GROUP, "metric")
ATTRIBUTE = series.ATTRIBUTE_LABELS
WINDOW = series.WINDOW_LABELS
MODEL = series.MODEL_LABELS
RATE = "[$__rate_interval]"

STATE_COLORS = {"ok": "green", "inconclusive": "yellow", "violation": "red", "insufficient_data": "#8e8e8e"}
STATE_MAPPINGS = [
    {
        "type": "value",
        "options": {
            str(code): {"text": state.replace("_", " "), "color": STATE_COLORS[state], "index": code}
            for state, code in STATE_CODES.items()
        },
    }
]
DOTTED = {"fill": "dot", "dash": [2, 4]}
DASHED = {"fill": "dash", "dash": [10, 10]}

# --- building blocks ------------------------------------------------------------------------


def matchers(labels: Sequence[str] = GROUP, **fixed: str) -> str:
    """``k="v",label=~"$label",...``: fixed labels, then one filter per template variable."""
    return ",".join([f'{k}="{v}"' for k, v in fixed.items()] + [f'{x}=~"${x}"' for x in labels])


def sel(family: Family | str, labels: Sequence[str] = GROUP, **fixed: str) -> str:
    """``fairwatch_<family>{...}`` (a family of the schema, or a metric's name) filtered by the
    template variables of ``labels``."""
    name = family.name if isinstance(family, Family) else FAMILY_PREFIX + family
    return f"{name}{{{matchers(labels, **fixed)}}}"


def target(ref: str, expr: str, legend: str = "__auto", *, table: bool = False) -> dict[str, Any]:
    query: dict[str, Any] = {"refId": ref, "datasource": DATASOURCE, "editorMode": "code", "expr": expr}
    query |= {"legendFormat": legend, "range": not table, "instant": table}
    return query | {"format": "table"} if table else query


def fixed_color(color: str) -> dict[str, str]:
    return {"mode": "fixed", "fixedColor": color}


def thresholds(fair_range: FairRange | None = None, *steps: tuple[str, float]) -> dict[str, Any]:
    """Absolute thresholds: green inside ``fair_range`` and red outside, or green then ``steps``."""
    if fair_range is not None:
        steps = tuple(
            (c, v) for c, v in (("green", fair_range.min), ("red", fair_range.max)) if v is not None
        )
    base = "red" if fair_range is not None and fair_range.min is not None else "green"
    return {
        "mode": "absolute",
        "steps": [{"color": base, "value": None}, *({"color": c, "value": v} for c, v in steps)],
    }


def override(matcher: str, options: str, **properties: Any) -> dict[str, Any]:
    """A field override; ``custom__lineStyle`` stands for the property ``custom.lineStyle``."""
    return {
        "matcher": {"id": matcher, "options": options},
        "properties": [{"id": key.replace("__", "."), "value": value} for key, value in properties.items()],
    }


def panel(
    kind: str,
    title: str,
    description: str,
    targets: list[dict[str, Any]],
    *,
    unit: str,
    size: tuple[int, int] = (12, 8),
    defaults: dict[str, Any] | None = None,
    overrides: list[dict[str, Any]] | None = None,
    options: dict[str, Any] | None = None,
    transformations: list[dict[str, Any]] | None = None,
    per_group: int = 0,
) -> Panel:
    """A panel with its size as ``gridPos``; :func:`layout` places it and numbers it.

    ``per_group``: repeated for each selected group, that many to a line (Grafana sizes the
    copies; the panel takes a whole line of the layout).
    """
    repeat = {"repeat": "group", "repeatDirection": "h", "maxPerRow": per_group} if per_group else {}
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "gridPos": {"h": size[1], "w": 24 if per_group else size[0], "x": 0, "y": 0},
        **repeat,
        "fieldConfig": {
            "defaults": {"unit": unit, "thresholds": thresholds(), **(defaults or {})},
            "overrides": overrides or [],
        },
        "options": options or {},
        "targets": targets,
        **({"transformations": transformations} if transformations else {}),
    }


def timeseries(
    title: str,
    unit: str,
    description: str,
    *queries: Query,
    size: tuple[int, int] = (12, 8),
    bars: bool = False,
    dashed: str = "",
    custom: dict[str, Any] | None = None,
    defaults: dict[str, Any] | None = None,
    overrides: Sequence[dict[str, Any]] = (),
    per_group: int = 0,
) -> Panel:
    """A time series of ``queries`` (refs A, B, ...); the refs in ``dashed`` are drawn dashed."""
    style: dict[str, Any] = {
        "drawStyle": "bars" if bars else "line",
        "lineWidth": 1,
        "fillOpacity": 80 if bars else 0,
    }
    style |= {"showPoints": "never", "spanNulls": False, "thresholdsStyle": {"mode": "off"}, **(custom or {})}
    legend = {"displayMode": "table", "placement": "bottom", "showLegend": True, "calcs": ["lastNotNull"]}
    return panel(
        "timeseries",
        title,
        description,
        [target(chr(ord("A") + i), expr, legend) for i, (expr, legend) in enumerate(queries)],
        unit=unit,
        size=size,
        defaults={"color": {"mode": "palette-classic"}, "custom": style, **(defaults or {})},
        overrides=[
            *(override("byFrameRefID", ref, custom__lineStyle=DASHED) for ref in dashed),
            *overrides,
        ],
        options={"legend": legend, "tooltip": {"mode": "multi", "sort": "desc"}},
        per_group=per_group,
    )


def stat(title: str, description: str, expr: str, color: str) -> Panel:
    """A count, green at zero and ``color`` from one upwards."""
    options = {
        "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
        "colorMode": "background",
        "graphMode": "area",
        "textMode": "auto",
    }
    steps = thresholds(None, *([(color, 1)] if color != "green" else []))
    defaults = {"thresholds": steps, "color": {"mode": "thresholds"}}
    return panel(
        "stat",
        title,
        description,
        [target("A", expr)],
        unit="short",
        size=(4, 4),
        defaults=defaults,
        options=options,
    )


def table(title: str, description: str, targets: list[dict[str, Any]], **kwargs: Any) -> Panel:
    options = {"showHeader": True, "cellHeight": "sm", **kwargs.pop("options", {})}
    return panel("table", title, description, targets, unit="none", options=options, **kwargs)


# --- variables and layout -------------------------------------------------------------------


def variables(model: str | None = None) -> list[dict[str, Any]]:
    """``datasource``, then model and window (single values: short legends), attribute, group, metric.

    With ``model``, the ``model`` variable is that name, a hidden constant.
    """
    datasource: dict[str, Any] = {
        "name": "datasource",
        "label": "Data source",
        "type": "datasource",
        "query": "prometheus",
    }
    datasource |= {"current": {}, "hide": 0, "includeAll": False, "multi": False, "options": []}
    datasource |= {"refresh": 1, "regex": "", "skipUrlSync": False}
    if model is None:
        model_variable = _query_variable("model", "Model", f"label_values({series.EVALUATIONS.name}, model)")
    else:
        only = {"text": model, "value": model}
        model_variable = {"name": "model", "label": "Model", "type": "constant", "query": model, "hide": 2}
        model_variable |= {"current": only, "options": [only | {"selected": True}], "skipUrlSync": False}
    return [
        datasource,
        model_variable,
        _query_variable("window", "Window", f"label_values({sel(series.WINDOW_ROWS, MODEL)}, window)"),
        _query_variable(
            "attribute", "Attribute", f"label_values({sel(series.GROUP_ROWS, WINDOW)}, attribute)", True
        ),
        _query_variable("group", "Group", f"label_values({sel(series.GROUP_ROWS, ATTRIBUTE)}, group)", True),
        _query_variable("metric", "Metric", f"label_values({sel(series.METRIC_STATE, MODEL)}, metric)", True),
    ]


def _query_variable(name: str, label: str, query: str, multi: bool = False) -> dict[str, Any]:
    variable: dict[str, Any] = {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "definition": query,
    }
    variable |= {"query": {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"}}
    variable |= {"current": {}, "hide": 0, "includeAll": multi, "multi": multi, "options": []}
    variable |= {"refresh": 2, "regex": "", "skipUrlSync": False, "sort": 1}
    return variable | ({"allValue": ".*"} if multi else {})


def layout(sections: Iterable[tuple[str, bool, list[Panel]]]) -> list[Panel]:
    """Rows and panels numbered in order and placed left to right, top to bottom (24 columns).

    A collapsed row holds its panels (placed as if expanded, as Grafana saves them); an
    expanded row is followed by its panels.
    """
    out: list[Panel] = []
    next_id, y = 1, 0
    for title, collapsed, panels in sections:
        row: Panel = {"type": "row", "id": next_id, "title": title, "collapsed": collapsed, "panels": []}
        row["gridPos"] = {"h": 1, "w": 24, "x": 0, "y": y}
        out.append(row)
        next_id, y = next_id + 1, y + 1
        x, line_y, line_h = 0, y, 0
        for placed in panels:
            w, h = placed["gridPos"]["w"], placed["gridPos"]["h"]
            if x + w > 24:
                x, line_y, line_h = 0, line_y + line_h, 0
            placed["id"], placed["gridPos"] = next_id, {"h": h, "w": w, "x": x, "y": line_y}
            next_id, x, line_h = next_id + 1, x + w, max(line_h, h)
            (row["panels"] if collapsed else out).append(placed)
        if not collapsed:
            y = line_y + line_h
    return out
