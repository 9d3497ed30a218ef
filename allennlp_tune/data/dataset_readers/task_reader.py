"""Shared machinery of the task readers: careful line reading and pair/single instance building.

Not registered itself. Every task reader reads its files through `TaskReader._lines`, which
turns every problem a user can cause into a `ConfigurationError` naming the file, the line and
what was expected (or, with `skip_invalid: true`, logs each skipped row and the total), and
builds instances through `TaskReader.sentence_instance` (`SentenceTaskReader`) or
`PairTaskReader.pair_instance`.
"""

import codecs
import json
import logging
import os
import re
import sys
import unicodedata
from typing import Any, Dict, Iterable, Iterator, List, Optional, Set, Tuple

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.data.dataset_readers.dataset_reader import DatasetReader, PathOrStr
from allennlp.data.fields import Field, LabelField, TensorField, TextField
from allennlp.data.instance import Instance
from allennlp.data.token_indexers import SingleIdTokenIndexer, TokenIndexer
from allennlp.data.tokenizers import PretrainedTransformerTokenizer, Token, Tokenizer

from allennlp_tune.data.tokenizers.spacy_rules import SpacyRulesTokenizer
from allennlp_tune.host_access import is_text_encoding

logger = logging.getLogger(__name__)

PAIR_ENCODINGS = ("joint", "separate")

# The warnings given of each data file in this process: (logger, message, path, size, mtime).
_WARNED: Set[Tuple[str, str, str, int, int]] = set()


def warn_once(log: logging.Logger, file_path: PathOrStr, message: str) -> None:
    """
    `log.warning(message)` about a data file, the first time this process says it of the file as
    it is now; again, at DEBUG. `tune-compare` builds the readers several times before training
    (the label set, the count of instances, the calibration), and each read of a file with
    skipped rows would print the same lines; a file that changed (size or mtime) warns again.
    """
    try:
        stat = os.stat(file_path)
        key = (log.name, message, str(file_path), stat.st_size, stat.st_mtime_ns)
    except OSError:  # (not a local file: say it every time)
        log.warning("%s", message)
        return
    if key in _WARNED:
        log.debug("%s (said before of this file)", message)
        return
    _WARNED.add(key)
    log.warning("%s", message)


class InvalidRow(Exception):
    """Raised inside a reader's row parser; `TaskReader` adds the file and line."""


# The one grammar of numbers (scores) in every reader: an optional sign, ASCII digits with an
# optional decimal point, an optional exponent (`3`, `-0.5`, `.5`, `4.`, `1e-3`), with spaces
# around it. Python's `float` accepts more, which would read silently as numbers what is almost
# certainly a typo or another script: `1_0` (as 10), full-width or Arabic-Indic digits (`３` as
# 3), `inf`, `nan`.
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
NUMBER_GRAMMAR = (
    "ASCII digits with an optional sign, decimal point and exponent, e.g. 3, -0.5, 1e-3"
)


def parse_number(text: str) -> Optional[float]:
    """
    The value of `text` when it is a number in the readers' grammar (`NUMBER`, spaces around it
    allowed), else `None`. May be `inf` for an exponent beyond the float range.
    """
    stripped = text.strip()
    if not NUMBER.fullmatch(stripped):
        return None
    return float(stripped)


def json_too_deep_message() -> str:
    """What is wrong with a JSON text whose nesting makes Python's parser raise RecursionError."""
    return (
        "arrays or objects nested deeper than Python's JSON parser can read (about "
        f"{sys.getrecursionlimit()} levels)"
    )


class DuplicateKey(ValueError):
    """A JSON object with a key twice, which `json.loads` would read as the last value alone."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the JSON object has the key {key!r} twice")
        self.key = key


def unique_keys(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    """`json.loads`'s `object_pairs_hook`: the object, or `DuplicateKey` for a repeated key."""
    found: Dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise DuplicateKey(key)
        found[key] = value
    return found


