"""The metric registry: every family's specs, gathered in one place; one source of truth for names.

The service's config, the JSON output, the Prometheus family names, the generated alerting
rules and the docs page all read their metric facts from :data:`REGISTRY`. Like
scikit-learn's ``_scorer.py``, this module imports the families and aggregates what they
declare; no metric code imports it.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from metrics_core import binary, clustering, multiclass, recommender, regression, text
from metrics_core.core.spec import SCORE_TABLE_FAMILIES, FairRange, MetricSpec

__all__ = [
    "BINARY_FAMILIES",
    "REGISTRY",
    "get_metric",
    "metric_names",
    "registry_as_dicts",
    "resolve_fair_range",
]

#: Families evaluated from the score table by :func:`metrics_core.evaluate`.
BINARY_FAMILIES = SCORE_TABLE_FAMILIES

_METRICS: list[MetricSpec] = [
    *binary.SPECS,
    *multiclass.SPECS,
    *regression.SPECS,
    *recommender.SPECS,
    *clustering.SPECS,
    *text.SPECS,
]


def _unique(names: Iterable[str], what: str) -> None:
    """Refuse a name given twice, naming every duplicate (prometheus_client's registry does the same)."""
    duplicates = sorted(name for name, count in Counter(names).items() if count > 1)
    if duplicates:
        raise ValueError(f"duplicated {what} in the metric registry: {', '.join(duplicates)}")


_unique((m.name for m in _METRICS), "metric names")  # a family reusing a name would shadow a metric
_unique([*(m.name for m in _METRICS), *(a for m in _METRICS for a in m.aliases)], "names or aliases")

#: Every metric by name.
REGISTRY: dict[str, MetricSpec] = {m.name: m for m in _METRICS}
_ALIASES: dict[str, str] = {alias: m.name for m in _METRICS for alias in m.aliases}


def get_metric(name: str) -> MetricSpec:
    """The spec of ``name`` (aliases such as ``adverse_impact_ratio`` accepted).

    An unknown name is refused with the closest known one, not a list of every metric:

    >>> get_metric("disparate_impcat")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown metric 'disparate_impcat' (did you mean 'disparate_impact'?); metric_names() lists ...
    """
    canonical = _ALIASES.get(name, name)
    try:
        return REGISTRY[canonical]
    except KeyError:
        close = difflib.get_close_matches(str(name), [*REGISTRY, *_ALIASES], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"unknown metric {name!r}{hint}; metric_names() lists the {len(REGISTRY)} known metrics "
            "(`fairwatch metrics` describes them)"
        ) from None


def metric_names(*, level: str | None = None, family: str | None = None) -> list[str]:
    return [
        m.name
        for m in _METRICS
        if (level is None or m.level == level) and (family is None or m.family == family)
    ]


def resolve_fair_range(
    name: str, overrides: Mapping[str, Iterable[float | None]] | None = None
) -> FairRange | None:
    """The fair range of ``name``: a configured override (absolute) or the default."""
    spec = get_metric(name)
    # override keys may be aliases (``air``); an unknown key raises, naming it
    canonical = {get_metric(k).name: v for k, v in (overrides or {}).items()}
    if spec.name in canonical:
        lo, hi = tuple(canonical[spec.name])
        return FairRange(lo, hi)
    return spec.fair_range


def registry_as_dicts() -> list[dict[str, Any]]:
    """The registry as plain JSON-ready dicts (``fairwatch metrics --format json``)."""
    out = []
    for m in _METRICS:
        fr = m.fair_range
        out.append(
            {
                "name": m.name,
                "family": m.family,
                "level": m.level,
                "requires": sorted(m.requires),
                "ideal": m.ideal,
                "fair_min": None if fr is None else fr.min,
                "fair_max": None if fr is None else fr.max,
                "fair_range_relative_to": None if fr is None else fr.relative_to,
                "fair_range": "informational" if fr is None else fr.describe(),
                "source": m.source,
                "interval": m.interval,
                "meaning": m.meaning,
                "formula": m.formula,
                "aliases": list(m.aliases),
            }
        )
    return out
