"""Metrics AllenNLP lacks (Matthews correlation) and the task models' metric sets."""

from allennlp_tune.training.metrics.matthews_correlation import MatthewsCorrelation
from allennlp_tune.training.metrics.task_metrics import ClassificationMetrics, RegressionMetrics

__all__ = ["ClassificationMetrics", "MatthewsCorrelation", "RegressionMetrics"]
