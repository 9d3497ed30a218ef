"""
The output layer shared by `pooled_classifier`, `pair_classifier` and `tune_frozen_head`:
dropout, an optional feedforward, then a linear layer to the labels (softmax, cross-entropy) or
to one score (regression, mean squared error), with the matching metric set (`OutputHead`); and
the model around it (`HeadedModel`), which takes the head's parameters once for the three. Not
registered themselves.
"""

from typing import Dict, List, Optional

import torch
from allennlp.common.checks import ConfigurationError, check_dimensions_match
from allennlp.data import Vocabulary
from allennlp.models.model import Model
from allennlp.modules import FeedForward, TextFieldEmbedder
from allennlp.nn import InitializerApplicator

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


class HeadedModel(Model):
    """
    A model whose last layer is an `OutputHead`: it takes the head's parameters, builds the head
    once the subclass knows the size of the vector the head reads (`_build_head`), then applies
    the initializer; `get_metrics` and `make_output_human_readable` are the head's. Its
    subclasses take these parameters through `**kwargs`: AllenNLP's `from_params` reads a
    constructor's `**kwargs` from the first base class's constructor, as for `Model`'s own.

    # Parameters

    vocab : `Vocabulary`
    text_field_embedder : `TextFieldEmbedder`
    dropout : `float`, optional (default = `0.0`)
        On the vector the head reads.
    regression : `bool`, optional (default = `False`)
        Predict one score (MSE loss) instead of a label (SICK-R, STS-B); needs a reader that
        gives float labels.
    positive_label : `str`, optional (default = `None`)
        Report `precision`, `recall` and `f1` of this label (`"1"` for MRPC).
    label_namespace : `str`, optional (default = `"labels"`)
    initializer : `InitializerApplicator`, optional (default = `InitializerApplicator()`)
        Applied once every layer is built.
    """

    default_predictor = "tune_text_classifier"

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        dropout: float = 0.0,
        regression: bool = False,
        positive_label: Optional[str] = None,
        label_namespace: str = "labels",
        initializer: InitializerApplicator = InitializerApplicator(),
        **kwargs,
    ) -> None:
        super().__init__(vocab, **kwargs)
        self._text_field_embedder = text_field_embedder
        self.label_namespace = label_namespace
        # What `_build_head` gives the head, once the subclass knows its input size.
        self._head_options = {"dropout": dropout, "regression": regression}
        self._head_options.update(label_namespace=label_namespace, positive_label=positive_label)
        self._initializer = initializer

    def _build_head(self, input_dim: int, feedforward: Optional[FeedForward], owner: str) -> None:
        """The head on a vector of `input_dim` (through `feedforward` when given), then the
        initializer over the whole model. `owner`: the registered name, for error messages."""
        self._head = OutputHead(
            self.vocab, input_dim, feedforward, owner=owner, **self._head_options
        )
        self._initializer(self)

    def make_output_human_readable(
        self, output_dict: Dict[str, torch.Tensor]
    ) -> Dict[str, torch.Tensor]:
        return self._head.make_output_human_readable(self.vocab, output_dict)

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        return self._head.get_metrics(reset)
