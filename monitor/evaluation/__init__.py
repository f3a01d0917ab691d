"""One evaluation of one model: its windows read, cleaned, computed and judged by ``metrics_core``.

:mod:`~monitor.evaluation.evaluator` evaluates a model at an instant, :mod:`~monitor.evaluation.evaluators`
builds and closes a config's evaluators together; the results are the immutable records of
:mod:`~monitor.evaluation.results`.
"""

from monitor.evaluation.evaluator import Evaluator
from monitor.evaluation.evaluators import Evaluators, build_evaluators, evaluate_once, select_models
from monitor.evaluation.results import GroupStats, ModelEvaluation, WindowResult

__all__ = [
    "Evaluator",
    "Evaluators",
    "GroupStats",
    "ModelEvaluation",
    "WindowResult",
    "build_evaluators",
    "evaluate_once",
    "select_models",
]
