"""
Lets ESIM (`tune_esim`, `esim_regression`) read a jointly encoded pair. Not registered itself.

The paper extracts frozen BERT features "for both sentences jointly" (`[CLS] a [SEP] b [SEP]`,
the reader's `pair_encoding: "joint"`) and feeds them to ESIM, which needs the two sentences as
two sequences. `JointPairEmbedder` wraps the model's text field embedder: for a joint `tokens`
field it runs the embedder once over the whole pair, then splits the states by token type id
(type 0: `[CLS] a [SEP]`, type 1: `b [SEP]`), each part packed to the left with its own mask.
ESIM's forward then receives the two parts as if they were separately embedded sentences.

Tokenizers without token type ids (RoBERTa, XLM-R: `<s> a </s></s> b </s>`, every type id 0)
are split at the model's separator tokens instead: `<s> a </s>` (through the first separator)
and `b </s>` (after the separators that follow a, through the final one), the same parts as
BERT's. The separator id is the model's tokenizer's `sep_token_id` (`separator_id()`).

With `max_length` on the indexer and embedder (long pairs folded into segments), the indexer's
type ids follow the folded sequence while the embedder's states and the mask follow the pair's
own wordpieces; the type ids are mapped back to the pair's layout before splitting. Folded pairs
without type ids are not supported (use the reader's pair_encoding 'separate').
"""

import logging
from typing import Dict, List, Optional, Tuple

import torch
from allennlp.common import cached_transformers
from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors
from allennlp.modules import TextFieldEmbedder
from allennlp.modules.token_embedders import PretrainedTransformerEmbedder
from allennlp.nn.util import batched_index_select, get_text_field_mask

logger = logging.getLogger(__name__)

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
        # Found on first use by `separator_id()`; not a parameter or buffer (no state change).
        self._separator_id: Optional[int] = None

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
        # Shape: (batch_size, num_wordpieces)
        first_mask = mask & ~second_mask
        # Shape: (batch_size,); rows with type ids (BERT and family) are split by them, as ever.
        typed = second_mask.any(dim=1)
        if not typed.all():
            # Every type id of these rows is 0 (RoBERTa, XLM-R): split at the separators.
            if _segment_concat_mask(tokens) is not None:
                raise ConfigurationError(
                    "A jointly encoded pair has no token type ids (the tokenizer gives none, e.g. "
                    "RoBERTa or XLM-R) and is folded (max_length on the indexer and embedder), so "
                    "it cannot be split into its two sentences for ESIM: max_length with "
                    "RoBERTa-style tokenizers needs the reader's pair_encoding 'separate'."
                )
            # Shape: (batch_size, num_wordpieces) each
            separator_first, separator_second = _separator_masks(
                _indexer_tensor(tokens, "token_ids", "split at its separators"),
                mask,
                self.separator_id(),
            )
            # Shape: (batch_size, 1)
            untyped = ~typed.unsqueeze(1)
            first_mask = torch.where(untyped, separator_first, first_mask)
            second_mask = torch.where(untyped, separator_second, second_mask)
        # Shape: (batch_size, num_wordpieces, embedding_dim)
        states = self.embedder(tokens)
        first = _part(states, first_mask)
        second = _part(states, second_mask)
        return first, second

    def separator_id(self) -> int:
        """
        The id of the separator token between and after a jointly encoded pair's sentences
        (`[SEP]` of BERT, `</s>` of RoBERTa and XLM-R), from the wrapped transformer embedder.
        """
        if self._separator_id is None:
            embedders = [
                module
                for module in self.embedder.modules()
                if isinstance(module, PretrainedTransformerEmbedder)
            ]
            found = sorted({_embedder_separator_id(embedder) for embedder in embedders})
            if len(found) != 1:
                raise ConfigurationError(
                    "A jointly encoded pair without token type ids is split at the model's "
                    "separator tokens, but the text field embedder has "
                    + (
                        "no transformer embedder (such as tune_transformer)"
                        if not embedders
                        else f"transformer embedders with different separator ids {found}"
                    )
                    + " to take the separator from. Use the reader's pair_encoding 'separate'."
                )
            self._separator_id = found[0]
        return self._separator_id


