"""
Input checking shared by allennlp-tune's predictors (not registered): every problem with a JSON
line becomes a `ConfigurationError` that names the line, shows its start, and says what was
expected.
"""

import json
from typing import Any, List, Sequence, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import JsonDict
from allennlp.predictors.predictor import Predictor


def excerpt(text: Any, limit: int = 80) -> str:
    text = str(text).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


class JsonLinesPredictor(Predictor):
    """
    A `Predictor` whose `load_line` (used by `allennlp predict` for each non-blank input line)
    counts lines and checks each one with `check_json`, so an error names the line. Subclasses
    implement `check_json(json_dict, where)`, which raises `ConfigurationError` starting with
    `where` ("input line 3 (blank lines not counted), {...}").
    """

    _EXPECTED = "a JSON object"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lines_read = 0

    def load_line(self, line: str) -> JsonDict:
        self._lines_read += 1
        where = f"input line {self._lines_read} (blank lines not counted)"
        try:
            json_dict = json.loads(line)
        except json.JSONDecodeError as error:
            raise ConfigurationError(
                f"{where} is not valid JSON ({error.msg}, column {error.colno}): "
                f"{excerpt(line)!r}. Expected one JSON object a line, e.g. {self._EXPECTED}."
            ) from None
        self.check_json(json_dict, f"{where}, {excerpt(line)}")
        return json_dict

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
                if not value.strip():
                    raise ConfigurationError(f"{where}: {key!r} is empty. Expected {expected}.")
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
