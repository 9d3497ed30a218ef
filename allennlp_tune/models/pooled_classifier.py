from typing import Dict, Optional

import torch
from allennlp.common import Lazy
from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules import FeedForward, Seq2SeqEncoder, Seq2VecEncoder, TextFieldEmbedder
from allennlp.modules.seq2vec_encoders import BagOfEmbeddingsEncoder, ClsPooler
from allennlp.nn.util import get_text_field_mask

from allennlp_tune.models.input_size import build_reading
from allennlp_tune.models.output_head import HeadedModel
from allennlp_tune.modules.seq2vec_encoders.max_pooling import MaxPoolingEncoder

POOLINGS = ("cls", "mean", "max")


@Model.register("pooled_classifier")
class PooledClassifier(HeadedModel):
    """
    The light fine-tuning head for one text, or for a sentence pair encoded jointly
    (`[CLS] a [SEP] b [SEP]`, the reader's `pair_encoding: "joint"`): pool the embedder's states
    into one vector, then a linear softmax layer, or a linear regression (`regression: true`).

    - BERT fine-tuning (paper): `pooling: "cls"`, the first token's state.
    - Sentence-embedding checkpoints (all-MiniLM-L6-v2): `pooling: "mean"`, as they were trained;
      their [CLS] state carries little.
    - ELMo fine-tuning for text classification (paper): `pooling: "max"` over the LM states.

    Metrics: classification reports `accuracy` (primary: SST-2, SICK-E, MRPC; on MNLI's matched
    dev set it is the paper's matched accuracy), `mcc` (primary for CoLA) and, with
    `positive_label`, `precision`, `recall`, `f1`; regression reports `pearson` (primary: SICK-R,
    STS-B), `spearman`, `mse`. E.g. `"validation_metric": "+accuracy"` or `"+pearson"`.

    Outputs: `logits`, `probs` and `label` (classification) or `score` (regression). The default
    predictor, `tune_text_classifier`, reads `{"sentence": ...}` or, for pair readers,
    `{"premise": ..., "hypothesis": ...}` / `{"sentence1": ..., "sentence2": ...}`.

    Registered as a `Model` with name "pooled_classifier".

    ```jsonnet
    "model": {
      "type": "pooled_classifier",
      "text_field_embedder": {"token_embedders": {"tokens": {
          "type": "tune_transformer", "model_name": "bert-base-uncased", "mode": "fine_tuning"}}},
      "pooling": "cls",
      "dropout": 0.1,
      "regression": false
    }
    ```

    # Parameters

    vocab : `Vocabulary`
    text_field_embedder : `TextFieldEmbedder`
        Embeds the `tokens` field. Any embedder: BERT, ELMo, word embeddings.
    pooling : `str`, optional (default = `"cls"`)
        `"cls"` (the first token's state), `"mean"` or `"max"` over the unmasked positions.
    seq2seq_encoder : `Seq2SeqEncoder`, optional (default = `None`)
        Runs over the embedded tokens before pooling. Leave its input size (`input_size`,
        `input_dim`) out: it is taken from `text_field_embedder.get_output_dim()`; a size given
        in the config must match it.
    feedforward : `FeedForward`, optional (default = `None`)
        Between the pooled vector and the output layer (e.g. BERT's tanh "pooler" layer).
    (the head's `dropout`, on the pooled vector, `regression`, `positive_label`,
    `label_namespace` and `initializer`: see `HeadedModel`, models/output_head.py)
    """

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        pooling: str = "cls",
        seq2seq_encoder: Optional[Lazy[Seq2SeqEncoder]] = None,
        feedforward: Optional[FeedForward] = None,
        **kwargs,
    ) -> None:
        super().__init__(vocab, text_field_embedder, **kwargs)
        dim = text_field_embedder.get_output_dim()
        self._seq2seq_encoder = build_reading(
            seq2seq_encoder, dim, "seq2seq_encoder", "text_field_embedder"
        )
        if self._seq2seq_encoder is not None:
            dim = self._seq2seq_encoder.get_output_dim()
        self._pooler = _pooler(pooling, dim)
        self._build_head(dim, feedforward, "pooled_classifier")

    def forward(  # type: ignore[override]
        self, tokens: TextFieldTensors, label: Optional[torch.Tensor] = None, **kwargs
    ) -> Dict[str, torch.Tensor]:
        """
        # Parameters

        tokens : `TextFieldTensors`
            One text, or a jointly encoded pair.
        label : `torch.Tensor`, optional
            Label indices `(batch_size,)`, or float scores `(batch_size,)` for regression.

        # Returns

        `logits` and `probs` `(batch_size, num_labels)`, or `score` `(batch_size,)`; `loss` when
        `label` is given.
        """
        embedded = self._text_field_embedder(tokens)
        mask = get_text_field_mask(tokens)
        if self._seq2seq_encoder is not None:
            embedded = self._seq2seq_encoder(embedded, mask=mask)
        return self._head(self._pooler(embedded, mask=mask), label)


def _pooler(pooling: str, dim: int) -> Seq2VecEncoder:
    if pooling == "cls":
        return ClsPooler(dim)
    if pooling == "mean":
        return BagOfEmbeddingsEncoder(dim, averaged=True)
    if pooling == "max":
        return MaxPoolingEncoder(dim)
    raise ConfigurationError(
        f"model.pooling is {pooling!r}; expected one of {', '.join(POOLINGS)}: 'cls' for BERT "
        "fine-tuning as in the paper, 'mean' for sentence-embedding checkpoints such as "
        "all-MiniLM-L6-v2, 'max' for ELMo."
    )
