from typing import Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.nn.util import dist_reduce_sum
from allennlp.training.metrics.metric import Metric


@Metric.register("matthews_correlation")
class MatthewsCorrelation(Metric):
    """
    Matthews correlation coefficient of argmax predictions, the CoLA metric. AllenNLP has none.

    Accumulates the confusion matrix over batches (summed across workers when distributed) and
    computes the multi-class form (Gorodkin 2004), which for two classes is the usual
    `(tp * tn - fp * fn) / sqrt((tp + fp) (tp + fn) (tn + fp) (tn + fn))`. When that denominator
    is zero (all predictions, or all gold labels, in one class) the value is 0, as in
    scikit-learn's `matthews_corrcoef`.

    Registered as a `Metric` with name "matthews_correlation".
    """

    supports_distributed = True

    def __init__(self) -> None:
        self._confusion: Optional[torch.Tensor] = None

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
        predicted = predictions.argmax(-1).reshape(-1)
        gold = gold_labels.reshape(-1).long()
        if mask is not None:
            keep = mask.reshape(-1).bool()
            predicted, gold = predicted[keep], gold[keep]
        if (gold >= num_classes).any() or (gold < 0).any():
            raise ConfigurationError(
                f"MatthewsCorrelation: a gold label is outside 0..{num_classes - 1}."
            )
        confusion = torch.bincount(gold * num_classes + predicted, minlength=num_classes**2)
        confusion = dist_reduce_sum(confusion.view(num_classes, num_classes).double())
        if self._confusion is None:
            self._confusion = confusion.cpu()
        else:
            self._confusion += confusion.cpu()

    def get_metric(self, reset: bool = False) -> float:
        if self._confusion is None:
            value = 0.0
        else:
            # Rows are gold classes, columns predicted classes.
            confusion = self._confusion
            total = confusion.sum()
            correct = confusion.trace()
            gold_counts = confusion.sum(dim=1)
            predicted_counts = confusion.sum(dim=0)
            numerator = correct * total - (predicted_counts * gold_counts).sum()
            denominator = torch.sqrt(
                (total**2 - (predicted_counts**2).sum()) * (total**2 - (gold_counts**2).sum())
            )
            value = 0.0 if denominator == 0 else float(numerator / denominator)
        if reset:
            self.reset()
        return value

    def reset(self) -> None:
        self._confusion = None
