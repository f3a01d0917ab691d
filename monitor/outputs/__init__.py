"""Renderers: evaluations and snapshots in, text, bytes, dicts and HTML out - no threads, no printing.

``prometheus/`` (the exported series, alerting rules and backfill), ``dashboards/`` (Grafana),
``html/`` (the live view's blocks and the report), :mod:`~monitor.outputs.json` and
:mod:`~monitor.outputs.api` (JSON rows and payloads), :mod:`~monitor.outputs.power` (how much data
an alert needs) and :mod:`~monitor.outputs.metrics_doc` (the metrics reference page).
"""
