"""
The output layer shared by `pooled_classifier` and `pair_classifier`: dropout, an optional
feedforward, then a linear layer to the labels (softmax, cross-entropy) or to one score
(regression, mean squared error), with the matching metric set. Not registered itself.
"""

from typing import Dict, List, Optional

import torch
from allennlp.common.checks import ConfigurationError, check_dimensions_match
from allennlp.data import Vocabulary
from allennlp.modules import FeedForward

from allennlp_tune.training.metrics import ClassificationMetrics, RegressionMetrics
from allennlp_tune.training.metrics.task_metrics import check_labels


class OutputHead(torch.nn.Module):
    """
    # Parameters

    vocab : `Vocabulary`
    input_dim : `int`
        Dimension of the pooled vector.
    feedforward : `FeedForward`, optional
    dropout : `float`
        Applied to the pooled vector.
    regression : `bool`
        One score with MSE loss (`pearson`, `spearman`, `mse`), instead of a softmax over the
        labels (`accuracy`, `mcc`, and `f1` of `positive_label`).
    label_namespace : `str`
    positive_label : `str`, optional
        Classification only.
    owner : `str`
        The registered model name, for error messages.
    """

    def __init__(
        self,
        vocab: Vocabulary,
        input_dim: int,
        feedforward: Optional[FeedForward],
        dropout: float,
        regression: bool,
        label_namespace: str,
        positive_label: Optional[str],
        owner: str,
    ) -> None:
        super().__init__()
        self.regression = regression
        self.label_namespace = label_namespace
        self._dropout = torch.nn.Dropout(dropout) if dropout else None
        self._feedforward = feedforward
        if feedforward is not None:
            check_dimensions_match(
                input_dim, feedforward.get_input_dim(), "pooled output dim", "feedforward input dim"
            )
            input_dim = feedforward.get_output_dim()
        if regression:
            if positive_label is not None:
                raise ConfigurationError(
                    f"{owner}: positive_label is for classification; remove it with "
                    "regression: true."
                )
            num_outputs = 1
            self._metrics = RegressionMetrics()
            self._loss = torch.nn.MSELoss()
        else:
            num_outputs = check_labels(vocab, label_namespace, owner)
            self._metrics = ClassificationMetrics(vocab, label_namespace, positive_label)
            self._loss = torch.nn.CrossEntropyLoss()
        self._output_layer = torch.nn.Linear(input_dim, num_outputs)

    def forward(
        self, pooled: torch.Tensor, label: Optional[torch.Tensor] = None
    ) -> Dict[str, torch.Tensor]:
        if self._dropout is not None:
            pooled = self._dropout(pooled)
        if self._feedforward is not None:
            pooled = self._feedforward(pooled)
        outputs = self._output_layer(pooled)
        if self.regression:
            score = outputs.squeeze(-1)
            output_dict = {"score": score}
            if label is not None:
                label = label.float().view(-1)
                output_dict["loss"] = self._loss(score, label)
                self._metrics(score, label)
        else:
            output_dict = {"logits": outputs, "probs": torch.softmax(outputs, dim=-1)}
            if label is not None:
                output_dict["loss"] = self._loss(outputs, label.long().view(-1))
                self._metrics(outputs, label)
        return output_dict

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        return self._metrics.get_metric(reset)

    def make_output_human_readable(
        self, vocab: Vocabulary, output_dict: Dict[str, torch.Tensor]
    ) -> Dict[str, torch.Tensor]:
        """Adds `label` (classification); a regression output keeps its `score`."""
        if not self.regression:
            output_dict["label"] = labels_from_probabilities(
                vocab, self.label_namespace, output_dict["probs"]
            )
        return output_dict


def labels_from_probabilities(
    vocab: Vocabulary, label_namespace: str, probabilities: torch.Tensor
) -> List[str]:
    """The argmax label of each row (or of the single vector) of `probabilities`."""
    if probabilities.dim() == 1:
        probabilities = probabilities.unsqueeze(0)
    index_to_label = vocab.get_index_to_token_vocabulary(label_namespace)
    return [index_to_label.get(int(i), str(int(i))) for i in probabilities.argmax(dim=-1)]
