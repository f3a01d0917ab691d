"""Which metrics an evaluation computes, and the fair ranges it judges them by.

Every family's ``evaluate`` calls :func:`select_specs` with its own specs and
:func:`fair_ranges_of` with the caller's overrides; the evaluators below then receive the
specs and their ranges already resolved.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from metrics_core.core.spec import FairRange, MetricSpec

__all__ = ["FairRangeOverrides", "fair_ranges_of", "select_specs"]

#: Absolute ``(min, max)`` overrides of default fair ranges, by metric name or alias (``None``: open end).
FairRangeOverrides = Mapping[str, Iterable[float | None]]


def _by_name(specs: Sequence[MetricSpec]) -> dict[str, MetricSpec]:
    out = {s.name: s for s in specs}
    out.update({alias: s for s in specs for alias in s.aliases})
    return out


def select_specs(
    specs: Sequence[MetricSpec],
    metrics: Iterable[str] | None,
    *,
    available: Collection[str],
    family: str,
) -> list[MetricSpec]:
    """The specs an evaluation computes, in the order asked for, each once.

    ``metrics=None`` selects every spec whose inputs are all ``available``. Named metrics
    (aliases accepted) must belong to ``specs`` and have their inputs; a model-level
    summary brings the group metrics it ``needs`` along (they are computed and reported too).

    >>> di = MetricSpec(name="disparate_impact", family="classification", requires=frozenset({"y_pred"}),
    ...                 ideal=1.0, fair_range=FairRange(0.8, 1.25), source="EEOC", meaning="...",
    ...                 formula="SR_G / SR_R", interval="scas", aliases=("air",))
    >>> [s.name for s in select_specs([di], ["air"], available={"y_pred"}, family="binary")]
    ['disparate_impact']
    """
    if isinstance(metrics, str):
        raise TypeError(f"metrics must be a sequence of names, got the string {metrics!r}")
    if metrics is None:
        return [s for s in specs if s.requires <= set(available)]
    by_name = _by_name(specs)
    chosen: dict[str, MetricSpec] = {}
    for name in metrics:
        spec = by_name.get(name)
        if spec is None:
            known = ", ".join(s.name for s in specs)
            raise ValueError(f"unknown {family} metric {name!r}; known {family} metrics: {known}")
        missing = sorted(spec.requires - set(available))
        if missing:
            raise ValueError(f"metric {name!r} needs the data key(s) {missing}, absent from the data")
        chosen.setdefault(spec.name, spec)
    for spec in list(chosen.values()):
        for dependency in spec.needs:
            chosen.setdefault(dependency, by_name[dependency])
    return list(chosen.values())


def fair_ranges_of(
    specs: Sequence[MetricSpec], overrides: FairRangeOverrides | None, *, family: str
) -> dict[str, FairRange | None]:
    """Each spec's fair range: the override given for its name or an alias (absolute), else its default.

    An override key that names no metric of ``family`` is an error, naming the key: a typo
    must not silently leave the default range in force.

    >>> di = MetricSpec(name="disparate_impact", family="classification", requires=frozenset({"y_pred"}),
    ...                 ideal=1.0, fair_range=FairRange(0.8, 1.25), source="EEOC", meaning="...",
    ...                 formula="SR_G / SR_R", interval="scas", aliases=("air",))
    >>> fair_ranges_of([di], {"air": (0.9, None)}, family="binary")["disparate_impact"]
    FairRange(min=0.9, max=None, relative_to=None)
    """
    by_name = _by_name(specs)
    given: dict[str, FairRange] = {}
    for key, bounds in (overrides or {}).items():
        spec = by_name.get(key)
        if spec is None:
            raise ValueError(f"fair_ranges: {key!r} is not a {family} metric")
        lo, hi = tuple(bounds)
        given[spec.name] = FairRange(lo, hi)
    return {s.name: given.get(s.name, s.fair_range) for s in specs}
