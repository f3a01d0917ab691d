"""One evaluation of one model: its windows read, cleaned, computed and judged by ``metrics_core``.

:mod:`~monitor.evaluation.evaluator` evaluates a model at an instant; its results are the immutable
records of :mod:`~monitor.evaluation.results`.
"""

from monitor.evaluation.evaluator import Evaluator, build_evaluators
from monitor.evaluation.results import GroupStats, ModelEvaluation, WindowResult

__all__ = ["Evaluator", "GroupStats", "ModelEvaluation", "WindowResult", "build_evaluators"]
