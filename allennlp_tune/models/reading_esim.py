"""
The part `tune_esim` and `esim_regression` share around allennlp-models' ESIM: the first
encoder's input size read from the embedder, and pairs read separately encoded or jointly.
Not registered itself.
"""

from typing import Any, Dict, List, Optional

import torch
from allennlp.common import Lazy
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.modules import Seq2SeqEncoder, TextFieldEmbedder
from allennlp_models.pair_classification.models.esim import ESIM

from allennlp_tune.models.input_size import build_reading
from allennlp_tune.models.joint_pair import JointPairEmbedder, pair_inputs


class ReadingEsim(ESIM):
    """
    ESIM whose first BiLSTM takes its input size from the embedder, and which reads separately
    encoded pairs (`premise`, `hypothesis`; the reader's `pair_encoding: "separate"`) or a
    jointly encoded one (`tokens` = `[CLS] a [SEP] b [SEP]`, `pair_encoding: "joint"`), embedded
    once and split into its two sentences (by token type id, or at the separator for tokenizers
    without type ids). A subclass says what becomes of ESIM's output (`_scored`).

    # Parameters

    vocab : `Vocabulary`
    text_field_embedder : `TextFieldEmbedder`
        Embeds `premise` and `hypothesis`, or the joint `tokens` field.
    encoder : `Seq2SeqEncoder`
        ESIM's first BiLSTM, over the embeddings. Leave its `input_size` out: it is taken from
        `text_field_embedder.get_output_dim()` when the model is built. A config that gives it
        builds the same encoder; one that disagrees with the embedder is a
        `ConfigurationError`.
    (every other parameter of `esim`)
    """

    default_predictor = "tune_text_classifier"

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        encoder: Lazy[Seq2SeqEncoder],
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

    def forward(  # type: ignore[override]
        self,
        premise: Optional[TextFieldTensors] = None,
        hypothesis: Optional[TextFieldTensors] = None,
        label: Optional[torch.Tensor] = None,
        metadata: Optional[List[Dict[str, Any]]] = None,
        tokens: Optional[TextFieldTensors] = None,
    ) -> Dict[str, torch.Tensor]:
        premise, hypothesis = pair_inputs(self._text_field_embedder, premise, hypothesis, tokens)
        # ESIM's own loss: cross-entropy over its labels, which regression has none of.
        esim_label = None if self.scores else label
        esim_output = super().forward(premise, hypothesis, label=esim_label, metadata=metadata)
        return self._scored(esim_output, label)

    # Whether the model predicts a score (ESIM's one output) rather than ESIM's labels.
    scores = False

    def _scored(
        self, esim_output: Dict[str, torch.Tensor], label: Optional[torch.Tensor]
    ) -> Dict[str, torch.Tensor]:
        """What `forward` returns, from ESIM's output and the gold `label` (or None)."""
        raise NotImplementedError
