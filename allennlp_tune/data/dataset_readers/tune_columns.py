from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_reader import DatasetReader, PathOrStr
from allennlp.data.dataset_readers.dataset_utils import to_bioul
from allennlp.data.fields import Field, MetadataField, SequenceLabelField, TextField
from allennlp.data.instance import Instance
from allennlp.data.token_indexers import TokenIndexer
from allennlp.data.tokenizers import Token, WhitespaceTokenizer

from allennlp_tune.data.dataset_readers.conll2003 import (
    check_entity_type,
    check_tags,
    iob1_to_iob2,
)
from allennlp_tune.data.dataset_readers.task_reader import InvalidRow, TaskReader, text_problem

SCHEMES = ("IOB1", "IOB2", "BIOUL", "none")
# The conversions each scheme allows (None keeps the file's tags).
CONVERSIONS = {
    "IOB1": (None, "IOB2", "BIOUL"),
    "IOB2": (None, "IOB2", "BIOUL"),
    "BIOUL": (None, "IOB2", "BIOUL"),
    "none": (None,),
}
SEPARATORS = ("tab", "whitespace")
# CoNLL's document separator: caught when `document_separator` is not set.
CONLL_DOCSTART = "-DOCSTART-"

Line = Tuple[int, str]


def check_bioul(tags: List[str], types: Optional[Sequence[str]], line_numbers: List[int]) -> None:
    """Raises `InvalidRow`, naming the token and its line, if `tags` break BIOUL (BILOU)."""
    previous = "O"
    for index, tag in enumerate(tags):
        token = f"token {index + 1} (line {line_numbers[index]})"
        if tag != "O" and (len(tag) < 3 or tag[:2] not in ("B-", "I-", "L-", "U-")):
            raise InvalidRow(f"tag {tag!r} of {token} is not O, B-X, I-X, L-X or U-X (BIOUL)")
        check_entity_type(tag, types, f"tag {tag!r} of {token}")
        inside = previous[:2] in ("B-", "I-")
        if inside and (tag[:2] not in ("I-", "L-") or tag[2:] != previous[2:]):
            raise InvalidRow(
                f"tag {tag} of {token} follows {previous}, which BIOUL forbids (a span goes on "
                f"with I-{previous[2:]} and ends with L-{previous[2:]})"
            )
        if not inside and tag[:2] in ("I-", "L-"):
            raise InvalidRow(
                f"tag {tag} of {token} follows {previous}, which BIOUL forbids (a span starts "
                "with B-, or is U- if it has one token). Is this an IOB1 or IOB2 file? Set "
                "coding_scheme accordingly"
            )
        previous = tag
    if previous[:2] in ("B-", "I-"):
        raise InvalidRow(
            f"the sentence ends inside a span: tag {previous} of its last token (line "
            f"{line_numbers[-1]}), which BIOUL forbids (a span ends with L-, or is U-)"
        )


def bioul_to_iob2(tags: List[str]) -> List[str]:
    return ["B-" + t[2:] if t[:2] == "U-" else "I-" + t[2:] if t[:2] == "L-" else t for t in tags]


