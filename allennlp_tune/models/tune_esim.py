from typing import Any, Dict, List, Optional

import torch
from allennlp.common import Lazy
from allennlp.common.checks import check_dimensions_match
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules import Seq2SeqEncoder, TextFieldEmbedder
from allennlp_models.pair_classification.models.esim import ESIM

from allennlp_tune.models.input_size import build_reading
from allennlp_tune.models.joint_pair import JointPairEmbedder, pair_inputs
from allennlp_tune.training.metrics import ClassificationMetrics
from allennlp_tune.training.metrics.task_metrics import check_labels


@Model.register("tune_esim")
class TuneEsim(ESIM):
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

    vocab : `Vocabulary`
    text_field_embedder : `TextFieldEmbedder`
        Embeds `premise` and `hypothesis`, or the joint `tokens` field.
    encoder : `Seq2SeqEncoder`
        ESIM's first BiLSTM, over the embeddings. Leave its `input_size` out: it is taken from
        `text_field_embedder.get_output_dim()` when the model is built. A config that gives it
        builds the same encoder; one that disagrees with the embedder is a
        `ConfigurationError`.
    positive_label : `str`, optional (default = `None`)
        Report `precision`, `recall` and `f1` of this label.
    (every other parameter of `esim`)
    """

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        encoder: Lazy[Seq2SeqEncoder],
        positive_label: Optional[str] = None,
        **kwargs,
    ) -> None:
        dim = text_field_embedder.get_output_dim()
        super().__init__(
            vocab,
            text_field_embedder=text_field_embedder,
            encoder=build_reading(encoder, dim, "encoder", "text_field_embedder"),
            **kwargs,
        )
        # Joint pairs (BERT's [CLS] a [SEP] b [SEP]) are embedded once and split for ESIM.
        self._text_field_embedder = JointPairEmbedder(self._text_field_embedder)
        check_dimensions_match(
            self._output_logit.get_output_dim(),
            check_labels(vocab, "labels", "tune_esim"),
            "output_logit output dim (hidden_dims)",
            "number of labels in the data",
        )
        self._metrics = ClassificationMetrics(vocab, "labels", positive_label)

    def forward(  # type: ignore[override]
        self,
        premise: Optional[TextFieldTensors] = None,
        hypothesis: Optional[TextFieldTensors] = None,
        label: Optional[torch.Tensor] = None,
        metadata: Optional[List[Dict[str, Any]]] = None,
        tokens: Optional[TextFieldTensors] = None,
    ) -> Dict[str, torch.Tensor]:
        premise, hypothesis = pair_inputs(self._text_field_embedder, premise, hypothesis, tokens)
        output_dict = super().forward(premise, hypothesis, label=label, metadata=metadata)
        if label is not None:
            self._metrics(output_dict["label_logits"], label)
        return output_dict

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        # Ours include the parent's `accuracy`, computed the same way.
        return self._metrics.get_metric(reset)

    default_predictor = "tune_text_classifier"