def load_json_line(line: str, expected: str) -> Any:
    """
    `json.loads(line)`; raises `InvalidRow` saying what is wrong with a line that is not JSON,
    has an object with a key twice (which `json.loads` reads as its last value alone), or whose
    nesting is too deep for Python's parser (a bare `RecursionError` otherwise, which
    `skip_invalid` would not catch). `expected` ends the message ("one JSON object a line").
    """
    try:
        return json.loads(line, object_pairs_hook=unique_keys)
    except DuplicateKey as error:
        raise InvalidRow(
            f"{error} (which value is meant?); expected {expected}, each key once"
        ) from None
    except json.JSONDecodeError as error:
        raise InvalidRow(
            f"not valid JSON ({error.msg} at column {error.colno}); expected {expected}"
        ) from None
    except RecursionError:
        raise InvalidRow(f"{json_too_deep_message()}; expected {expected}") from None


def check_encoding(encoding: Any, where: str = "dataset_reader.encoding") -> str:
    """
    `encoding` when Python knows it as a text encoding; a `ConfigurationError` naming the value
    otherwise, when the reader is built rather than at the first line it reads.
    """
    if not isinstance(encoding, str):
        raise ConfigurationError(
            f"{where} is {encoding!r}; expected the name of a text encoding such as 'utf-8'."
        )
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise ConfigurationError(
            f"{where} is {encoding!r}, which Python does not know as an encoding. Expected a "
            "text encoding such as 'utf-8', 'utf-8-sig' (UTF-8 with a BOM), 'utf-16', "
            "'latin-1' or 'cp1252'."
        ) from None
    if not is_text_encoding(info):
        raise ConfigurationError(
            f"{where} is {encoding!r}, a codec that does not decode bytes to text (such as "
            "'base64' or 'rot13'). Expected a text encoding such as 'utf-8' or 'latin-1'."
        )
    return encoding


def is_blank(text: str) -> bool:
    """
    Whether `text` holds no printable character: nothing but whitespace, invisible format
    characters (Unicode category Cf: zero-width space, zero-width joiner, BOM, direction marks,
    ...) and control characters (Cc: the C0 and C1 controls, DEL), so that no tokenizer finds a
    word in it.
    """
    return all(char.isspace() or unicodedata.category(char) in ("Cf", "Cc") for char in text)


def blank_detail(value: str) -> str:
    """Says why a non-empty `value` that `is_blank` counts as empty."""
    if not value:
        return ""
    if any(unicodedata.category(char) == "Cc" and not char.isspace() for char in value):
        return " (no printable character: only control, zero-width and whitespace characters)"
    return " (only whitespace and zero-width characters)"


def text_problem(value: str) -> Optional[str]:
    """
    What makes `value` no text, as the end of a sentence naming it ("the sentence ..."), or
    `None`: a NUL byte (binary data, or text in another encoding such as UTF-16 read as UTF-8),
    or no printable character (`is_blank`).
    """
    position = value.find("\x00")
    if position >= 0:
        return (
            f"holds a NUL byte (character {position + 1}), which no text has (a binary file, or "
            "text in another encoding such as UTF-16: set dataset_reader.encoding)"
        )
    if is_blank(value):
        return "is empty" + blank_detail(value)
    return None


def check_max_instances(reader: DatasetReader, file_path: PathOrStr) -> None:
    """`max_instances: 0` would read nothing from `file_path`: a `ConfigurationError` says so."""
    if reader.max_instances == 0:
        raise ConfigurationError(
            f"Reading {file_path}: dataset_reader.max_instances is 0 (the configs set it from "
            "TUNE_MAX_INSTANCES), so no instance would be read. Set it to at least 1, or leave "
            "TUNE_MAX_INSTANCES unset to read every instance."
        )


