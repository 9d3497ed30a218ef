"""
The metric sets of the classification and regression models, so every model names its metrics
the same way and a config's `validation_metric` carries over between them.

Not registered: each model builds one of these from its own constructor arguments.

- `ClassificationMetrics`: `accuracy` (SST-2, SICK-E, MRPC; on MNLI's matched dev set this is
  the paper's "matched accuracy"), `mcc` (Matthews correlation, CoLA) and, when the model is given
  a `positive_label`, `precision`, `recall` and `f1` of that label (MRPC: `"1"`).
- `RegressionMetrics`: `pearson` (SICK-R and STS-B in the paper), `spearman` and `mse`.
"""

import math
import warnings
from typing import Dict, Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.nn.util import dist_reduce_sum
from allennlp.training.metrics import (
    CategoricalAccuracy,
    F1Measure,
    PearsonCorrelation,
    SpearmanCorrelation,
)
from allennlp.training.metrics.metric import Metric

from allennlp_tune.training.metrics.matthews_correlation import MatthewsCorrelation


def check_labels(vocab: Vocabulary, label_namespace: str, owner: str) -> int:
    """The number of labels; a `ConfigurationError` if the data has none (a score task)."""
    num_labels = vocab.get_vocab_size(label_namespace)
    if num_labels == 0:
        raise ConfigurationError(
            f"{owner}: the vocabulary has no labels in namespace {label_namespace!r}. For a score "
            "task (SICK-R, STS-B: the reader gives float labels) set `model.regression: true` "
            "(or use `esim_regression` instead of `esim`)."
        )
    return num_labels


class ClassificationMetrics(Metric):
    """
    `accuracy`, `mcc`, and with `positive_label` also `precision`, `recall` and `f1` of it.

    # Parameters

    vocab : `Vocabulary`
    label_namespace : `str`
    positive_label : `str`, optional
        The label whose F1 to report (`"1"` for MRPC, paraphrase). Must be one of the labels.
    """

    def __init__(
        self,
        vocab: Vocabulary,
        label_namespace: str = "labels",
        positive_label: Optional[str] = None,
    ) -> None:
        self._accuracy = CategoricalAccuracy()
        self._mcc = MatthewsCorrelation()
        self._f1: Optional[F1Measure] = None
        if positive_label is not None:
            labels = vocab.get_token_to_index_vocabulary(label_namespace)
            if positive_label not in labels:
                raise ConfigurationError(
                    f"model.positive_label is {positive_label!r}, which is not a label of the "
                    f"data (namespace {label_namespace!r} holds {sorted(labels)}). Use one of "
                    'those, e.g. "1" (paraphrase) for MRPC, or remove positive_label.'
                )
            self._f1 = F1Measure(labels[positive_label])

    def __call__(self, logits: torch.Tensor, labels: torch.Tensor, mask=None) -> None:
        labels = labels.long().view(-1)
        self._accuracy(logits, labels)
        self._mcc(logits, labels)
        if self._f1 is not None:
            self._f1(logits, labels)

    def get_metric(self, reset: bool = False) -> Dict[str, float]:
        metrics = {
            "accuracy": self._accuracy.get_metric(reset),
            "mcc": self._mcc.get_metric(reset),
        }
        if self._f1 is not None:
            metrics.update(self._f1.get_metric(reset))
        return metrics

    def reset(self) -> None:
        for metric in (self._accuracy, self._mcc, self._f1):
            if metric is not None:
                metric.reset()


class RegressionMetrics(Metric):
    """
    `pearson`, `spearman` (AllenNLP's `PearsonCorrelation` and `SpearmanCorrelation`) and `mse`.

    A correlation is undefined while the predictions are constant (an untrained model, a batch
    of one); it is reported as 0 instead of NaN so that `validation_metric: "+pearson"` keeps
    working from the first epoch.
    """

    def __init__(self) -> None:
        self._pearson = PearsonCorrelation()
        self._spearman = SpearmanCorrelation()
        self._squared_error = 0.0
        self._count = 0

    def __call__(self, scores: torch.Tensor, labels: torch.Tensor, mask=None) -> None:
        scores = scores.detach().float().view(-1)
        labels = labels.detach().float().view(-1)
        self._pearson(scores, labels)
        self._spearman(scores, labels)
        self._squared_error += float(dist_reduce_sum(((scores - labels) ** 2).sum()))
        self._count += int(dist_reduce_sum(torch.tensor(labels.numel(), device=labels.device)))

    def get_metric(self, reset: bool = False) -> Dict[str, float]:
        with warnings.catch_warnings():
            # scipy warns on constant input; the NaN it returns is reported as 0 below.
            warnings.simplefilter("ignore")
            spearman = float(self._spearman.get_metric(reset))
        metrics = {
            "pearson": float(self._pearson.get_metric(reset)),
            "spearman": spearman,
            "mse": self._squared_error / self._count if self._count else 0.0,
        }
        if reset:
            self.reset()
        return {name: 0.0 if math.isnan(value) else value for name, value in metrics.items()}

    def reset(self) -> None:
        self._pearson.reset()
        self._spearman.reset()
        self._squared_error = 0.0
        self._count = 0
