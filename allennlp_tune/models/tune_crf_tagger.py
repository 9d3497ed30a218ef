from allennlp.models.model import Model
from allennlp_models.tagging.models.crf_tagger import CrfTagger

from allennlp_tune.models.tagging import TaggerInputs


@Model.register("tune_crf_tagger")
class TuneCrfTagger(TaggerInputs, CrfTagger):
    """
    allennlp-models' `crf_tagger` with an optional encoder, the first-wordpiece option of
    `tune_tagger`, a check of `label_encoding` against the tags, and a default predictor that
    needs no spaCy model (`tune_sentence_tagger`: `{"tokens": [...]}` or `{"sentence": ...}`).

    - ELMo feature extraction: a two-layer BiLSTM `encoder` + CRF (paper, A.1).
    - ELMo fine-tuning: no encoder, "a CRF layer on top of the LSTM states".
    - Table 5 ablations: `+ CRF` (no encoder) and `+ BiLSTM + CRF`, for ELMo or, with
      `first_wordpiece: true`, for BERT.

    Primary metric: `f1-measure-overall` (span F1), `"validation_metric": "+f1-measure-overall"`.

    Registered as a `Model` with name "tune_crf_tagger".

    ```jsonnet
    "dataset_reader": {"type": "tune_conll2003", "coding_scheme": "IOB1",
                       "convert_to_coding_scheme": "BIOUL",
                       "token_indexers": {"elmo": {"type": "elmo_characters"}}},
    "model": {
      "type": "tune_crf_tagger",
      "text_field_embedder": {"token_embedders": {"elmo": {"type": "tune_elmo", ...}}},
      // no input_size: it is the text_field_embedder's output dim
      "encoder": {"type": "lstm", "hidden_size": 200, "num_layers": 2, "bidirectional": true},
      "label_encoding": "BIOUL",
      "dropout": 0.5
    }
    ```

    # Parameters

    vocab : `Vocabulary`
    text_field_embedder : `TextFieldEmbedder`
        A word-level embedder, or with `first_wordpiece: true` a wordpiece-level one.
    encoder : `Seq2SeqEncoder`, optional (default = `pass_through`)
        Runs over word vectors before the CRF. Leave its input size (`input_size`,
        `input_dim`) out: it is taken from the word vectors' dim (the embedder's, or the
        `wordpiece_encoder`'s output) when the model is built. A config that gives it builds
        the same encoder; one that disagrees is a `ConfigurationError`.
    first_wordpiece : `bool`, optional (default = `False`)
        As in `tune_tagger`.
    wordpiece_encoder : `Seq2SeqEncoder`, optional (default = `None`)
        As in `tune_tagger`; its input size, too, is taken from the embedder.
    label_encoding : `str`, optional (default = `None`)
        `"IOB1"`, `"BIO"` (IOB2) or `"BIOUL"`, matching the reader's `convert_to_coding_scheme`;
        used for span F1 and to constrain CRF decoding.
    (plus every other parameter of `crf_tagger`: `feedforward`, `dropout`,
    `include_start_end_transitions`, `constrain_crf_decoding`, `calculate_span_f1`, ...)
    """

    default_predictor = "tune_sentence_tagger"
