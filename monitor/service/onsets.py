"""When each active incident began, estimated once per incident from its model's log.

The service judges windows; a window crosses its fair range hours after the model changed. When an
evaluation shows an incident not seen before (:mod:`monitor.evaluation.incidents`), its onset is
estimated from the log (:func:`monitor.evaluation.onsets.onset_of`: a change point on the group's
counts) and kept while the incident's alerts are active: the alerts' annotations, the notifications and
the live view say "began about ... ± ...". One read of the span per new incident, in the evaluation's
thread; an incident whose onset cannot be estimated is not tried again while it lasts.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping
from types import MappingProxyType

from monitor.evaluation.evaluator import Evaluator
from monitor.evaluation.incidents import incidents
from monitor.evaluation.onset import Onset
from monitor.evaluation.onsets import onset_of
from monitor.evaluation.results import ModelEvaluation

__all__ = ["Onsets"]


class Onsets:
    """Each model's incidents' onsets, by population (``race=Black``: the ``incident`` label)."""

    def __init__(self) -> None:
        self._known: dict[str, dict[str, Onset | None]] = {}
        self._lock = threading.Lock()

    def estimate(self, evaluator: Evaluator, evaluation: ModelEvaluation) -> Mapping[str, Onset]:
        """The onsets of the model's incidents, those new in ``evaluation`` estimated now."""
        model = evaluation.model
        with self._lock:
            known = dict(self._known.get(model, {}))
        for incident in incidents([evaluation]):
            population = f"{incident.attribute}={incident.group}"
            if population not in known:
                known[population] = onset_of(evaluator, incident, evaluation)
        with self._lock:
            self._known[model] = known
        return MappingProxyType({p: o for p, o in known.items() if o is not None})

    def keep(self, model: str, incidents: Collection[str]) -> None:
        """Forget the model's onsets but those of ``incidents`` (their alerts are still active)."""
        with self._lock:
            known = self._known.get(model, {})
            self._known[model] = {p: o for p, o in known.items() if p in incidents}
