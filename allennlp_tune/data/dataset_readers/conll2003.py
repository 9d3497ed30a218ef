from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.conll2003 import Conll2003DatasetReader
from allennlp.data.dataset_readers.dataset_reader import DatasetReader, PathOrStr
from allennlp.data.dataset_readers.dataset_utils import to_bioul
from allennlp.data.instance import Instance
from allennlp.data.token_indexers import TokenIndexer
from allennlp.data.tokenizers import Token

from allennlp_tune.data.dataset_readers.task_reader import (
    InvalidRow,
    TaskReader,
    check_max_instances,
    text_problem,
)

SCHEMES = ("IOB1", "IOB2")
CONVERSIONS = (None, "IOB2", "BIOUL")
# The entity types of CoNLL-2003's NER column.
CONLL2003_ENTITY_TYPES = ("PER", "LOC", "ORG", "MISC")
DOCSTART = "-DOCSTART-"


def iob1_to_iob2(tags: List[str]) -> List[str]:
    """Every span starts with `B-` (IOB2) instead of only spans that follow one of their type."""
    converted = []
    previous = "O"
    for tag in tags:
        if tag.startswith("I-") and (previous == "O" or previous[2:] != tag[2:]):
            tag = "B-" + tag[2:]
        converted.append(tag)
        previous = tag
    return converted


def check_entity_type(tag: str, types: Optional[Sequence[str]], where: str) -> None:
    """Raises `InvalidRow` if `types` is given and `tag`'s type (`B-PER`: `PER`) is not one."""
    if types is not None and tag != "O" and tag[2:] not in types:
        raise InvalidRow(
            f"{where} has the entity type {tag[2:]!r}, expected one of {', '.join(types)}. If "
            "your data has other types, list them all in the reader's `entity_types`"
        )


def check_tags(
    tags: List[str],
    scheme: str,
    column: str,
    types: Optional[Sequence[str]] = None,
    line_numbers: Optional[List[int]] = None,
) -> None:
    """
    Raises `InvalidRow` (naming the offending token, and its line when `line_numbers` are given)
    if `tags` break `scheme`, or if `types` is given and a tag's type is not one of them.
    """
    previous = "O"
    for index, tag in enumerate(tags):
        token = f"token {index + 1}"
        if line_numbers is not None:
            token += f" (line {line_numbers[index]})"
        if tag != "O" and (len(tag) < 3 or tag[:2] not in ("B-", "I-")):
            raise InvalidRow(f"{column} tag {tag!r} of {token} is not O, B-X or I-X")
        check_entity_type(tag, types, f"{column} tag {tag!r} of {token}")
        continues = previous != "O" and previous[2:] == tag[2:]
        if scheme == "IOB2" and tag.startswith("I-") and not continues:
            raise InvalidRow(
                f"{column} tag {tag} of {token} follows {previous}, which IOB2 forbids "
                "(a span starts with B-). Is this an IOB1 file? Set coding_scheme: 'IOB1'"
            )
        if scheme == "IOB1" and tag.startswith("B-") and not continues:
            raise InvalidRow(
                f"{column} tag {tag} of {token} follows {previous}, which IOB1 forbids "
                "(B- only separates two adjacent spans of one type). Is this an IOB2 file? "
                "Set coding_scheme: 'IOB2'"
            )
        previous = tag