class TaskReader(DatasetReader):
    """
    Base class of the task readers (not registered).

    # Parameters

    tokenizer : `Tokenizer`, optional (default = `{"type": "spacy_rules"}`)
        Splits raw text. `spacy_rules` is spaCy's rule-based English tokenizer, which needs no
        downloaded model. Use `pretrained_transformer` with the same `model_name` as the
        indexer for BERT-family encoders.
    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `{"tokens": single_id}`)
    skip_invalid : `bool`, optional (default = `False`)
        By default a malformed row stops reading with a `ConfigurationError` naming the file and
        line. With `true`, each such row is logged as a warning and skipped, and the total is
        logged at the end of the file, once per process while the file is unchanged
        (`warn_once`: `tune-compare` reads it several times before training).
    """

    def __init__(
        self,
        tokenizer: Optional[Tokenizer] = None,
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        skip_invalid: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(
            manual_distributed_sharding=True, manual_multiprocess_sharding=True, **kwargs
        )
        self._tokenizer = tokenizer or SpacyRulesTokenizer()
        self._token_indexers = token_indexers or {"tokens": SingleIdTokenIndexer()}
        self._skip_invalid = skip_invalid
        # How errors name the reader (the CoNLL reader reads its lines through a `TaskReader`).
        self.reader_name = type(self).__name__
        # The line (first line, for a record over several) of the row last read.
        self.last_line: Optional[int] = None

    def read(self, file_path: PathOrStr) -> Iterator[Instance]:
        check_max_instances(self, file_path)
        yield from super().read(file_path)

    def _empty_hint(self) -> str:
        """What, in this reader's settings, can leave a file without instances (for errors)."""
        return ""

    # ----------------------------------------------------------------------------------------
    # Reading files
    # ----------------------------------------------------------------------------------------
    def _lines(self, file_path: PathOrStr, encoding: str = "utf-8") -> Iterator[Tuple[int, str]]:
        """
        Yields `(line_number, line)` with the line ending (LF or CRLF) removed, numbering from 1.
        A missing or empty file, and bytes that do not decode, raise `ConfigurationError`.
        """
        path = self._resolve(file_path)
        with open(path, "rb") as data_file:
            empty = True
            for line_number, raw in enumerate(data_file, start=1):
                empty = False
                try:
                    line = raw.decode(encoding)
                except UnicodeDecodeError as error:
                    raise ConfigurationError(
                        f"{path}, line {line_number}: bytes that are not valid {encoding} "
                        f"({error.reason} at byte {error.start} of the line). Expected a "
                        f"{encoding} text file: re-encode it (e.g. `iconv -t utf-8`)."
                    ) from None
                if line_number == 1 and line.startswith("\ufeff"):
                    line = line[1:]
                yield line_number, line.rstrip("\r\n")
            if empty:
                raise ConfigurationError(
                    f"{path} is empty. Expected a {self.reader_name} data file; check the "
                    "path in the config (train_data_path / validation_data_path)."
                )

    @staticmethod
    def _resolve(file_path: PathOrStr) -> str:
        try:
            path = cached_path(file_path)
        except FileNotFoundError:
            path = str(file_path)
        if not os.path.isfile(path):
            raise ConfigurationError(
                f"Data file {file_path} does not exist. Check the path in the config "
                "(train_data_path / validation_data_path), or set TUNE_DATA_DIR to the folder "
                "that holds the task directories (see docs/DATA.md)."
            )
        return path

    def _rows(
        self,
        file_path: PathOrStr,
        rows: Iterable[Tuple[int, object]],
        counts: Dict[str, int],
        unit: str = "line",
    ) -> Iterator[Tuple[int, object]]:
        """
        Passes rows through, counting the ones a parser marked invalid (see `InvalidRow`). A
        file that yields no valid row at all raises `ConfigurationError` once it is read to the
        end: `counts` holds the number of lines seen and of lines the parser ignored.
        """
        skipped = 0
        valid = 0
        for line_number, row in rows:
            if isinstance(row, InvalidRow):
                message = f"{file_path}, line {line_number}: {row}"
                if not self._skip_invalid:
                    raise ConfigurationError(
                        message + ". Fix the row, or set `skip_invalid: true` in the "
                        "dataset_reader config to skip such rows with a warning."
                    )
                skipped += 1
                warn_once(logger, file_path, f"Skipping invalid row: {message}")
                continue
            valid += 1
            yield line_number, row
        if skipped:
            warn_once(
                logger,
                file_path,
                f"Skipped {skipped} invalid rows in {file_path} (skip_invalid: true).",
            )
        if not valid:
            found = f"{counts['lines']} {unit}(s)"
            if counts["ignored"]:
                found += f", {counts['ignored']} of them ignored (a header, or rows the reader's "
                found += "settings leave out)"
            if skipped:
                found += f", {skipped} invalid row(s) skipped (skip_invalid: true)"
            raise ConfigurationError(
                f"{file_path}: no instances read ({found}). Expected at least one "
                f"{self.reader_name} data row after the header; check that the path points to "
                f"the data file you meant{self._empty_hint()}."
            )

    def _parse_all(
        self, file_path: PathOrStr, parse, lines=None, unit: str = "line"
    ) -> Iterator[object]:
        """
        Runs `parse(line_number, line)` over the file's lines (or over `lines`, items that are
        `unit`s such as sentences); `parse` returns a row, `None` for a line to ignore (a header),
        or raises `InvalidRow`. Yields the valid rows of this worker's shard. A file without any
        valid row raises `ConfigurationError` (with `skip_invalid` too).
        """
        counts = {"lines": 0, "ignored": 0}

        def parsed() -> Iterator[Tuple[int, object]]:
            for line_number, line in lines if lines is not None else self._lines(file_path):
                counts["lines"] += 1
                try:
                    row = parse(line_number, line)
                except InvalidRow as error:
                    row = error
                if row is None:
                    counts["ignored"] += 1
                else:
                    yield line_number, row

        for line_number, row in self.shard_iterable(self._rows(file_path, parsed(), counts, unit)):
            # The line of the row whose instance is built next: the planner names it (a row
            # longer than the encoder's positions, `planning.data_count`).
            self.last_line = line_number
            yield row

    # ----------------------------------------------------------------------------------------
    # Field checks shared by the parsers
    # ----------------------------------------------------------------------------------------
    @staticmethod
    def split(line: str, expected: int, names: str, at_least: bool = False) -> List[str]:
        """Splits a tab-separated line and checks the number of columns."""
        fields = line.split("\t")
        if len(fields) < expected or (not at_least and len(fields) != expected):
            raise InvalidRow(
                f"found {len(fields)} tab-separated columns, expected "
                f"{'at least ' if at_least else ''}{expected} ({names})"
            )
        return fields

    @staticmethod
    def text(value: str, column: str) -> str:
        """`value`, unless it holds a NUL byte or no printable character (`text_problem`)."""
        problem = text_problem(value)
        if problem is not None:
            raise InvalidRow(f"the {column} {problem}")
        return value

    @staticmethod
    def label(value: str, allowed: Dict[str, str], column: str = "label") -> str:
        """Maps a raw label through `allowed` (raw -> label used in the vocabulary)."""
        key = value.strip()
        if key not in allowed:
            choices = ", ".join(repr(choice) for choice in allowed)
            raise InvalidRow(f"unknown {column} {value!r}, expected one of {choices}")
        return allowed[key]

    @staticmethod
    def score(value: str, low: float, high: float, column: str = "score") -> float:
        """`value` read as a number (`NUMBER`), which must lie in `[low, high]`."""
        number = parse_number(value)
        if number is None:
            raise InvalidRow(f"the {column} {value!r} is not a number (expected {NUMBER_GRAMMAR})")
        if not low <= number <= high:
            raise InvalidRow(f"the {column} {number} is outside the range [{low}, {high}]")
        return number

    # ----------------------------------------------------------------------------------------
    # Instances
    # ----------------------------------------------------------------------------------------
    def _tokenize(self, text: str) -> List[Token]:
        return self._tokenizer.tokenize(text)

    def sentence_instance(self, sentence: str, label: Optional[str] = None) -> Instance:
        fields: Dict[str, Field] = {"tokens": TextField(self._tokenize(sentence))}
        if label is not None:
            fields["label"] = LabelField(label)
        return Instance(fields)

    def apply_token_indexers(self, instance: Instance) -> None:
        for field in instance.fields.values():
            if isinstance(field, TextField):
                field.token_indexers = self._token_indexers


class SentenceTaskReader(TaskReader):
    """
    Base class of the single-sentence task readers (SST-2, CoLA; not registered): each line of
    the file goes through `parse_line`, and each valid row becomes an instance with `tokens` and
    `label`.

    # Parameters

    (`tokenizer`, `token_indexers`, `skip_invalid`: see `TaskReader`)
    """

    def _read(self, file_path: PathOrStr) -> Iterable[Instance]:
        for sentence, label in self._parse_all(file_path, self.parse_line):
            yield self.text_to_instance(sentence, label)

    def parse_line(self, line_number: int, line: str) -> Optional[Tuple[str, str]]:
        """
        One line of the file as `(sentence, label)`, `None` for a line to ignore (a header), or
        raises `InvalidRow` naming what is wrong with it.
        """
        raise NotImplementedError

    def text_to_instance(  # type: ignore[override]
        self, sentence: str, label: Optional[str] = None
    ) -> Instance:
        return self.sentence_instance(sentence, label)


class PairTaskReader(TaskReader):
    """
    Base class of the sentence-pair readers (not registered).

    # Parameters

    pair_encoding : `str`, optional (default = `"joint"` with a `pretrained_transformer`
        tokenizer, else `"separate"`)
        `"joint"`: one `tokens` field holding `[CLS] a [SEP] b [SEP]` (the transformer
        tokenizer's own pair layout and token type ids), as BERT is used in the paper.
        `"separate"`: two fields, `premise` and `hypothesis`, each encoded on its own (ESIM, ELMo,
        and the paper's Table 4 ablation).
    regression : `bool`
        Set by the subclass: scores go to a float `TensorField` named `label`, labels to a
        `LabelField` named `label`.
    (plus `tokenizer`, `token_indexers`, `skip_invalid` of every task reader)
    """

    def __init__(self, pair_encoding: Optional[str] = None, **kwargs) -> None:
        super().__init__(**kwargs)
        is_transformer = isinstance(self._tokenizer, PretrainedTransformerTokenizer)
        if pair_encoding is None:
            pair_encoding = "joint" if is_transformer else "separate"
        if pair_encoding not in PAIR_ENCODINGS:
            raise ConfigurationError(
                f"dataset_reader.pair_encoding is {pair_encoding!r}; expected 'joint' or "
                "'separate'."
            )
        if pair_encoding == "joint" and not is_transformer:
            raise ConfigurationError(
                "dataset_reader.pair_encoding 'joint' needs a 'pretrained_transformer' tokenizer "
                "(it builds [CLS] a [SEP] b [SEP]); use pair_encoding 'separate' with word-level "
                "tokenizers such as ELMo's."
            )
        self._pair_encoding = pair_encoding

    def _tokenize(self, text: str) -> List[Token]:
        tokens = self._tokenizer.tokenize(text)
        if isinstance(self._tokenizer, PretrainedTransformerTokenizer):
            # Strip the tokenizer's own specials (if it adds them): the pair layout is ours.
            if self._tokenizer._add_special_tokens:
                start = len(self._tokenizer.single_sequence_start_tokens)
                end = len(self._tokenizer.single_sequence_end_tokens)
                tokens = tokens[start : len(tokens) - end]
        return tokens

    def pair_instance(
        self, premise: str, hypothesis: str, label: Optional[object] = None
    ) -> Instance:
        premise_tokens = self._tokenize(premise)
        hypothesis_tokens = self._tokenize(hypothesis)
        fields: Dict[str, Field] = {}
        transformer = isinstance(self._tokenizer, PretrainedTransformerTokenizer)
        if self._pair_encoding == "joint":
            joint = self._tokenizer.add_special_tokens(premise_tokens, hypothesis_tokens)
            fields["tokens"] = TextField(joint)
        else:
            if transformer:
                premise_tokens = self._tokenizer.add_special_tokens(premise_tokens)
                hypothesis_tokens = self._tokenizer.add_special_tokens(hypothesis_tokens)
            fields["premise"] = TextField(premise_tokens)
            fields["hypothesis"] = TextField(hypothesis_tokens)
        if isinstance(label, float):
            fields["label"] = TensorField(torch.tensor(label, dtype=torch.float32))
        elif label is not None:
            fields["label"] = LabelField(str(label))
        return Instance(fields)
