from typing import Any, List, Optional

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import JsonDict
from allennlp.data import DatasetReader, Instance
from allennlp.data.tokenizers import Token
from allennlp.models import Model
from allennlp.predictors.predictor import Predictor

from allennlp_tune.data.dataset_readers.task_reader import is_blank
from allennlp_tune.data.tokenizers.spacy_rules import SpacyRulesTokenizer
from allennlp_tune.predictors.json_lines import (
    JsonLinesPredictor,
    blank_detail,
    require_object,
    require_texts,
)

EXPECTED = '{"tokens": ["EU", "rejects", ...]} or {"sentence": "EU rejects ..."}'


@Predictor.register("tune_sentence_tagger")
class TuneSentenceTaggerPredictor(JsonLinesPredictor):
    """
    Tags a sentence with a tagger archive (`tune_tagger`, `tune_crf_tagger`, and allennlp's
    `simple_tagger` / allennlp-models' `crf_tagger` with `--predictor tune_sentence_tagger`).
    Unlike AllenNLP's `sentence_tagger` it needs no spaCy model.

    Input, one JSON object a line: `{"tokens": ["EU", "rejects", "German", "call"]}` (tokens as
    in CoNLL-2003, used as given) or `{"sentence": "EU rejects German call."}` (split with spaCy's
    rule-based English tokenizer). A line that is not JSON, has neither key, or holds the wrong
    type (tokens must be a non-empty list of non-empty strings; whitespace and zero-width
    characters alone count as empty), or is longer than the model's transformer can read, raises
    a `ConfigurationError` naming the line.

    Output: the model's outputs, among them `words` and `tags` (one tag per word, in the scheme
    the model was trained on).

    Registered as a `Predictor` with name "tune_sentence_tagger".
    """

    _EXPECTED = EXPECTED

    def __init__(self, model: Model, dataset_reader: DatasetReader, frozen: bool = True) -> None:
        super().__init__(model, dataset_reader, frozen)
        self._tokenizer: Optional[SpacyRulesTokenizer] = None  # built on the first "sentence"

    def predict(self, sentence: str) -> JsonDict:
        return self.predict_json({"sentence": sentence})

    def check_json(self, json_dict: Any, where: str) -> None:
        self._words(json_dict, where)

    def _words(self, json_dict: Any, where: str) -> List[str]:
        require_object(json_dict, where, EXPECTED)
        if "tokens" in json_dict:
            tokens = json_dict["tokens"]
            if not isinstance(tokens, list) or not tokens:
                raise ConfigurationError(
                    f"{where}: 'tokens' must be a non-empty JSON array of strings. "
                    f"Expected {EXPECTED}."
                )
            for index, token in enumerate(tokens):
                if not isinstance(token, str) or is_blank(token):
                    detail = blank_detail(token) if isinstance(token, str) else ""
                    raise ConfigurationError(
                        f"{where}: token {index + 1} ({token!r}) is not a non-empty string"
                        f"{detail}. Expected {EXPECTED}."
                    )
            return tokens
        (sentence,) = require_texts(json_dict, (("sentence",),), where, EXPECTED)
        if self._tokenizer is None:
            self._tokenizer = SpacyRulesTokenizer()
        return [token.text for token in self._tokenizer.tokenize(sentence)]

    def describe_field(self, name: str) -> str:
        return "the sentence"

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        words = self._words(json_dict, "the input")
        return self._dataset_reader.text_to_instance([Token(word) for word in words])
