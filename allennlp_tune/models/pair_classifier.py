from typing import Dict, Optional

import torch
from allennlp.common import Lazy
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules import FeedForward, Seq2SeqEncoder, TextFieldEmbedder
from allennlp.nn.util import get_text_field_mask

from allennlp_tune.models.input_size import build_reading
from allennlp_tune.models.output_head import HeadedModel
from allennlp_tune.modules.pair_encoders.bi_attention_pair import BiAttentionPair
from allennlp_tune.modules.pair_encoders.pair_encoder import PairEncoder


@Model.register("pair_classifier")
class PairClassifier(HeadedModel):
    """
    A sentence-pair classifier or regressor over *separately* encoded sentences (the reader's
    `pair_encoding: "separate"`: fields `premise` and `hypothesis`): embed each sentence with the
    same embedder (and optional `encoder`), combine the two with a `pair_encoder`, then a linear
    softmax layer, or a linear regression (`regression: true`).

    - ELMo fine-tuning for MNLI, SICK-E, MRPC, SICK-R, STS-B (paper): the default
      `bi_attention_pair` (cross-sentence bi-attention + ESIM's enhanced mean/max pooling, no
      parameters of its own), then softmax or regression.
    - Table 3 ablation "w/o bi-attn.": `"pair_encoder": {"type": "bi_attention_pair",
      "bi_attention": false, ...}`.

    For frozen features the paper uses ESIM instead (`tune_esim`, `esim_regression`), and for
    BERT the jointly encoded pair with `pooled_classifier`.

    Metrics as in `pooled_classifier`: `accuracy` (primary; matched accuracy on MNLI's matched
    dev set), `mcc`, `f1` with `positive_label` (MRPC); for regression `pearson` (primary),
    `spearman`, `mse`. The default predictor, `tune_text_classifier`, reads
    `{"premise": ..., "hypothesis": ...}` or `{"sentence1": ..., "sentence2": ...}`.

    Registered as a `Model` with name "pair_classifier".

    ```jsonnet
    "dataset_reader": {"type": "sick", "task": "relatedness", "split": "train",
                       "pair_encoding": "separate",
                       "token_indexers": {"elmo": {"type": "elmo_characters"}}},
    "model": {
      "type": "pair_classifier",
      "text_field_embedder": {"token_embedders": {"elmo": {"type": "tune_elmo", ...}}},
      // no input_dim: it is the text_field_embedder's (or the encoder's) output dim
      "pair_encoder": {"type": "bi_attention_pair"},
      "dropout": 0.5,
      "regression": true
    }
    ```

    # Parameters

    vocab : `Vocabulary`
    text_field_embedder : `TextFieldEmbedder`
        Embeds `premise` and `hypothesis` (the same weights for both).
    pair_encoder : `PairEncoder`, optional (default = `bi_attention_pair` over the encoded states)
        Combines the two encoded sentences into one vector. Leave its `input_dim` out: it is
        taken from the `encoder`'s output dim, or without an encoder from
        `text_field_embedder.get_output_dim()`, when the model is built.
    encoder : `Seq2SeqEncoder`, optional (default = `None`)
        Runs over each embedded sentence before the pair encoder. Leave its input size
        (`input_size`, `input_dim`) out: it is taken from the `text_field_embedder`.
    (A config that gives either input size builds the same module; one that disagrees with
    what the module reads is a `ConfigurationError`.)
    feedforward : `FeedForward`, optional (default = `None`)
        Between the pair vector and the output layer.
    (the head's `dropout`, on the pair vector, `regression`, `positive_label`,
    `label_namespace` and `initializer`: see `HeadedModel`, models/output_head.py)
    """

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        pair_encoder: Optional[Lazy[PairEncoder]] = None,
        encoder: Optional[Lazy[Seq2SeqEncoder]] = None,
        feedforward: Optional[FeedForward] = None,
        **kwargs,
    ) -> None:
        super().__init__(vocab, text_field_embedder, **kwargs)
        dim = text_field_embedder.get_output_dim()
        self._encoder = build_reading(encoder, dim, "encoder", "text_field_embedder")
        source = "text_field_embedder"
        if self._encoder is not None:
            dim, source = self._encoder.get_output_dim(), "encoder"
        self._pair_encoder = build_reading(pair_encoder, dim, "pair_encoder", source)
        if self._pair_encoder is None:
            self._pair_encoder = BiAttentionPair(dim)
        self._build_head(self._pair_encoder.get_output_dim(), feedforward, "pair_classifier")

    def forward(  # type: ignore[override]
        self,
        premise: TextFieldTensors,
        hypothesis: TextFieldTensors,
        label: Optional[torch.Tensor] = None,
        **kwargs,
    ) -> Dict[str, torch.Tensor]:
        """
        # Parameters

        premise, hypothesis : `TextFieldTensors`
            The two sentences, each encoded on its own.
        label : `torch.Tensor`, optional
            Label indices `(batch_size,)`, or float scores `(batch_size,)` for regression.

        # Returns

        `logits` and `probs` `(batch_size, num_labels)`, or `score` `(batch_size,)`; `loss` when
        `label` is given.
        """
        premise_states, premise_mask = self._encode(premise)
        hypothesis_states, hypothesis_mask = self._encode(hypothesis)
        pair = self._pair_encoder(premise_states, premise_mask, hypothesis_states, hypothesis_mask)
        return self._head(pair, label)

    def _encode(self, sentence: TextFieldTensors):
        mask = get_text_field_mask(sentence)
        states = self._text_field_embedder(sentence)
        if self._encoder is not None:
            states = self._encoder(states, mask)
        return states, mask
