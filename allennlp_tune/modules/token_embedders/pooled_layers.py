"""
`PooledLayersMixin`: a frozen transformer embedder's per-layer pooled sentence vectors, through
the pooled-feature cache (`feature_cache/pooled.py`), and their scalar mix. Mixed into
`tune_transformer` for the light frozen heads (`tune_frozen_head`).
"""

from typing import Optional

import torch
from allennlp.common.checks import ConfigurationError

from allennlp_tune.modules.feature_cache.pooled import (
    POOLED_SELECTION,
    POOLINGS,
    pool_layers,
    pooled_through_cache,
)
from allennlp_tune.modules.feature_cache.store import row_keys


class PooledLayersMixin:
    """
    Needs the embedder's `_checked_inputs`, `_row_inputs`, `_cache_key_prefix`, `_mix_layers`,
    and its `_layers`, `_selection`, `_scalar_mix`, `_dropout`, `_feature_cache`, `_owner`,
    `output_dim`, `is_frozen` and `mode`.
    """

    def pooled_layers(
        self,
        token_ids: torch.LongTensor,
        mask: torch.BoolTensor,
        type_ids: Optional[torch.LongTensor] = None,
        segment_concat_mask: Optional[torch.BoolTensor] = None,
    ) -> torch.Tensor:
        """
        Every selected layer of each sequence pooled, through the pooled-feature cache
        (`feature_cache/pooled.py`; computed, through float16, without a cache), for heads that
        pool before anything else (`tune_frozen_head`). Same inputs as `forward`. Frozen
        (`feature_extraction`) only: the pooled vectors are constants of the encoder.

        # Returns

        `(batch_size, 2, num_selected_layers, dim)` on `token_ids`' device: the mean over each
        sequence's wordpieces, then its first wordpiece (`POOLINGS`). `mix_pooled` mixes them.
        """
        if not self.is_frozen:
            raise ConfigurationError(
                f"{self._owner}: pooled layers are cached features of a frozen encoder, but its "
                f"mode is {self.mode!r}; use mode feature_extraction for a frozen head."
            )
        inputs = self._checked_inputs(token_ids, mask, type_ids, segment_concat_mask)
        input_lengths, lengths, compute = self._row_inputs(inputs)
        keys = row_keys(
            self._cache_key_prefix(POOLED_SELECTION + self._selection),
            token_ids,
            inputs.type_ids,
            input_lengths,
        )
        pooled = pooled_through_cache(
            self._feature_cache,
            keys,
            (len(POOLINGS), len(self._layers), self.output_dim),
            lambda rows: pool_layers(compute(rows), mask[rows, : max(lengths[r] for r in rows)]),
        )
        return pooled.to(token_ids.device)

    def mix_pooled(self, pooled: torch.Tensor) -> torch.Tensor:
        """
        `pooled` `(..., num_selected_layers, dim)` (one pooling of `pooled_layers`) mixed with
        this embedder's scalar mix, `(..., dim)`: what pooling `forward`'s output gives, for mean
        and first-token pooling (`feature_cache/pooled.py` says why). Refused with the mix's
        layer norm or with dropout, where the two differ.
        """
        if self._scalar_mix is not None and self._scalar_mix.do_layer_norm:
            raise ConfigurationError(
                f"{self._owner}: scalar_mix.do_layer_norm normalises each layer over the whole "
                "sequence, so mixing pooled layers would differ from pooling the mix; leave "
                "do_layer_norm out for a pooled head."
            )
        if self._dropout.p:
            raise ConfigurationError(
                f"{self._owner}: dropout {self._dropout.p} drops out each wordpiece of the mixed "
                "sequence, which pooled layers cannot reproduce; set the embedder's dropout to 0 "
                "and the head's dropout instead."
            )
        if pooled.size(-2) != len(self._layers):
            raise ConfigurationError(
                f"{self._owner}: {pooled.size(-2)} pooled layers given, {len(self._layers)} "
                "selected."
            )
        return self._mix_layers(pooled.movedim(-2, 0), mask=None)  # type: ignore[arg-type]