@DatasetReader.register("tune_columns")
class TuneColumnsReader(TaskReader):
    """
    Reads a user's own token-per-line tagging files (NER, chunking, POS, ...): one token a line,
    the token and its tag in given columns, a blank line between sentences, optionally document
    separator lines.

    Columns are separated by a TAB (`separator: "tab"`: a token may hold spaces, each cell is
    stripped) or by runs of spaces and tabs (`"whitespace"`, as in CoNLL files). Every token line
    must have as many columns as the file's first token line. A document separator line (e.g.
    `-DOCSTART- -X- -X- O`, `document_separator: "-DOCSTART-"`, matched on the token column) must
    stand alone between blank lines (or the file's start or end); one inside a sentence is an
    error. Without `document_separator`, a `-DOCSTART-` token is an error too rather than a
    one-word sentence.

    Tags follow `coding_scheme`, checked on every sentence: a tag that is not `O`/`B-X`/`I-X`
    (`L-X`/`U-X` for BIOUL), or a transition the scheme forbids, is an error naming its line
    (so an IOB1 file read as IOB2 fails on its first sentence that shows it instead of
    corrupting spans). `"none"` takes the tags as plain labels (POS tags), unchecked.

    Instances are those of `tune_conll2003`: `tokens`, `tags` (in `label_namespace`) and
    `metadata` (`{"words": [...]}`), for `tune_tagger` and `tune_crf_tagger`, whose
    `label_encoding` must be the scheme after conversion (`IOB1`, `BIO` for IOB2, `BIOUL`).

    A malformed sentence raises a `ConfigurationError` naming the file, the sentence's first
    line and the offending line, or, with `skip_invalid: true`, is logged and skipped (the
    number skipped is logged too).

    Registered as a `DatasetReader` with name "tune_columns".

    ```jsonnet
    "dataset_reader": {
      "type": "tune_columns",
      "separator": "whitespace",
      "token_column": 0,
      "tag_column": 3,
      "coding_scheme": "IOB1",
      "convert_to_coding_scheme": "BIOUL",
      "document_separator": "-DOCSTART-",
      "entity_types": ["PER", "LOC", "ORG", "MISC"],
      "token_indexers": {"tokens": {"type": "pretrained_transformer_mismatched",
                                    "model_name": "bert-base-cased"}},
    },
    ```

    # Parameters

    token_column : `int`
        The 0-based column of the tokens.
    tag_column : `int`
        The 0-based column of the tags.
    separator : `str`
        `"tab"` or `"whitespace"`.
    coding_scheme : `str`
        The file's tags: `"IOB1"`, `"IOB2"`, `"BIOUL"`, or `"none"` (plain labels, unchecked).
    convert_to_coding_scheme : `str`, optional (default = `None`)
        `"IOB2"` or `"BIOUL"`; `None` keeps the file's tags. Not with `"none"`.
    document_separator : `str`, optional (default = `None`)
        The token-column value of document separator lines, e.g. `"-DOCSTART-"`.
    entity_types : `Sequence[str]`, optional (default = `None`)
        The entity types the tags may have (`["PER", "LOC"]` allows `B-PER`, `I-LOC`, ...); any
        other is an error naming its line. `None` accepts any type. Not with `"none"`.
    label_namespace : `str`, optional (default = `"labels"`)
        The vocabulary namespace of the tags (the taggers' default).
    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `{"tokens": single_id}`)
    skip_invalid : `bool`, optional (default = `False`)
        Skip malformed sentences with a warning instead of failing.
    """

    def __init__(
        self,
        token_column: int,
        tag_column: int,
        separator: str,
        coding_scheme: str,
        convert_to_coding_scheme: Optional[str] = None,
        document_separator: Optional[str] = None,
        entity_types: Optional[Sequence[str]] = None,
        label_namespace: str = "labels",
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        skip_invalid: bool = False,
        **kwargs,
    ) -> None:
        if "tokenizer" in kwargs:
            raise ConfigurationError(
                "dataset_reader.tokenizer: tune_columns reads pre-tokenized files (one token a "
                "line) and takes no tokenizer; remove it (token_indexers still apply)."
            )
        for name, column in (("token_column", token_column), ("tag_column", tag_column)):
            if isinstance(column, bool) or not isinstance(column, int) or column < 0:
                raise ConfigurationError(
                    f"dataset_reader.{name} is {column!r}; expected a 0-based column index."
                )
        if token_column == tag_column:
            raise ConfigurationError(
                f"dataset_reader.token_column and tag_column are both {token_column}; the tokens "
                "and the tags need their own columns."
            )
        if separator not in SEPARATORS:
            raise ConfigurationError(
                f"dataset_reader.separator is {separator!r}; expected 'tab' (cells separated "
                "by one TAB) or 'whitespace' (runs of spaces and tabs, as in CoNLL files)."
            )
        if coding_scheme not in SCHEMES:
            raise ConfigurationError(
                f"dataset_reader.coding_scheme is {coding_scheme!r}; expected 'IOB1', 'IOB2', "
                "'BIOUL', or 'none' for plain tags (POS)."
            )
        if convert_to_coding_scheme not in CONVERSIONS[coding_scheme]:
            allowed = ", ".join(repr(c) if c else "null" for c in CONVERSIONS[coding_scheme])
            raise ConfigurationError(
                f"dataset_reader.convert_to_coding_scheme is {convert_to_coding_scheme!r}; with "
                f"coding_scheme {coding_scheme!r} expected one of {allowed}."
            )
        if entity_types is not None and (
            coding_scheme == "none"
            or isinstance(entity_types, str)
            or not entity_types
            or not all(
                isinstance(name, str) and name and name[:2] not in ("B-", "I-", "L-", "U-")
                for name in entity_types
            )
        ):
            raise ConfigurationError(
                f"dataset_reader.entity_types is {entity_types!r}; expected a non-empty list of "
                "entity types without their prefix (e.g. ['PER', 'LOC']), or null, and a span "
                "coding_scheme (not 'none')."
            )
        if document_separator is not None and (
            not isinstance(document_separator, str) or not document_separator.strip()
        ):
            raise ConfigurationError(
                f"dataset_reader.document_separator is {document_separator!r}; expected the "
                "token-column value of separator lines, e.g. '-DOCSTART-', or null."
            )
        super().__init__(
            tokenizer=WhitespaceTokenizer(),
            token_indexers=token_indexers,
            skip_invalid=skip_invalid,
            **kwargs,
        )
        self._token_column = token_column
        self._tag_column = tag_column
        self._separator = separator
        self._coding_scheme = coding_scheme
        self._conversion = convert_to_coding_scheme
        self._document_separator = document_separator
        self._entity_types = tuple(entity_types) if entity_types is not None else None
        self._label_namespace = label_namespace

    def _read(self, file_path: PathOrStr) -> Iterable[Instance]:
        state: Dict[str, Optional[Tuple[int, int]]] = {"width": None}

        def parse(first_line: int, lines: List[Line]):
            return self._parse_sentence(file_path, lines, state)

        for words, tags in self._parse_all(file_path, parse, lines=self._groups(file_path)):
            yield self.text_to_instance([Token(word) for word in words], tags)

    def _groups(self, file_path: PathOrStr) -> Iterator[Tuple[int, List[Line]]]:
        """`(first line number, [(line number, line), ...])` per run of non-blank lines."""
        group: List[Line] = []
        for line_number, line in self._lines(file_path):
            if line.strip():
                group.append((line_number, line))
            elif group:
                yield group[0][0], group
                group = []
        if group:
            yield group[0][0], group

    def _cells(self, line: str) -> List[str]:
        if self._separator == "tab":
            return [cell.strip() for cell in line.split("\t")]
        return line.split()

    def _token_cell(self, cells: List[str]) -> str:
        """The token column, or the first one on a shorter line (a bare separator line)."""
        return cells[self._token_column] if len(cells) > self._token_column else cells[0]

    def _parse_sentence(
        self, file_path: PathOrStr, lines: List[Line], state: Dict
    ) -> Optional[Tuple[List[str], List[str]]]:
        separated = "tab" if self._separator == "tab" else "whitespace"
        words: List[str] = []
        tags: List[str] = []
        for index, (line_number, line) in enumerate(lines):
            cells = self._cells(line)
            if self._document_separator and self._token_cell(cells) == self._document_separator:
                if len(lines) == 1:
                    return None
                beside = lines[index - 1] if index > 0 else lines[index + 1]
                raise InvalidRow(
                    f"(line {line_number}) the document separator "
                    f"{self._document_separator!r} must stand alone between blank lines, but "
                    f"line {beside[0]} beside it is a token line; add a blank line between them"
                )
            if self._document_separator is None and self._token_cell(cells) == CONLL_DOCSTART:
                raise InvalidRow(
                    f"(line {line_number}) {CONLL_DOCSTART} separates documents in CoNLL files; "
                    f"set dataset_reader.document_separator: '{CONLL_DOCSTART}' so that it is "
                    "not read as a token"
                )
            if state["width"] is None:
                for name in ("token_column", "tag_column"):
                    column = getattr(self, "_" + name)
                    if column >= len(cells):
                        raise ConfigurationError(
                            f"{file_path}, line {line_number}: dataset_reader.{name} is column "
                            f"{column}, but the first token line has {len(cells)} "
                            f"{separated}-separated columns (indices 0-{len(cells) - 1}). Check "
                            "the column indices and the separator."
                        )
                state["width"] = (len(cells), line_number)
            width, reference = state["width"]
            if len(cells) != width:
                raise InvalidRow(
                    f"(line {line_number}) found {len(cells)} {separated}-separated columns, "
                    f"expected {width} as on line {reference}, the file's first token line"
                )
            word, tag = cells[self._token_column], cells[self._tag_column]
            problem = text_problem(word)
            if problem is not None:
                raise InvalidRow(
                    f"(line {line_number}) the token (column {self._token_column}) {problem}"
                )
            if not tag:
                raise InvalidRow(
                    f"(line {line_number}) the tag (column {self._tag_column}) is empty"
                )
            words.append(word)
            tags.append(tag)
        line_numbers = [line_number for line_number, _ in lines]
        if self._coding_scheme == "BIOUL":
            check_bioul(tags, self._entity_types, line_numbers)
        elif self._coding_scheme != "none":
            check_tags(
                tags,
                self._coding_scheme,
                "the",
                types=self._entity_types,
                line_numbers=line_numbers,
            )
        return words, self._convert(tags)

    def _convert(self, tags: List[str]) -> List[str]:
        scheme, target = self._coding_scheme, self._conversion
        if target is None or target == scheme:
            return tags
        if target == "BIOUL":
            return to_bioul(tags, encoding="IOB1" if scheme == "IOB1" else "BIO")
        return iob1_to_iob2(tags) if scheme == "IOB1" else bioul_to_iob2(tags)

    def text_to_instance(  # type: ignore[override]
        self, tokens: List[Token], tags: Optional[List[str]] = None
    ) -> Instance:
        text_field = TextField(tokens)
        fields: Dict[str, Field] = {
            "tokens": text_field,
            "metadata": MetadataField({"words": [token.text for token in tokens]}),
        }
        if tags is not None:
            fields["tags"] = SequenceLabelField(tags, text_field, self._label_namespace)
        return Instance(fields)
