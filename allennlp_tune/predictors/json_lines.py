"""
Input checking shared by allennlp-tune's predictors (not registered): every problem with a JSON
line becomes a `ConfigurationError` that names the line, shows its start, and says what was
expected: not JSON (or JSON nested deeper than Python's parser reads), missing keys, wrong
types, texts that are empty (or only whitespace and zero-width characters), and inputs longer
than the model's transformer can read.
"""

import json
from typing import Any, List, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import JsonDict
from allennlp.data.fields import TextField
from allennlp.modules.token_embedders import PretrainedTransformerEmbedder
from allennlp.predictors.predictor import Predictor

from allennlp_tune.data.dataset_readers.task_reader import (
    DuplicateKey,
    blank_detail,
    is_blank,
    json_too_deep_message,
    unique_keys,
)
from allennlp_tune.host_access import folds_long_inputs


def excerpt(text: Any, limit: int = 80) -> str:
    text = str(text).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


class JsonLinesPredictor(Predictor):
    """
    A `Predictor` whose `load_line` (used by `allennlp predict` for each non-blank input line)
    counts lines and checks each one with `check_json`, so an error names the line. Subclasses
    implement `check_json(json_dict, where)`, which raises `ConfigurationError` starting with
    `where` ("input line 3 (blank lines not counted), {...}").

    A line whose text is longer than the model's transformer encoder has positions (and which the
    archive does not fold: no `max_length`) is refused here too, naming the line, instead of
    failing later inside the model without saying which input it was.
    """

    _EXPECTED = "a JSON object"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lines_read = 0

    def load_line(self, line: str) -> JsonDict:
        self._lines_read += 1
        where = f"input line {self._lines_read} (blank lines not counted)"
        try:
            json_dict = json.loads(line, object_pairs_hook=unique_keys)
        except DuplicateKey as error:
            raise ConfigurationError(
                f"{where}: {error} (which value is meant?): {excerpt(line)!r}. Expected one JSON "
                f"object a line, each key once, e.g. {self._EXPECTED}."
            ) from None
        except json.JSONDecodeError as error:
            raise ConfigurationError(
                f"{where} is not valid JSON ({error.msg}, column {error.colno}): "
                f"{excerpt(line)!r}. Expected one JSON object a line, e.g. {self._EXPECTED}."
            ) from None
        except RecursionError:
            raise ConfigurationError(
                f"{where} holds {json_too_deep_message()}: {excerpt(line)!r}. Expected one JSON "
                f"object a line, e.g. {self._EXPECTED}."
            ) from None
        self.check_json(json_dict, f"{where}, {excerpt(line)}")
        self.check_length(json_dict, f"{where}, {excerpt(line)}")
        return json_dict

    def check_length(self, json_dict: JsonDict, where: str) -> None:
        """
        Builds and indexes the line's instance and checks that every transformer input fits the
        model's positions (when the archive has no `max_length` to fold longer inputs).
        """
        limit = self._position_limit()
        if limit is None:
            return
        instance = self._json_to_instance(json_dict)
        self._dataset_reader.apply_token_indexers(instance)
        instance.index_fields(self._model.vocab)
        for name, field in instance.fields.items():
            if not isinstance(field, TextField):
                continue
            lengths = field.get_padding_lengths()
            for key, length in lengths.items():
                indexer, _, tensor = key.partition("___")
                folded = f"{indexer}___segment_concat_mask" in lengths
                if tensor != "token_ids" or folded or length <= limit:
                    continue
                raise ConfigurationError(
                    f"{where}: {self.describe_field(name)} is {length} wordpieces long, more "
                    f"than the {limit} positions of the model's transformer. Shorten it to at "
                    f"most {limit} wordpieces, or predict with max_length (at most {limit}) set "
                    "on both the indexer and the embedder, which folds longer inputs into "
                    "segments, e.g. "
                    "allennlp predict ... --overrides '{"
                    f'"dataset_reader.token_indexers.{indexer}.max_length": {limit}, '
                    f'"model.text_field_embedder.token_embedders.{indexer}.max_length": {limit}'
                    "}' (validation_dataset_reader instead of dataset_reader if the archive's "
                    "config has one)."
                )

    def describe_field(self, name: str) -> str:
        """How errors name the input text behind the instance's text field `name`."""
        return f"the text of field {name!r}"

    def _position_limit(self) -> Optional[int]:
        """The fewest positions of the model's transformer embedders that do not fold inputs."""
        limits = [
            module.config.max_position_embeddings
            for module in self._model.modules()
            if isinstance(module, PretrainedTransformerEmbedder)
            and not folds_long_inputs(module)
            and getattr(module.config, "max_position_embeddings", None)
        ]
        return min(limits) if limits else None

    def check_json(self, json_dict: Any, where: str) -> None:
        raise NotImplementedError

    def _json_to_instance(self, json_dict: JsonDict):
        raise NotImplementedError


def require_object(json_dict: Any, where: str, expected: str) -> None:
    if not isinstance(json_dict, dict):
        raise ConfigurationError(
            f"{where}: a JSON {_json_type(json_dict)}, not an object. Expected {expected}."
        )


def require_texts(
    json_dict: JsonDict, choices: Sequence[Tuple[str, ...]], where: str, expected: str
) -> List[str]:
    """
    The values of the first key set in `choices` that `json_dict` has completely; each must be a
    non-empty string.
    """
    require_object(json_dict, where, expected)
    for keys in choices:
        if all(key in json_dict for key in keys):
            texts = []
            for key in keys:
                value = json_dict[key]
                if not isinstance(value, str):
                    raise ConfigurationError(
                        f"{where}: {key!r} is a JSON {_json_type(value)}, not a string. "
                        f"Expected {expected}."
                    )
                if is_blank(value):
                    raise ConfigurationError(
                        f"{where}: {key!r} is empty{blank_detail(value)}. Expected {expected}."
                    )
                texts.append(value)
            return texts
    found = ", ".join(repr(key) for key in json_dict) or "none"
    raise ConfigurationError(f"{where}: missing keys (found {found}). Expected {expected}.")


def _json_type(value: Any) -> str:
    return {
        bool: "boolean",
        int: "number",
        float: "number",
        list: "array",
        dict: "object",
        type(None): "null",
    }.get(type(value), type(value).__name__)
