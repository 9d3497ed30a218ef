from typing import Dict, Optional

import torch
from allennlp.common import Lazy
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules import FeedForward, TextFieldEmbedder
from allennlp_models.classification.models.biattentive_classification_network import (
    BiattentiveClassificationNetwork,
)

from allennlp_tune.models.input_size import build_reading
from allennlp_tune.training.metrics import ClassificationMetrics


@Model.register("tune_bcn")
class TuneBcn(BiattentiveClassificationNetwork):
    """
    allennlp-models' bi-attentive classification network (`bcn`), the paper's
    feature-extraction network for SST-2, with allennlp-tune's classification metrics and a
    default predictor (`tune_text_classifier`, `{"sentence": ...}`): upstream `bcn` has none, so
    `allennlp predict` on its archives needs `--predictor`. The network is BCN's, unchanged.

    The contextual embedder goes in `text_field_embedder` (e.g. `tune_elmo` or
    `tune_transformer` with `mode: "feature_extraction"`), under any key but `"elmo"`, which BCN
    reserves for its own `elmo` argument.

    Metrics: `accuracy` (primary for SST-2, `"validation_metric": "+accuracy"`), `mcc`, and with
    `positive_label` `precision`, `recall`, `f1`.

    Registered as a `Model` with name "tune_bcn".

    ```jsonnet
    "model": {
      "type": "tune_bcn",
      "text_field_embedder": {"token_embedders": {"tokens": {"type": "tune_elmo", ...}}},
      // no input_dim: it is the text_field_embedder's output dim
      "pre_encode_feedforward": {"num_layers": 1, "hidden_dims": [300],
                                 "activations": ["relu"], "dropout": [0.25]},
      // ... every other parameter of "bcn"
    }
    ```

    # Parameters

    vocab : `Vocabulary`
    text_field_embedder : `TextFieldEmbedder`
        Embeds the `tokens` field.
    pre_encode_feedforward : `FeedForward`
        BCN's first layer, over the embeddings. Leave its `input_dim` out: it is taken from
        `text_field_embedder.get_output_dim()` (plus the output dim of BCN's own `elmo` with
        `use_input_elmo: true`) when the model is built. A config that gives it builds the
        same layer; one that disagrees with the embedder is a `ConfigurationError`.
    positive_label : `str`, optional (default = `None`)
        Report `precision`, `recall` and `f1` of this label.
    (every other parameter of `bcn`)
    """

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        pre_encode_feedforward: Lazy[FeedForward],
        positive_label: Optional[str] = None,
        **kwargs,
    ) -> None:
        dim = text_field_embedder.get_output_dim()
        source = "text_field_embedder"
        elmo = kwargs.get("elmo")
        if kwargs.get("use_input_elmo") and elmo is not None:
            # BCN's own ELMo is concatenated to the embeddings before this layer.
            dim += elmo.get_output_dim()
            source = "text_field_embedder + elmo"
        super().__init__(
            vocab,
            text_field_embedder=text_field_embedder,
            pre_encode_feedforward=build_reading(
                pre_encode_feedforward, dim, "pre_encode_feedforward", source
            ),
            **kwargs,
        )
        self._metrics = ClassificationMetrics(vocab, "labels", positive_label)

    def forward(  # type: ignore[override]
        self, tokens: TextFieldTensors, label: Optional[torch.Tensor] = None, **kwargs
    ) -> Dict[str, torch.Tensor]:
        output_dict = super().forward(tokens, label=label)
        if label is not None:
            self._metrics(output_dict["logits"], label)
        return output_dict

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        # Ours include the parent's `accuracy`, computed the same way.
        return self._metrics.get_metric(reset)

    default_predictor = "tune_text_classifier"
