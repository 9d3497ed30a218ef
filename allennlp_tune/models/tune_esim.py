from typing import Dict, Optional

import torch
from allennlp.common.checks import check_dimensions_match
from allennlp.data import Vocabulary
from allennlp.models.model import Model

from allennlp_tune.models.reading_esim import ReadingEsim
from allennlp_tune.training.metrics import ClassificationMetrics
from allennlp_tune.training.metrics.task_metrics import check_labels


@Model.register("tune_esim")
class TuneEsim(ReadingEsim):
    """
    allennlp-models' `esim` (the paper's feature-extraction network for MNLI, SICK-E and MRPC)
    with allennlp-tune's classification metrics, a check that `output_logit` has one output per
    label, and a default predictor that also reads `sentence1`/`sentence2` and names bad input
    lines (`tune_text_classifier`). The network is ESIM's, unchanged.

    It reads separately encoded pairs (`premise`, `hypothesis`; the reader's `pair_encoding:
    "separate"`) or, as the paper feeds frozen BERT features to ESIM, a jointly encoded pair
    (`tokens` = `[CLS] a [SEP] b [SEP]`, `pair_encoding: "joint"`), which is embedded once and
    split into its two sentences by token type id.

    Metrics: `accuracy` (primary; on MNLI's matched dev set it is the paper's matched accuracy),
    `mcc`, and with `positive_label` also `precision`, `recall`, `f1` (MRPC: `"1"`). For SICK-R and
    STS-B use `esim_regression`.

    Registered as a `Model` with name "tune_esim".

    ```jsonnet
    "model": {
      "type": "tune_esim",
      "positive_label": "1",
      "text_field_embedder": {...},
      // no input_size: it is the text_field_embedder's output dim
      "encoder": {"type": "lstm", "hidden_size": 300, "bidirectional": true},
      // ... every other parameter of "esim"; output_logit.hidden_dims = number of labels
    }
    ```

    # Parameters

    positive_label : `str`, optional (default = `None`)
        Report `precision`, `recall` and `f1` of this label.
    (`text_field_embedder`, and `encoder` without its input size: see `ReadingEsim`,
    models/reading_esim.py; every other parameter of `esim`)
    """

    def __init__(self, vocab: Vocabulary, positive_label: Optional[str] = None, **kwargs) -> None:
        super().__init__(vocab, **kwargs)
        check_dimensions_match(
            self._output_logit.get_output_dim(),
            check_labels(vocab, "labels", "tune_esim"),
            "output_logit output dim (hidden_dims)",
            "number of labels in the data",
        )
        self._metrics = ClassificationMetrics(vocab, "labels", positive_label)

    def _scored(
        self, esim_output: Dict[str, torch.Tensor], label: Optional[torch.Tensor]
    ) -> Dict[str, torch.Tensor]:
        if label is not None:
            self._metrics(esim_output["label_logits"], label)
        return esim_output

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        # Ours include the parent's `accuracy`, computed the same way.
        return self._metrics.get_metric(reset)
