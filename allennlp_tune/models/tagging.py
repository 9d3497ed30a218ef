"""
What the two taggers (`tune_tagger`, `tune_crf_tagger`) share: building the word-level embedder
(optionally from the first wordpiece of each word), the default encoder, and checking
`label_encoding` against the tags.
Not registered itself.
"""

import inspect
from typing import Any, Dict, Optional, Union

import torch
from allennlp.common import Lazy
from allennlp.common.checks import ConfigurationError, check_dimensions_match
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.modules import Seq2SeqEncoder, TextFieldEmbedder
from allennlp.modules.seq2seq_encoders import PassThroughEncoder
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder
from allennlp.nn.util import batched_index_select

from allennlp_tune.host_access import token_embedders_of
from allennlp_tune.models.input_size import build_reading

# The `dataset_reader.convert_to_coding_scheme` of `tune_conll2003` -> the span metric's name.
ENCODING_OF_READER_SCHEME = (
    "null (IOB1 eng.* files) -> IOB1, 'IOB2' or IOB2 files -> BIO, 'BIOUL' -> BIOUL"
)


class FirstWordpieceEmbedder(TextFieldEmbedder):
    """
    Word vectors from a wordpiece-level embedder: embeds all wordpieces, optionally runs a
    `Seq2SeqEncoder` over all of them, then keeps the state of each word's first wordpiece.

    This is the paper's BERT NER network ("run the biLSTM layers over all word pieces before
    taking the LSTM states of the first word piece in each word"; without the encoder, BERT's
    fine-tuning head "first word piece + softmax"). It needs the `pretrained_transformer_mismatched`
    token indexer, whose `offsets` map words to wordpieces, and a wordpiece-level token embedder
    (`pretrained_transformer`, `tune_transformer`), which gets the indexer's wordpiece tensors.
    Words without wordpieces (offsets `(-1, -1)`) get a zero vector.
    """

    def __init__(
        self,
        wordpiece_embedder: TextFieldEmbedder,
        wordpiece_encoder: Optional[Seq2SeqEncoder] = None,
    ) -> None:
        super().__init__()
        if isinstance(wordpiece_embedder, BasicTextFieldEmbedder):
            embedders = token_embedders_of(wordpiece_embedder)
            if len(embedders) != 1:
                raise ConfigurationError(
                    "model.first_wordpiece needs exactly one token embedder (a wordpiece-level "
                    f"transformer), got {sorted(embedders)}: wordpiece states cannot be "
                    "concatenated with word-level ones."
                )
            ((name, embedder),) = embedders.items()
            if "offsets" in inspect.signature(embedder.forward).parameters:
                raise ConfigurationError(
                    f"model.first_wordpiece is true, but token embedder {name!r} "
                    f"({type(embedder).__name__}) already pools wordpieces into words. Use the "
                    "wordpiece-level embedder ('pretrained_transformer' or 'tune_transformer') "
                    "with the 'pretrained_transformer_mismatched' indexer, or set "
                    "first_wordpiece: false."
                )
        if wordpiece_encoder is not None:
            check_dimensions_match(
                wordpiece_embedder.get_output_dim(),
                wordpiece_encoder.get_input_dim(),
                "text_field_embedder output dim",
                "wordpiece_encoder input dim",
            )
        self._wordpiece_embedder = wordpiece_embedder
        self._wordpiece_encoder = wordpiece_encoder

    def get_output_dim(self) -> int:
        if self._wordpiece_encoder is not None:
            return self._wordpiece_encoder.get_output_dim()
        return self._wordpiece_embedder.get_output_dim()

    def forward(  # type: ignore[override]
        self, text_field_input: TextFieldTensors, num_wrapping_dims: int = 0, **kwargs
    ) -> torch.Tensor:
        if len(text_field_input) != 1:
            raise ConfigurationError(
                "model.first_wordpiece needs exactly one token indexer, got "
                f"{sorted(text_field_input)}."
            )
        ((key, tensors),) = text_field_input.items()
        if "offsets" not in tensors or "wordpiece_mask" not in tensors:
            raise ConfigurationError(
                f"model.first_wordpiece is true, but token indexer {key!r} gives "
                f"{sorted(tensors)} and no word-to-wordpiece 'offsets'. Use the "
                "'pretrained_transformer_mismatched' token indexer in the dataset_reader."
            )
        wordpiece_mask = tensors["wordpiece_mask"]
        wordpieces: Dict[str, torch.Tensor] = {
            name: tensor
            for name, tensor in tensors.items()
            if name not in ("offsets", "wordpiece_mask", "mask")
        }
        wordpieces["mask"] = wordpiece_mask
        states = self._wordpiece_embedder({key: wordpieces}, **kwargs)
        if self._wordpiece_encoder is not None:
            states = self._wordpiece_encoder(states, wordpiece_mask)
        starts = tensors["offsets"][..., 0]
        has_wordpiece = (starts >= 0) & tensors["mask"].bool()
        words = batched_index_select(states.contiguous(), starts.clamp(min=0))
        return words * has_wordpiece.unsqueeze(-1)


