from typing import Any, Dict, List, Optional, Tuple, Union

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import TokenEmbedder
from allennlp.nn import util

from allennlp_tune.modules.feature_cache import FeatureCache
from allennlp_tune.modules.token_embedders.freezable import LayerGroups
from allennlp_tune.modules.token_embedders.tune_transformer import TuneTransformerEmbedder

POOLINGS = ("first", "mean", "max")


@TokenEmbedder.register("tune_transformer_mismatched")
class TuneTransformerMismatchedEmbedder(TokenEmbedder):
    """
    `tune_transformer` for word-level inputs: the layers are mixed at the wordpiece level, then
    each word's wordpieces are pooled into one vector. Use it with the
    `pretrained_transformer_mismatched` indexer (e.g. for tagging, where the paper's BERT NER
    takes the first wordpiece of every word).

    Modes, layer selection, scalar mix, freezing API and feature cache are those of
    `tune_transformer` (the cache holds wordpiece-level layers, so the pooling can change
    without invalidating it). The parameter names returned by `layer_groups()` are prefixed
    with `_matched_embedder.`, as in `named_parameters()`.

    Registered as a `TokenEmbedder` with name "tune_transformer_mismatched".

    ```jsonnet
    "token_embedders": {"tokens": {
        "type": "tune_transformer_mismatched",
        "model_name": "bert-base-cased",
        "mode": "fine_tuning",               // or "bitfit", or "lora" with "lora": {...}
        "pooling": "first",
    }}
    ```

    # Parameters

    model_name : `str`
        As in `tune_transformer`; the same as the indexer's.
    pooling : `str`, optional (default = `"first"`)
        How a word's wordpieces become one vector: `"first"` (the first wordpiece), `"mean"` or
        `"max"` (element-wise over the word's wordpieces). A word without wordpieces gets zeros.
    mode : `str`, optional (default = `"feature_extraction"`)
        `"feature_extraction"`, `"fine_tuning"`, `"bitfit"` or `"lora"`, as in `tune_transformer`.
    lora : `Dict[str, Any]`, optional (default = `None`)
        With `mode: "lora"`: `{"r": 8, "alpha": 16, "dropout": 0.1, "target_modules": null}`,
        as in `tune_transformer`.
    tuned_groups : `str`, optional (default = `"all"`)
        The layer groups that train (`"top:2"`, `"bottom:1"`, `"2-4"`, names), as in
        `tune_transformer`.
    layers : `Union[str, List[int]]`, optional (default = `"all"`)
    scalar_mix : `Dict[str, Any]`, optional (default = `None`)
    dropout : `float`, optional (default = `0.0`)
    max_length : `int`, optional (default = `None`)
    feature_cache : `Dict[str, Any]`, optional (default = `None`)
    sub_module, override_weights_file, override_weights_strip_prefix, load_weights, gradient_checkpointing, tokenizer_kwargs, transformer_kwargs, serialization_dir
        As in `tune_transformer`.

    The wordpiece-level embedder inside registers itself as the layer-group provider for the
    `discriminative` optimizer; this wrapper's freezing methods act on it, so calling them on
    both (as a callback that walks the model's modules does) is harmless.
    """  # noqa: E501

    def __init__(
        self,
        model_name: str,
        *,
        pooling: str = "first",
        mode: str = "feature_extraction",
        lora: Optional[Dict[str, Any]] = None,
        tuned_groups: str = "all",
        layers: Union[str, List[int]] = "all",
        scalar_mix: Optional[Dict[str, Any]] = None,
        dropout: float = 0.0,
        max_length: Optional[int] = None,
        feature_cache: Optional[Dict[str, Any]] = None,
        sub_module: Optional[str] = None,
        override_weights_file: Optional[str] = None,
        override_weights_strip_prefix: Optional[str] = None,
        load_weights: bool = True,
        gradient_checkpointing: Optional[bool] = None,
        tokenizer_kwargs: Optional[Dict[str, Any]] = None,
        transformer_kwargs: Optional[Dict[str, Any]] = None,
        serialization_dir: Optional[str] = None,
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ConfigurationError(
                f"tune_transformer_mismatched.pooling is {pooling!r}; expected one of "
                f"{', '.join(POOLINGS)} (first wordpiece, mean or max over a word's wordpieces)."
            )
        self._pooling = pooling
        self._matched_embedder = TuneTransformerEmbedder(
            model_name,
            mode=mode,
            lora=lora,
            tuned_groups=tuned_groups,
            layers=layers,
            scalar_mix=scalar_mix,
            dropout=dropout,
            max_length=max_length,
            feature_cache=feature_cache,
            sub_module=sub_module,
            override_weights_file=override_weights_file,
            override_weights_strip_prefix=override_weights_strip_prefix,
            load_weights=load_weights,
            gradient_checkpointing=gradient_checkpointing,
            tokenizer_kwargs=tokenizer_kwargs,
            transformer_kwargs=transformer_kwargs,
            serialization_dir=serialization_dir,
            _owner="tune_transformer_mismatched",
        )

    def get_output_dim(self) -> int:
        return self._matched_embedder.get_output_dim()

    def forward(
        self,
        token_ids: torch.LongTensor,
        mask: torch.BoolTensor,
        offsets: torch.LongTensor,
        wordpiece_mask: torch.BoolTensor,
        type_ids: Optional[torch.LongTensor] = None,
        segment_concat_mask: Optional[torch.BoolTensor] = None,
    ) -> torch.Tensor:  # type: ignore
        """
        Same inputs as AllenNLP's `pretrained_transformer_mismatched` embedder; returns
        `(batch_size, num_words, hidden_size)`.
        """
        # Shape: (batch_size, num_wordpieces, embedding_size)
        embeddings = self._matched_embedder(
            token_ids, wordpiece_mask, type_ids=type_ids, segment_concat_mask=segment_concat_mask
        )
        # Shapes: (batch_size, num_words, max_span_width, embedding_size), (..., max_span_width)
        span_embeddings, span_mask = util.batched_span_select(embeddings.contiguous(), offsets)
        span_mask = span_mask.unsqueeze(-1)
        # Shape: (batch_size, num_words, 1)
        span_lengths = span_mask.sum(2)
        if self._pooling == "first":
            words = span_embeddings[:, :, 0, :]
        elif self._pooling == "mean":
            words = (span_embeddings * span_mask).sum(2) / span_lengths.clamp_min(1)
        else:
            words = span_embeddings.masked_fill(~span_mask, torch.finfo(embeddings.dtype).min)
            words = words.max(2).values
        return words.masked_fill(span_lengths == 0, 0.0)

    # ---- the freezing API, delegated to the wordpiece-level embedder -------------------------

    def layer_groups(self) -> LayerGroups:
        return [
            (group_name, [(f"_matched_embedder.{name}", parameter) for name, parameter in group])
            for group_name, group in self._matched_embedder.layer_groups()
        ]

    def layer_group_names(self) -> List[str]:
        return self._matched_embedder.layer_group_names()

    def scalar_mix_parameters(self) -> List[Tuple[str, torch.nn.Parameter]]:
        return [
            (f"_matched_embedder.{name}", parameter)
            for name, parameter in self._matched_embedder.scalar_mix_parameters()
        ]

    @property
    def encoder(self) -> torch.nn.Module:
        return self._matched_embedder.encoder

    @property
    def wordpiece_embedder(self) -> TuneTransformerEmbedder:
        """The wordpiece-level `tune_transformer` inside (its mix, cache and groups)."""
        return self._matched_embedder

    def trainable_groups(self) -> List[int]:
        return self._matched_embedder.trainable_groups()

    @property
    def mode(self) -> str:
        return self._matched_embedder.mode

    def mode_parameters(self) -> List[Tuple[str, torch.nn.Parameter]]:
        return [
            (f"_matched_embedder.{name}", parameter)
            for name, parameter in self._matched_embedder.mode_parameters()
        ]

    def stored_parameter_names(self) -> List[str]:
        return [
            f"_matched_embedder.{name}" for name in self._matched_embedder.stored_parameter_names()
        ]

    @property
    def is_frozen(self) -> bool:
        return self._matched_embedder.is_frozen

    def freeze(self) -> None:
        self._matched_embedder.freeze()

    def unfreeze(self, top_k_groups: Optional[int] = None) -> None:
        self._matched_embedder.unfreeze(top_k_groups)

    @property
    def feature_cache(self) -> Optional[FeatureCache]:
        return self._matched_embedder.feature_cache