@DatasetReader.register("tune_conll2003")
class TuneConll2003Reader(Conll2003DatasetReader):
    """
    AllenNLP's `conll2003` reader with an explicit tag scheme, checked input and errors that
    name the file and line.

    Reads CoNLL-2003 files: one token a line, `token POS chunk NER` separated by spaces, a blank
    line between sentences, `-DOCSTART- ...` lines between documents (anywhere in the file: the
    original `eng.*` copies have one at the end). A `-DOCSTART-` line ends a document, so it
    cannot sit inside a sentence: one right after a token line (no blank line before it) is an
    invalid row, as in the real files, which always have a blank line there. NER types must be
    CoNLL-2003's (`PER`, `LOC`, `ORG`, `MISC`) unless `entity_types` says otherwise. Both the
    original IOB1 files (`eng.train`, `eng.testa`, `eng.testb`) and the IOB2 files of Hugging
    Face's layout (`train.txt`, `valid.txt`, `test.txt`) are read; `coding_scheme` says which
    one the file is, and every sentence is checked against it, so a wrong setting fails on the
    first sentence that shows it instead of corrupting spans. Instances are those of the parent
    reader (`tokens`, `tags`, `metadata` with the words).

    Registered as a `DatasetReader` with name "tune_conll2003".

    ```jsonnet
    "dataset_reader": {"type": "tune_conll2003", "coding_scheme": "IOB1",
                       "convert_to_coding_scheme": "BIOUL"},
    "train_data_path": data_dir + "/conll2003/eng.train",
    ```

    # Parameters

    coding_scheme : `str`, optional (default = `"IOB1"`)
        The scheme of the file's NER and chunk tags: `"IOB1"` or `"IOB2"`.
    convert_to_coding_scheme : `str`, optional (default = `None`)
        Convert NER and chunk tags to `"IOB2"` or `"BIOUL"`; `None` keeps the file's scheme. The
        model's span metric must use the resulting scheme (`IOB1`, `BIO` for IOB2, `BIOUL`).
    entity_types : `Sequence[str]`, optional (default = `("PER", "LOC", "ORG", "MISC")`)
        The NER entity types the file may use; a tag of any other type (`I-FOO`) is an invalid
        row naming its line. Give your own list for data with other types, or `null` to accept
        any type.
    skip_invalid : `bool`, optional (default = `False`)
        Skip malformed sentences with a warning instead of failing.
    token_indexers, tag_label, feature_labels, label_namespace
        As in AllenNLP's `conll2003` reader.
    """

    def __init__(
        self,
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        coding_scheme: str = "IOB1",
        convert_to_coding_scheme: Optional[str] = None,
        entity_types: Optional[Sequence[str]] = CONLL2003_ENTITY_TYPES,
        skip_invalid: bool = False,
        **kwargs,
    ) -> None:
        if coding_scheme not in SCHEMES:
            raise ConfigurationError(
                f"dataset_reader.coding_scheme is {coding_scheme!r}; expected 'IOB1' (CoNLL's "
                "eng.* files) or 'IOB2' (train.txt/valid.txt/test.txt copies)."
            )
        if convert_to_coding_scheme not in CONVERSIONS:
            raise ConfigurationError(
                f"dataset_reader.convert_to_coding_scheme is {convert_to_coding_scheme!r}; "
                "expected null, 'IOB2' or 'BIOUL'."
            )
        if entity_types is not None and (
            isinstance(entity_types, str)
            or not entity_types
            or not all(
                isinstance(name, str) and name and name[:2] not in ("B-", "I-")
                for name in entity_types
            )
        ):
            raise ConfigurationError(
                f"dataset_reader.entity_types is {entity_types!r}; expected a non-empty list of "
                "entity type names without their B-/I- prefix (e.g. ['PER', 'LOC', 'ORG', "
                "'MISC']), or null to accept any type."
            )
        super().__init__(token_indexers=token_indexers, **kwargs)
        self._entity_types = tuple(entity_types) if entity_types is not None else None
        self._coding_scheme = coding_scheme
        self._conversion = convert_to_coding_scheme
        # The parent converts only when this is "BIOUL"; we convert ourselves.
        self.convert_to_coding_scheme = None
        self._lines_reader = TaskReader(skip_invalid=skip_invalid)
        self._lines_reader.reader_name = type(self).__name__

    def read(self, file_path: PathOrStr) -> Iterator[Instance]:
        check_max_instances(self, file_path)
        yield from super().read(file_path)

    def _read(self, file_path: PathOrStr) -> Iterable[Instance]:
        reader = self._lines_reader
        sentences = self._sentences(file_path)

        def parse(first_line: int, lines: List[Tuple[int, str]]):
            columns = []
            for line_number, line in lines:
                fields = line.split()
                if fields[0] == DOCSTART:
                    raise InvalidRow(
                        f"(line {line_number}) {DOCSTART} inside a sentence: line "
                        f"{line_number - 1} is a token, not a blank line. A {DOCSTART} line "
                        "starts a document, so the sentence before it must end with a blank "
                        "line; add one"
                    )
                if len(fields) != 4:
                    raise InvalidRow(
                        f"(line {line_number}) found {len(fields)} space-separated columns, "
                        "expected 4 (token POS chunk NER)"
                    )
                problem = text_problem(fields[0])
                if problem is not None:
                    raise InvalidRow(f"(line {line_number}) the token {problem}")
                columns.append(fields)
            tokens, pos, chunk, ner = (list(column) for column in zip(*columns))
            line_numbers = [line_number for line_number, _ in lines]
            check_tags(ner, self._coding_scheme, "NER", self._entity_types, line_numbers)
            check_tags(chunk, self._coding_scheme, "chunk", line_numbers=line_numbers)
            return tokens, pos, self._convert(chunk), self._convert(ner)

        rows = reader._parse_all(file_path, parse, lines=sentences, unit="sentence")
        for tokens, pos, chunk, ner in rows:
            yield self.text_to_instance([Token(t) for t in tokens], pos, chunk, ner)

    def _sentences(self, file_path: PathOrStr) -> Iterable[Tuple[int, List[Tuple[int, str]]]]:
        """
        Yields `(first line number, [(line number, line), ...])` per sentence. A `-DOCSTART-`
        line right after a token line stays in that sentence, for `parse` to report.
        """
        sentence: List[Tuple[int, str]] = []
        for line_number, line in self._lines_reader._lines(file_path):
            if not line.strip() or (not sentence and line.split()[0] == DOCSTART):
                if sentence:
                    yield sentence[0][0], sentence
                sentence = []
            else:
                sentence.append((line_number, line))
        if sentence:
            yield sentence[0][0], sentence

    def _convert(self, tags: List[str]) -> List[str]:
        if self._conversion is None:
            return tags
        if self._conversion == "BIOUL":
            return to_bioul(tags, encoding="IOB1" if self._coding_scheme == "IOB1" else "BIO")
        return iob1_to_iob2(tags) if self._coding_scheme == "IOB1" else tags
