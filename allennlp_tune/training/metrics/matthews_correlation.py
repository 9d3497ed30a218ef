import math
from typing import List, Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.nn.util import dist_reduce_sum
from allennlp.training.metrics.metric import Metric

# Metric updates run outside a compiled step (`tune_gradient_descent`'s `compile`): they add to
# state tensors that persist between steps, which CUDA-graph replay would overwrite. Without
# torch.compile (torch < 2.1) this is the function itself.
eager_only = getattr(getattr(torch, "compiler", None), "disable", None) or (lambda fn: fn)


@Metric.register("matthews_correlation")
class MatthewsCorrelation(Metric):
    """
    Matthews correlation coefficient of argmax predictions, the CoLA metric. AllenNLP has none.

    Accumulates the confusion matrix over batches (summed across workers when distributed) and
    computes the multi-class form (Gorodkin 2004), which for two classes is the usual
    `(tp * tn - fp * fn) / sqrt((tp + fp) (tp + fn) (tn + fp) (tn + fn))`. When that denominator
    is zero (all predictions, or all gold labels, in one class) the value is 0, as in
    scikit-learn's `matthews_corrcoef`.

    A batch adds to the confusion matrix where the predictions are (a GPU when training on one)
    without waiting for the device: masked items are weighted 0 rather than selected, and a gold
    label outside `0..num_classes - 1` is counted in a spare cell rather than checked. The matrix
    is copied to the host once per `get_metric` (`confusion_matrix()`), which also raises the
    `ConfigurationError` for such labels.

    Registered as a `Metric` with name "matthews_correlation".

    ```jsonnet
    {"type": "matthews_correlation"}
    ```
    """

    supports_distributed = True

    def __init__(self) -> None:
        # Shape: (num_classes ** 2 + 1,): row-major gold x predicted counts, then the number of
        # unmasked gold labels outside the classes. On the predictions' device.
        self._counts: Optional[torch.Tensor] = None
        self._num_classes = 0

    @eager_only
    def __call__(
        self,
        predictions: torch.Tensor,
        gold_labels: torch.Tensor,
        mask: Optional[torch.BoolTensor] = None,
    ) -> None:
        """
        # Parameters

        predictions : `torch.Tensor`
            Scores of shape `(batch_size, ..., num_classes)`.
        gold_labels : `torch.Tensor`
            Integer labels of shape `(batch_size, ...)`.
        mask : `torch.BoolTensor`, optional
            Same shape as `gold_labels`.
        """
        predictions, gold_labels, mask = self.detach_tensors(predictions, gold_labels, mask)
        num_classes = predictions.size(-1)
        if gold_labels.dim() != predictions.dim() - 1:
            raise ConfigurationError(
                "MatthewsCorrelation: gold_labels must have one dimension less than predictions, "
                f"got {tuple(gold_labels.shape)} and {tuple(predictions.shape)}."
            )
        if self._counts is not None and num_classes != self._num_classes:
            raise ConfigurationError(
                f"MatthewsCorrelation: predictions over {num_classes} classes after batches "
                f"over {self._num_classes}; reset() between tasks."
            )
        # Shape: (num_items,)
        predicted = predictions.argmax(-1).reshape(-1)
        gold = gold_labels.reshape(-1).long()
        weights = (
            torch.ones_like(gold) if mask is None else mask.reshape(-1).to(device=gold.device)
        ).long()
        in_range = (gold >= 0) & (gold < num_classes)
        cells = torch.where(in_range, gold * num_classes + predicted, num_classes**2)
        counts = torch.zeros(num_classes**2 + 1, dtype=torch.long, device=gold.device)
        counts = dist_reduce_sum(counts.scatter_add_(0, cells, weights))
        if self._counts is None:
            self._counts, self._num_classes = counts, num_classes
        else:
            self._counts += counts

    def confusion_matrix(self) -> List[List[int]]:
        """
        The accumulated counts on the host, rows gold classes and columns predicted ones (`[]`
        before any batch): the one device synchronisation of a `get_metric`.
        """
        if self._counts is None:
            return []
        counts = self._counts.tolist()
        if counts[-1]:
            raise ConfigurationError(
                f"MatthewsCorrelation: {counts[-1]} gold label(s) outside "
                f"0..{self._num_classes - 1}."
            )
        size = self._num_classes
        return [counts[row * size : (row + 1) * size] for row in range(size)]

    def get_metric(self, reset: bool = False) -> float:
        value = matthews_correlation(self.confusion_matrix())
        if reset:
            self.reset()
        return value

    def reset(self) -> None:
        self._counts = None
        self._num_classes = 0


def matthews_correlation(confusion: List[List[int]]) -> float:
    """The multi-class MCC of a confusion matrix (rows gold, columns predicted); 0 if undefined."""
    total = sum(map(sum, confusion))
    correct = sum(confusion[index][index] for index in range(len(confusion)))
    gold_counts = [sum(row) for row in confusion]
    predicted_counts = [sum(column) for column in zip(*confusion)]
    numerator = correct * total - sum(p * g for p, g in zip(predicted_counts, gold_counts))
    # Python integers: exact however many items, so a zero denominator is exactly zero.
    squared = (total**2 - sum(p * p for p in predicted_counts)) * (
        total**2 - sum(g * g for g in gold_counts)
    )
    return 0.0 if squared == 0 else numerator / math.sqrt(squared)
