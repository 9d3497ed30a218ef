from typing import Any, Dict, List, Optional, Tuple

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules import FeedForward, TextFieldEmbedder
from allennlp.nn import Activation
from allennlp.nn.util import get_text_field_mask

from allennlp_tune.models.output_head import HeadedModel
from allennlp_tune.modules.feature_cache.pooled import POOLINGS

HEADS = ("linear", "mlp")
FEATURE_ROUTES = ("pooled", "tokens")


@Model.register("tune_frozen_head")
class FrozenHead(HeadedModel):
    """
    A light network on a frozen encoder: each sentence pooled (mean over its wordpieces, or its
    first wordpiece) from the scalar mix of the encoder's layers, then a linear layer
    (`head: "linear"`) or one hidden layer (`head: "mlp"`) to the labels (softmax) or to one
    score (`regression: true`). A pair, read as two fields (`premise`, `hypothesis`: the
    reader's `pair_encoding: "separate"`), is the vector `[u; v; |u - v|; u * v]` of its two
    pooled sentences (Conneau et al. 2017, InferSent; Reimers and Gurevych 2019, SBERT).

    The frozen arm's cheap head, beside the paper's BCN, ESIM and CRF (`TUNE_FE_HEAD`,
    configs/experiment.libsonnet). With `features: "pooled"` (the default) it reads the
    embedder's `pooled_layers` (the pooled-feature cache: per sentence `(2, layers, dim)`
    numbers) and mixes them with the embedder's scalar mix, which equals pooling the mixed
    sequence (`feature_cache/pooled.py`); `features: "tokens"` pools the embedder's mixed
    output itself (any embedder; the token-level cache). Trained by the `tune_frozen_features`
    trainer, it takes its pooled layers as one tensor (`forward(features=...)`): the encoder
    runs, or the cache is read, once per instance for the whole run. `predict` and `evaluate`
    on its archive read raw text: the encoder runs on what is not cached.

    Metrics as in `pooled_classifier`: `accuracy`, `mcc`, `precision` / `recall` / `f1` of
    `positive_label`; regression `pearson`, `spearman`, `mse`.

    Registered as a `Model` with name "tune_frozen_head".

    ```jsonnet
    "model": {
      "type": "tune_frozen_head",
      "text_field_embedder": {"token_embedders": {"tokens": {
          "type": "tune_transformer", "model_name": "sentence-transformers/all-MiniLM-L6-v2",
          "mode": "feature_extraction", "layers": "all", "feature_cache": {}}}},
      "head": "mlp",
      "hidden_dim": 256,
      "pooling": "mean",
      "dropout": 0.1
    }
    ```

    # Parameters

    vocab : `Vocabulary`
    text_field_embedder : `TextFieldEmbedder`
        One frozen token embedder: `tune_transformer` in `feature_extraction` mode for
        `features: "pooled"` (its scalar mix without layer norm, its dropout 0).
    head : `str`, optional (default = `"linear"`)
        `"linear"` or `"mlp"` (one ReLU hidden layer of `hidden_dim`).
    hidden_dim : `int`, optional (default = `256`)
        The MLP's hidden width; unused by `"linear"`.
    pooling : `str`, optional (default = `"mean"`)
        `"mean"` over the wordpieces (special tokens included, as sentence-transformers pools)
        or `"first"` (the first wordpiece, BERT's [CLS]).
    features : `str`, optional (default = `"pooled"`)
        `"pooled"` (the pooled-feature cache, and the lean trainer's one tensor) or `"tokens"`.
    dropout : `float`, optional (default = `0.0`)
        On the sentence (or pair) vector, and after the MLP's hidden layer.
    (the head's `regression`, `positive_label`, `label_namespace` and `initializer`: see
    `HeadedModel`, models/output_head.py)
    pair : `bool`, optional (default = `False`)
        The instances are pairs (`premise`, `hypothesis`): the output layer reads the four
        pair vectors, `4 x dim`.
    """

    # The head runs once per instance on its pooled vector(s), not once per token: what the
    # budget in compute charges it (`training/callbacks/cost.py`).
    head_runs_per = "instance"

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        head: str = "linear",
        hidden_dim: int = 256,
        pooling: str = "mean",
        features: str = "pooled",
        pair: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(vocab, text_field_embedder, **kwargs)
        for name, value, allowed in (
            ("head", head, HEADS),
            ("pooling", pooling, POOLINGS),
            ("features", features, FEATURE_ROUTES),
        ):
            if value not in allowed:
                raise ConfigurationError(
                    f"tune_frozen_head.{name} is {value!r}; expected one of {', '.join(allowed)}."
                )
        self._embedder = _pooling_embedder(text_field_embedder) if features == "pooled" else None
        self._pooling = pooling
        self._features = features
        dim = text_field_embedder.get_output_dim()
        # Whether the instances are pairs is known from the data only; the config says it ahead
        # (the experiment library sets it), so that the output layer's size is fixed.
        self._pair = bool(pair)
        input_dim = 4 * dim if self._pair else dim
        feedforward = None
        if head == "mlp":
            feedforward = FeedForward(
                input_dim,
                1,
                hidden_dim,
                Activation.by_name("relu")(),
                dropout=self._head_options["dropout"],
            )
        self._build_head(input_dim, feedforward, "tune_frozen_head")

    def frozen_features(
        self,
        tokens: Optional[TextFieldTensors] = None,
        premise: Optional[TextFieldTensors] = None,
        hypothesis: Optional[TextFieldTensors] = None,
        **kwargs: Any,
    ) -> torch.Tensor:
        """
        What the trainable part reads, computed once per instance by `tune_frozen_features`:
        `(batch_size, num_sentences, num_layers, dim)`, each sentence's chosen pooling of every
        selected layer (`features: "pooled"` only).
        """
        if self._embedder is None:
            raise ConfigurationError(
                "tune_frozen_head: frozen_features needs features 'pooled' (with 'tokens' the "
                "pooled vectors depend on the trained mix); train it with gradient_descent."
            )
        index = POOLINGS.index(self._pooling)
        fields = self._fields(tokens, premise, hypothesis)
        return torch.stack(
            [self._embedder.pooled_layers(**_only_indexer(field))[:, index] for field in fields],
            dim=1,
        )

    def forward(  # type: ignore[override]
        self,
        tokens: Optional[TextFieldTensors] = None,
        premise: Optional[TextFieldTensors] = None,
        hypothesis: Optional[TextFieldTensors] = None,
        label: Optional[torch.Tensor] = None,
        features: Optional[torch.Tensor] = None,
        metadata: Optional[List[Dict[str, Any]]] = None,
    ) -> Dict[str, torch.Tensor]:
        """
        # Parameters

        tokens : `TextFieldTensors`, optional
            One text.
        premise, hypothesis : `TextFieldTensors`, optional
            A pair, each sentence encoded on its own.
        label : `torch.Tensor`, optional
            `(batch_size,)` label ids, or float scores with `regression`.
        features : `torch.Tensor`, optional
            `frozen_features`' output `(batch_size, num_sentences, num_layers, dim)`, in place
            of the text fields (the lean trainer's batches).

        # Returns

        `logits`, `probs` (classification) or `score` (regression), and `loss` with `label`.
        """
        if features is not None:
            # (batch_size, num_sentences, dim)
            vectors = self._embedder.mix_pooled(features.float())  # type: ignore[union-attr]
        elif self._features == "pooled":
            vectors = self._embedder.mix_pooled(  # type: ignore[union-attr]
                self.frozen_features(tokens, premise, hypothesis)
            )
        else:
            fields = self._fields(tokens, premise, hypothesis)
            vectors = torch.stack([self._pool_tokens(field) for field in fields], dim=1)
        return self._head(self._combine(vectors), label)

    def _fields(
        self,
        tokens: Optional[TextFieldTensors],
        premise: Optional[TextFieldTensors],
        hypothesis: Optional[TextFieldTensors],
    ) -> Tuple[TextFieldTensors, ...]:
        if self._pair:
            if premise is None or hypothesis is None:
                raise ConfigurationError(
                    "tune_frozen_head (pair: true) reads `premise` and `hypothesis` fields: set "
                    "the reader's pair_encoding to 'separate'."
                )
            return premise, hypothesis
        if tokens is None:
            raise ConfigurationError(
                "tune_frozen_head reads one `tokens` field; for a pair (premise and hypothesis) "
                "set pair: true."
            )
        return (tokens,)

    def _pool_tokens(self, field: TextFieldTensors) -> torch.Tensor:
        """`(batch_size, dim)`: the embedder's mixed sequence pooled."""
        # (batch_size, num_wordpieces, dim)
        embedded = self._text_field_embedder(field)
        mask = get_text_field_mask(field)
        if self._pooling == "first":
            return embedded[:, 0]
        weights = mask.to(embedded.dtype)
        return torch.einsum("btd,bt->bd", embedded, weights) / weights.sum(-1, keepdim=True).clamp(
            min=1
        )

    def _combine(self, vectors: torch.Tensor) -> torch.Tensor:
        """`(batch_size, num_sentences, dim)` -> one text's vector, or `[u; v; |u - v|; u * v]`."""
        if not self._pair:
            return vectors[:, 0]
        u, v = vectors[:, 0], vectors[:, 1]
        return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)


def _pooling_embedder(text_field_embedder: TextFieldEmbedder) -> Any:
    """The one token embedder with `pooled_layers` (`tune_transformer`)."""
    found = [
        module for module in text_field_embedder.children() if hasattr(module, "pooled_layers")
    ]
    others = [module for module in text_field_embedder.children() if module not in found]
    if len(found) != 1 or others:
        raise ConfigurationError(
            "tune_frozen_head with features 'pooled' needs exactly one token embedder of type "
            "tune_transformer (a frozen transformer); use features 'tokens' for others."
        )
    return found[0]


def _only_indexer(field: TextFieldTensors) -> Dict[str, torch.Tensor]:
    """The tensors of a text field's single indexer (`token_ids`, `mask`, `type_ids`, ...)."""
    if len(field) != 1:
        raise ConfigurationError(
            f"tune_frozen_head: a text field with {len(field)} indexers ({', '.join(field)}); "
            "a pooled head reads one (the transformer's)."
        )
    tensors = dict(next(iter(field.values())))
    tensors.pop("wordpiece_mask", None)
    tensors.pop("offsets", None)
    return tensors