def _embedder_separator_id(embedder: PretrainedTransformerEmbedder) -> int:
    """
    The separator id of one transformer embedder's model.

    The tokenizer is what builds the pair (`build_inputs_with_special_tokens`: `[CLS] a [SEP] b
    [SEP]`, `<s> a </s></s> b </s>`), so its `sep_token_id` is by definition the id to split at;
    it is loaded through `cached_transformers`, as the reader's tokenizer and indexer load it, so
    usually from the cache. tune_transformer records its model name and tokenizer options;
    AllenNLP's own embedder does not, and then the model's `name_or_path` (the name it was loaded
    from) is tried. The config comes last: it rarely names the separator (`sep_token_id` is
    unset for BERT and RoBERTa alike), and its `eos_token_id` is the separator only for the
    `<s> ... </s>` families (RoBERTa's and XLM-R's 2 is `</s>`, their separator; BERT's config
    has none, and another model's eos need not be its separator), so it is a fallback only.
    """
    config = embedder.config
    names: List[Tuple[str, Dict]] = []
    if getattr(embedder, "_model_name", None):
        names.append((embedder._model_name, getattr(embedder, "_tokenizer_kwargs", None) or {}))
    if getattr(config, "name_or_path", None):
        names.append((config.name_or_path, {}))
    for name, kwargs in names:
        try:
            # The reader's PretrainedTransformerTokenizer loads it with these arguments.
            tokenizer = cached_transformers.get_tokenizer(name, add_special_tokens=False, **kwargs)
        except (OSError, ValueError) as error:
            logger.warning("Could not load the tokenizer of %s for its separator: %s", name, error)
            continue
        if tokenizer.sep_token_id is not None:
            return int(tokenizer.sep_token_id)
    for key in ("sep_token_id", "eos_token_id"):
        if getattr(config, key, None) is not None:
            return int(getattr(config, key))
    raise ConfigurationError(
        f"Found no separator token id for {type(embedder.transformer_model).__name__}: neither "
        "its tokenizer's sep_token_id nor its config's sep_token_id / eos_token_id, so a jointly "
        "encoded pair without token type ids cannot be split. Use the reader's pair_encoding "
        "'separate'."
    )


def _separator_masks(
    token_ids: torch.Tensor, mask: torch.BoolTensor, separator_id: int
) -> Tuple[torch.BoolTensor, torch.BoolTensor]:
    """
    The two sentences of `<s> a </s></s> b </s>` rows, split at the separators: `<s> a </s>`
    (through the first separator) and `b </s>` (after the first separator and those right after
    it, through the final one). An empty b leaves the final separator, as BERT's type 1 does.

    # Parameters

    token_ids : `torch.Tensor`
        Shape: `(batch_size, num_wordpieces)`, the joint field's wordpiece ids (not folded).
    mask : `torch.BoolTensor`
        Shape: `(batch_size, num_wordpieces)`, the field's mask.
    separator_id : `int`
        The model's separator token id.

    # Returns

    `Tuple[torch.BoolTensor, torch.BoolTensor]`
        Shape: `(batch_size, num_wordpieces)` each.
    """
    # Shape: (batch_size, num_wordpieces)
    is_separator = mask & (token_ids == separator_id)
    # Shape: (batch_size,)
    counts = is_separator.sum(dim=1)
    for row, count in enumerate(counts.tolist()):
        if count < 2:
            raise ConfigurationError(
                f"A jointly encoded pair without token type ids (row {row} of the batch) has "
                + ("no separator" if count == 0 else "only one separator")
                + f" token (id {separator_id}), so it cannot be split into its two sentences "
                "for ESIM; a pair reads `<s> a </s></s> b </s>` (or `[CLS] a [SEP] b [SEP]`). "
                "Use the model's own tokenizer and indexer, or the reader's pair_encoding "
                "'separate'."
            )
    width = mask.size(1)
    # Shape: (1, num_wordpieces)
    positions = torch.arange(width, device=mask.device).unsqueeze(0)
    # Shape: (batch_size,); argmax gives the first maximal position.
    first_separator = is_separator.long().argmax(dim=1)
    # Shape: (batch_size,)
    last_separator = width - 1 - is_separator.long().flip(1).argmax(dim=1)
    # Shape: (batch_size, num_wordpieces): the non-separators after the first separator.
    after = ~is_separator & (positions > first_separator.unsqueeze(1))
    # Shape: (batch_size,): where b starts; at the final separator when b is empty.
    second_start = torch.where(after.any(dim=1), after.long().argmax(dim=1), width)
    second_start = torch.minimum(second_start, last_separator)
    # Shape: (batch_size, num_wordpieces)
    first = mask & (positions <= first_separator.unsqueeze(1))
    # Shape: (batch_size, num_wordpieces)
    second = (
        mask & (positions >= second_start.unsqueeze(1)) & (positions <= last_separator.unsqueeze(1))
    )
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
    type_ids = _indexer_tensor(tokens, "type_ids", "split into its two sentences")
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


def _indexer_tensor(tokens: TextFieldTensors, key: str, needed_for: str) -> torch.Tensor:
    """The indexer's `key` tensor (`type_ids`, `token_ids`) of a joint field, or a clear error."""
    for indexer_tensors in tokens.values():
        if key in indexer_tensors:
            return indexer_tensors[key]
    raise ConfigurationError(
        f"ESIM got a joint `tokens` field whose indexer gives {_keys(tokens)} but no {key!r}, "
        f"so the pair cannot be {needed_for}. Use a 'pretrained_transformer' indexer (joint "
        "encoding), or the reader's pair_encoding 'separate'."
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
