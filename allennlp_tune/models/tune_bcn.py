from typing import Dict, Optional

import torch
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp_models.classification.models.biattentive_classification_network import (
    BiattentiveClassificationNetwork,
)

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
      // ... every parameter of "bcn"
    }
    ```

    # Parameters

    vocab : `Vocabulary`
    positive_label : `str`, optional (default = `None`)
        Report `precision`, `recall` and `f1` of this label.
    (every parameter of `bcn`)
    """

    def __init__(self, vocab: Vocabulary, positive_label: Optional[str] = None, **kwargs) -> None:
        super().__init__(vocab, **kwargs)
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
