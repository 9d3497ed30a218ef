from typing import Dict, Optional

import torch
from allennlp.data import TextFieldTensors
from allennlp.models.model import Model
from allennlp.models.simple_tagger import SimpleTagger
from allennlp.nn.util import get_text_field_mask

from allennlp_tune.models.tagging import TaggerInputs


@Model.register("tune_tagger")
class TuneTagger(TaggerInputs, SimpleTagger):
    """
    AllenNLP's `simple_tagger` (a softmax over each word's vector) with the paper's BERT NER
    networks: words can be represented by their *first wordpiece*, optionally after an encoder
    that runs over all wordpieces.

    - BERT feature extraction (paper, appendix A.1): `first_wordpiece: true`, a two-layer BiLSTM
      as `wordpiece_encoder`, softmax.
    - BERT fine-tuning: `first_wordpiece: true`, no encoder: first wordpiece + softmax.

    With `first_wordpiece: false` it is `simple_tagger` with an optional `encoder`. Its default
    predictor is `tune_sentence_tagger` (`{"tokens": [...]}` or `{"sentence": ...}`), which needs
    no spaCy model. Primary metric: `f1-measure-overall` (span F1, with `label_encoding`), e.g.
    `"validation_metric": "+f1-measure-overall"`; also `accuracy` and `accuracy3`.

    Registered as a `Model` with name "tune_tagger".

    ```jsonnet
    "dataset_reader": {"type": "tune_conll2003", "coding_scheme": "IOB1",
                       "convert_to_coding_scheme": "IOB2",
                       "token_indexers": {"tokens": {"type": "pretrained_transformer_mismatched",
                                                     "model_name": "bert-base-cased"}}},
    "model": {
      "type": "tune_tagger",
      "text_field_embedder": {"token_embedders": {"tokens": {
          "type": "tune_transformer", "model_name": "bert-base-cased",
          "mode": "feature_extraction"}}},
      "first_wordpiece": true,
      // no input_size: it is the text_field_embedder's output dim
      "wordpiece_encoder": {"type": "lstm", "hidden_size": 200, "num_layers": 2,
                            "bidirectional": true},
      "label_encoding": "BIO"
    }
    ```

    # Parameters

    vocab : `Vocabulary`
    text_field_embedder : `TextFieldEmbedder`
        With `first_wordpiece: true`, a wordpiece-level embedder (`pretrained_transformer`,
        `tune_transformer`); otherwise any word-level embedder (ELMo,
        `pretrained_transformer_mismatched`, ...).
    encoder : `Seq2SeqEncoder`, optional (default = `pass_through`)
        Runs over word vectors, before the softmax. Leave its input size (`input_size`,
        `input_dim`) out: it is taken from the word vectors' dim (the embedder's, or the
        `wordpiece_encoder`'s output) when the model is built.
    first_wordpiece : `bool`, optional (default = `False`)
        Take each word's first wordpiece (needs the `pretrained_transformer_mismatched` indexer).
    wordpiece_encoder : `Seq2SeqEncoder`, optional (default = `None`)
        Runs over all wordpieces before the first ones are taken; only with `first_wordpiece`.
        Leave its `input_size` out: it is taken from `text_field_embedder.get_output_dim()`.
    (A config that gives either input size builds the same encoder; one that disagrees with
    what the encoder reads is a `ConfigurationError`.)
    label_encoding : `str`, optional (default = `None`)
        The tag scheme for span F1: `"IOB1"` (CoNLL `eng.*` files as read), `"BIO"` (IOB2), or
        `"BIOUL"`, matching the reader's `convert_to_coding_scheme`. Checked against the tags.
    (plus `calculate_span_f1`, `label_namespace`, `verbose_metrics`, `initializer` of
    `simple_tagger`)
    """

    def forward(  # type: ignore[override]
        self, tokens: TextFieldTensors, tags: Optional[torch.LongTensor] = None, **kwargs
    ) -> Dict[str, torch.Tensor]:
        output_dict = super().forward(tokens, tags, **kwargs)
        output_dict["mask"] = get_text_field_mask(tokens)
        return output_dict

    def make_output_human_readable(
        self, output_dict: Dict[str, torch.Tensor]
    ) -> Dict[str, torch.Tensor]:
        """
        `simple_tagger`'s tags, cut to each sentence's length: in a batch the parent also tags
        the padding positions.
        """
        output_dict = super().make_output_human_readable(output_dict)
        mask = output_dict["mask"]
        lengths = [int(row.sum()) for row in (mask if mask.dim() == 2 else mask.unsqueeze(0))]
        output_dict["tags"] = [tags[:n] for tags, n in zip(output_dict["tags"], lengths)]
        return output_dict

    default_predictor = "tune_sentence_tagger"
