"""Null streams: a fair model's windows must not page.

Every group's scores and labels come from the same distribution as everyone else's, so every
alerting metric's true value is its ideal. At the default settings (95% intervals,
``min_samples`` 100, no multiplicity adjustment) a violation is a false alarm; the per-value
rate must be indistinguishable from 0. ``docs/alerts.md`` reports the same simulation at scale
(``benchmarks/calibration.py``).
"""

from __future__ import annotations

import numpy as np

import metrics_core as mc

SHARES = {"g1": 0.01, "g2": 0.02, "g3": 0.03, "g5": 0.05, "g8": 0.08, "g12": 0.12, "g20": 0.20}


def _fair_window(rng: np.random.Generator, n: int) -> tuple[mc.ScoreTable, list[mc.Comparison]]:
    y = (rng.random(n) < 0.15).astype(float)
    score = np.round(np.clip(rng.normal(0.25 + 0.4 * y, 0.18), 0, 1), 3)  # same for every group
    columns = {g: (rng.random(n) < share).astype(float) for g, share in SHARES.items()}  # overlapping
    race = rng.choice(np.array(["a", "b", "c"], dtype=object), n, p=[0.6, 0.3, 0.1])
    attrs = [
        mc.indicator_attribute("identity", columns),
        mc.categorical_attribute("race", race, reference="a"),
    ]
    return mc.table_for(score, y, attrs), [c for a in attrs for c in a.comparisons]


def test_a_fair_model_does_not_page() -> None:
    rng = np.random.default_rng(11)
    windows, judged, violations, windows_with_a_violation = 40, 0, 0, 0
    by_metric: dict[str, int] = {}
    for _ in range(windows):
        table, comparisons = _fair_window(rng, 20_000)
        report = mc.evaluate(table, comparisons)
        alerting = [v for v in report.values if np.isfinite(v.fair_min) or np.isfinite(v.fair_max)]
        judged += sum(v.state != "insufficient_data" for v in alerting)
        bad = [v for v in alerting if v.state == "violation"]
        violations += len(bad)
        windows_with_a_violation += bool(bad)
        for v in bad:
            by_metric[v.metric] = by_metric.get(v.metric, 0) + 1
    alerting_metrics = {
        s.name
        for s in mc.REGISTRY.values()
        if s.family in ("classification", "ranking") and not s.informational
    }
    assert judged > 40 * 9 * (len(alerting_metrics) - 8)  # most values were judged, not gated
    assert violations / judged <= 1e-3, by_metric
    assert windows_with_a_violation / windows <= 0.05, by_metric
