"""
Lets ESIM (`tune_esim`, `esim_regression`) read a jointly encoded pair. Not registered itself.

The paper extracts frozen BERT features "for both sentences jointly" (`[CLS] a [SEP] b [SEP]`,
the reader's `pair_encoding: "joint"`) and feeds them to ESIM, which needs the two sentences as
two sequences. `JointPairEmbedder` wraps the model's text field embedder: for a joint `tokens`
field it runs the embedder once over the whole pair, then splits the states by token type id
(type 0: `[CLS] a [SEP]`, type 1: `b [SEP]`), each part packed to the left with its own mask.
ESIM's forward then receives the two parts as if they were separately embedded sentences.

With `max_length` on the indexer and embedder (long pairs folded into segments), the indexer's
type ids follow the folded sequence while the embedder's states and the mask follow the pair's
own wordpieces; the type ids are mapped back to the pair's layout before splitting.
"""

from typing import Dict, Optional, Tuple

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors
from allennlp.modules import TextFieldEmbedder
from allennlp.nn.util import batched_index_select, get_text_field_mask

# The key under which already embedded states travel through ESIM's forward.
PRECOMPUTED = "_joint_pair_part"


class JointPairEmbedder(TextFieldEmbedder):
    """
    Behaves as `embedder` for ordinary text fields; `split(tokens)` embeds a joint pair and
    returns the two parts as text-field-like inputs that this embedder passes through.
    """

    def __init__(self, embedder: TextFieldEmbedder) -> None:
        super().__init__()
        self.embedder = embedder

    def get_output_dim(self) -> int:
        return self.embedder.get_output_dim()

    def forward(  # type: ignore[override]
        self, text_field_input: TextFieldTensors, num_wrapping_dims: int = 0, **kwargs
    ) -> torch.Tensor:
        if PRECOMPUTED in text_field_input:
            return text_field_input[PRECOMPUTED]["states"]
        return self.embedder(text_field_input, num_wrapping_dims, **kwargs)

    def split(self, tokens: TextFieldTensors) -> Tuple[TextFieldTensors, TextFieldTensors]:
        # Shape: (batch_size, num_wordpieces)
        mask = get_text_field_mask(tokens)
        # Shape: (batch_size, num_wordpieces)
        second_mask = _second_sentence_mask(tokens, mask)
        if not second_mask.any(dim=1).all():
            raise ConfigurationError(
                "A jointly encoded pair has no token with type id 1, so it cannot be split into "
                "its two sentences for ESIM. The tokenizer gives no token type ids (e.g. "
                "RoBERTa): use the reader's pair_encoding 'separate' instead."
            )
        # Shape: (batch_size, num_wordpieces, embedding_dim)
        states = self.embedder(tokens)
        first = _part(states, mask & ~second_mask)
        second = _part(states, second_mask)
        return first, second


def _second_sentence_mask(tokens: TextFieldTensors, mask: torch.BoolTensor) -> torch.BoolTensor:
    """
    The positions of the pair's second sentence (`b [SEP]`, token type 1), aligned with `mask`.

    # Parameters

    tokens : `TextFieldTensors`
        A joint `[CLS] a [SEP] b [SEP]` field from a `pretrained_transformer` indexer.
    mask : `torch.BoolTensor`
        Shape: `(batch_size, num_wordpieces)`, the field's mask.

    # Returns

    `torch.BoolTensor`
        Shape: `(batch_size, num_wordpieces)`.
    """
    type_ids = _type_ids(tokens)
    segment_concat_mask = _segment_concat_mask(tokens)
    if segment_concat_mask is None:
        return mask & (type_ids == 1)
    # The indexer has max_length: its type ids follow the folded sequence `[CLS] a [SEP] b`
    # cut into segments of max_length, each wrapped in its own [CLS] ... [SEP] of type 0 (the
    # pair's final [SEP] among them), so they are longer than the mask and misplaced. The
    # pair's wordpieces keep their order, and the second sentence is its tail: the wordpieces
    # of type 1 (b's), then the final [SEP], as without folding.
    # Shape: (batch_size,)
    num_second = ((type_ids == 1) & segment_concat_mask).sum(dim=1)
    lengths = mask.sum(dim=1)
    start = torch.where(num_second > 0, lengths - num_second - 1, lengths)
    # Shape: (batch_size, num_wordpieces)
    positions = torch.arange(mask.size(1), device=mask.device).unsqueeze(0)
    return mask & (positions >= start.unsqueeze(1))


def _type_ids(tokens: TextFieldTensors) -> torch.Tensor:
    for indexer_tensors in tokens.values():
        if "type_ids" in indexer_tensors:
            return indexer_tensors["type_ids"]
    raise ConfigurationError(
        f"ESIM got a joint `tokens` field whose indexer gives {_keys(tokens)} but no 'type_ids', "
        "so the pair cannot be split into its two sentences. Use a 'pretrained_transformer' "
        "indexer (joint encoding), or the reader's pair_encoding 'separate'."
    )


def _segment_concat_mask(tokens: TextFieldTensors) -> Optional[torch.BoolTensor]:
    """The indexer's mask of the folded sequence, given when it has `max_length`."""
    for indexer_tensors in tokens.values():
        if "segment_concat_mask" in indexer_tensors:
            return indexer_tensors["segment_concat_mask"]
    return None


def _keys(tokens: TextFieldTensors) -> str:
    return ", ".join(sorted(key for tensors in tokens.values() for key in tensors))


def _part(states: torch.Tensor, keep: torch.BoolTensor) -> Dict[str, Dict[str, torch.Tensor]]:
    """The positions `keep` of each row, moved to the left in order, with their mask."""
    lengths = keep.sum(dim=1)
    length = max(int(lengths.max()), 1)
    # A stable sort of "not kept" puts the kept positions first, in their original order.
    order = torch.sort((~keep).long(), dim=1, stable=True)[1][:, :length]
    part_mask = torch.arange(length, device=keep.device).unsqueeze(0) < lengths.unsqueeze(1)
    part = batched_index_select(states.contiguous(), order) * part_mask.unsqueeze(-1)
    return {PRECOMPUTED: {"states": part, "mask": part_mask}}


def pair_inputs(
    embedder: JointPairEmbedder,
    premise: Optional[TextFieldTensors],
    hypothesis: Optional[TextFieldTensors],
    tokens: Optional[TextFieldTensors],
) -> Tuple[TextFieldTensors, TextFieldTensors]:
    """ESIM's two inputs: the separate fields as given, or the split joint `tokens` field."""
    if tokens is not None:
        return embedder.split(tokens)
    if premise is None or hypothesis is None:
        raise ConfigurationError(
            "ESIM needs either `premise` and `hypothesis` fields (the reader's pair_encoding "
            "'separate') or one joint `tokens` field (pair_encoding 'joint'), but got neither."
        )
    return premise, hypothesis
