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
from typing import Dict, List, Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.nn.util import dist_reduce_sum
from allennlp.training.metrics import PearsonCorrelation, SpearmanCorrelation
from allennlp.training.metrics.metric import Metric

from allennlp_tune.training.metrics.matthews_correlation import (
    MatthewsCorrelation,
    eager_only,
    matthews_correlation,
)

# The label of items to leave out: `torch.nn.CrossEntropyLoss`'s default `ignore_index`.
IGNORE_INDEX = -100


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

    All of them come from one confusion matrix (`MatthewsCorrelation`'s), which a batch updates
    on the device without synchronising; `get_metric` copies it to the host once. The values are
    those of AllenNLP's `CategoricalAccuracy` and `F1Measure` (0 where undefined). Items whose
    gold label is -100 (`IGNORE_INDEX`, the `torch.nn.CrossEntropyLoss` default: the padding
    rows of the `static_shapes` collator) are left out, as they are of the loss.

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
        self._confusion = MatthewsCorrelation()
        self._positive_index: Optional[int] = None
        if positive_label is not None:
            labels = vocab.get_token_to_index_vocabulary(label_namespace)
            if positive_label not in labels:
                raise ConfigurationError(
                    f"model.positive_label is {positive_label!r}, which is not a label of the "
                    f"data (namespace {label_namespace!r} holds {sorted(labels)}). Use one of "
                    'those, e.g. "1" (paraphrase) for MRPC, or remove positive_label.'
                )
            self._positive_index = labels[positive_label]

    @eager_only
    def __call__(
        self,
        logits: torch.Tensor,
        labels: torch.Tensor,
        mask: Optional[torch.BoolTensor] = None,
    ) -> None:
        """
        # Parameters

        logits : `torch.Tensor`
            Shape: `(batch_size, num_labels)`.
        labels : `torch.Tensor`
            Shape: `(batch_size,)` (or anything with `batch_size` elements).
        mask : `torch.BoolTensor`, optional
            Shape: as `labels`.
        """
        # Shape: (batch_size,)
        labels = labels.long().view(-1)
        keep = labels != IGNORE_INDEX
        if mask is not None:
            keep = keep & mask.view(-1).bool()
        self._confusion(logits, labels, keep)

    def get_metric(self, reset: bool = False) -> Dict[str, float]:
        confusion = self._confusion.confusion_matrix()
        total = sum(map(sum, confusion))
        correct = sum(confusion[index][index] for index in range(len(confusion)))
        metrics = {
            "accuracy": correct / total if total else 0.0,
            "mcc": matthews_correlation(confusion),
        }
        if self._positive_index is not None:
            metrics.update(_f1_of(confusion, self._positive_index))
        if reset:
            self.reset()
        return metrics

    def reset(self) -> None:
        self._confusion.reset()


def _f1_of(confusion: List[List[int]], label: int) -> Dict[str, float]:
    """Precision, recall and F1 of one label, as AllenNLP's `F1Measure` gives them."""
    if label >= len(confusion):  # no batch yet (or the label is beyond the logits)
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    true_positives = confusion[label][label]
    predicted = sum(row[label] for row in confusion)
    gold = sum(confusion[label])
    precision = true_positives / predicted if predicted else 0.0
    recall = true_positives / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


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

    @eager_only
    def __call__(self, scores: torch.Tensor, labels: torch.Tensor, mask=None) -> None:
        scores = scores.detach().float().view(-1)
        labels = labels.detach().float().view(-1)
        self._pearson(scores, labels)
        self._spearman(scores, labels)
        # Tensors on the device, read at get_metric: no synchronisation per batch.
        self._squared_error = self._squared_error + dist_reduce_sum(
            ((scores.double() - labels.double()) ** 2).sum()
        )
        # torch.full is a fill on the device, where torch.tensor would copy from the host.
        self._count = self._count + dist_reduce_sum(
            torch.full((), labels.numel(), dtype=torch.long, device=labels.device)
        )

    def get_metric(self, reset: bool = False) -> Dict[str, float]:
        with warnings.catch_warnings():
            # scipy warns on constant input; the NaN it returns is reported as 0 below.
            warnings.simplefilter("ignore")
            spearman = float(self._spearman.get_metric(reset))
        count = int(self._count)
        metrics = {
            "pearson": float(self._pearson.get_metric(reset)),
            "spearman": spearman,
            "mse": float(self._squared_error) / count if count else 0.0,
        }
        if reset:
            self.reset()
        return {name: 0.0 if math.isnan(value) else value for name, value in metrics.items()}

    def reset(self) -> None:
        self._pearson.reset()
        self._spearman.reset()
        self._squared_error = 0.0
        self._count = 0
