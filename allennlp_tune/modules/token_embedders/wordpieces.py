"""
`Wordpieces`: one batch of the `pretrained_transformer` indexer's output, the four tensors the
transformer embedders' `forward` takes, kept together on their way through the embedder's
steps (folding, the caches, the encoder call).
"""

from typing import NamedTuple, Optional

import torch


class Wordpieces(NamedTuple):
    """
    The inputs of `TuneTransformerEmbedder.forward` (and of AllenNLP's `pretrained_transformer`
    embedder), checked by `TuneTransformerEmbedder._checked_inputs`.

    # Parameters

    token_ids : `torch.LongTensor`
        Shape: `(batch_size, num_segment_concat_wordpieces)`: segments of at most `max_length`
        concatenated when the indexer has a `max_length`, else `(batch_size, num_wordpieces)`.
    mask : `torch.BoolTensor`
        Shape: `(batch_size, num_wordpieces)`, the unfolded sequence.
    type_ids : `torch.LongTensor`, optional (default = `None`)
        Shape: as `token_ids`; `None` where the encoder has no token types.
    segment_concat_mask : `torch.BoolTensor`, optional (default = `None`)
        Shape: as `token_ids`; given exactly when the indexer has a `max_length`.
    """

    token_ids: torch.LongTensor
    mask: torch.BoolTensor
    type_ids: Optional[torch.LongTensor] = None
    segment_concat_mask: Optional[torch.BoolTensor] = None

    def rows(self, index: torch.Tensor, input_width: int, width: int) -> "Wordpieces":
        """
        The rows `index` alone, cut to `input_width` wordpieces (`token_ids` and the other
        folded-form tensors) and `width` (`mask`); all-zero type ids become `None`.
        """
        type_ids = self.type_ids[index, :input_width] if self.type_ids is not None else None
        if type_ids is not None and type_ids.max() == 0:
            type_ids = None
        segments = self.segment_concat_mask
        return Wordpieces(
            self.token_ids[index, :input_width],
            self.mask[index, :width],
            type_ids,
            segments[index, :input_width] if segments is not None else None,
        )