def word_embedder(
    text_field_embedder: TextFieldEmbedder,
    first_wordpiece: bool,
    wordpiece_encoder: Union[Lazy[Seq2SeqEncoder], Seq2SeqEncoder, None],
) -> TextFieldEmbedder:
    """The tagger's word-level embedder: the configured one, or its first-wordpiece wrapper."""
    if first_wordpiece:
        return FirstWordpieceEmbedder(text_field_embedder, wordpiece_encoder)
    if wordpiece_encoder is not None:
        raise ConfigurationError(
            "model.wordpiece_encoder is set but model.first_wordpiece is false: the encoder "
            "over wordpieces is only used when words are taken from their first wordpiece. Set "
            "first_wordpiece: true (with the 'pretrained_transformer_mismatched' indexer), or "
            "move the encoder to model.encoder (over words)."
        )
    return text_field_embedder


def tagger_arguments(
    vocab: Vocabulary,
    text_field_embedder: TextFieldEmbedder,
    encoder: Union[Lazy[Seq2SeqEncoder], Seq2SeqEncoder, None],
    first_wordpiece: bool,
    wordpiece_encoder: Union[Lazy[Seq2SeqEncoder], Seq2SeqEncoder, None],
    label_encoding: Optional[str],
    label_namespace: str,
) -> Dict[str, Any]:
    """
    What `tune_tagger` and `tune_crf_tagger` pass to their AllenNLP parents: the word-level
    embedder, the encoder (`pass_through` when none is given) and the checked label encoding.

    The encoders come from the config as `Lazy` and are built here with their input size taken
    from what they read (`build_reading`): `wordpiece_encoder` from `text_field_embedder`,
    `encoder` from the word vectors (the embedder's, or the `wordpiece_encoder`'s output).
    """
    check_label_encoding(vocab, label_namespace, label_encoding)
    if first_wordpiece:
        wordpiece_encoder = build_reading(
            wordpiece_encoder,
            text_field_embedder.get_output_dim(),
            "wordpiece_encoder",
            "text_field_embedder",
        )
    # Without first_wordpiece, a wordpiece_encoder is refused here, before it is built.
    embedder = word_embedder(text_field_embedder, first_wordpiece, wordpiece_encoder)
    source = (
        "wordpiece_encoder"
        if first_wordpiece and wordpiece_encoder is not None
        else "text_field_embedder"
    )
    encoder = build_reading(encoder, embedder.get_output_dim(), "encoder", source)
    return {
        "text_field_embedder": embedder,
        "encoder": PassThroughEncoder(embedder.get_output_dim()) if encoder is None else encoder,
        "label_encoding": label_encoding,
        "label_namespace": label_namespace,
    }


class TaggerInputs:
    """
    The constructor `tune_tagger` and `tune_crf_tagger` share: placed before their AllenNLP
    parent (`class TuneTagger(TaggerInputs, SimpleTagger)`), it takes the parameters of
    `tagger_arguments` and passes the parent what they build, with every other parameter as
    given. AllenNLP's `from_params` reads its parameters, and through `**kwargs` the parent's
    (the first `FromParams` base after it).
    """

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        encoder: Optional[Lazy[Seq2SeqEncoder]] = None,
        first_wordpiece: bool = False,
        wordpiece_encoder: Optional[Lazy[Seq2SeqEncoder]] = None,
        label_encoding: Optional[str] = None,
        label_namespace: str = "labels",
        **kwargs,
    ) -> None:
        arguments = tagger_arguments(
            vocab,
            text_field_embedder,
            encoder,
            first_wordpiece,
            wordpiece_encoder,
            label_encoding,
            label_namespace,
        )
        super().__init__(vocab, **arguments, **kwargs)  # type: ignore[call-arg]


def check_label_encoding(
    vocab: Vocabulary, label_namespace: str, label_encoding: Optional[str]
) -> None:
    """
    Fails early when the tags are BIOUL but the span metric would read them as IOB1/BIO (or the
    other way round), which would silently give wrong span F1.
    """
    if label_encoding is None:
        return
    tags = vocab.get_token_to_index_vocabulary(label_namespace)
    prefixes = {tag.split("-", 1)[0] for tag in tags if "-" in tag}
    bioul_only = sorted(prefixes & {"U", "L"})
    if label_encoding in ("IOB1", "BIO") and bioul_only:
        raise ConfigurationError(
            f"model.label_encoding is {label_encoding!r}, but the tags in namespace "
            f"{label_namespace!r} have {'/'.join(bioul_only)}- prefixes (BIOUL). Set "
            "model.label_encoding to match the reader's convert_to_coding_scheme: "
            f"{ENCODING_OF_READER_SCHEME}."
        )
    # Every BIOUL span has a U- or an L- tag, so entity tags without either are not BIOUL.
    if label_encoding == "BIOUL" and prefixes and not prefixes & {"U", "L"}:
        raise ConfigurationError(
            f"model.label_encoding is 'BIOUL', but no tag in namespace {label_namespace!r} has a "
            "U- or L- prefix: the tags are IOB1 or IOB2. Set model.label_encoding to match the "
            f"reader's convert_to_coding_scheme: {ENCODING_OF_READER_SCHEME}."
        )
