import logging
import math
import os
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, Iterator, List, Optional, Tuple, Union

import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_reader import DatasetReader, PathOrStr
from allennlp.data.fields import Field, LabelField, TensorField, TextField
from allennlp.data.instance import Instance
from allennlp.data.vocabulary import Vocabulary

from allennlp_tune.data.dataset_readers.quoted_records import quoted_records
from allennlp_tune.data.dataset_readers.task_reader import (
    NUMBER_GRAMMAR,
    InvalidRow,
    PairTaskReader,
    check_encoding,
    load_json_line,
    parse_number,
    warn_once,
)

logger = logging.getLogger(__name__)

KINDS = ("classification", "pair_classification", "regression", "pair_regression")
FORMATS = ("csv", "tsv", "jsonl")
EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl"}
DELIMITERS = {"csv": ",", "tsv": "\t"}

# A column: a name (header row, JSON-lines key) or a 0-based index (`header: false`).
Column = Union[str, int]
# A delimited record: its cells and the line it ends on (a quoted field may hold newlines).
Record = Tuple[List[str], int]
# Where a trained model's label set is, inside its archive (or serialization directory): the
# vocabulary namespace of the `label` field.
LABEL_NAMESPACE = "labels"


def _python_reads(text: str) -> bool:
    """Whether Python's `float` reads `text` (which the readers' number grammar may refuse)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _json_type(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


@DatasetReader.register("tune_table")
class TuneTableReader(PairTaskReader):
    """
    Reads a user's own sentence or sentence-pair data from a CSV, TSV or JSON-lines file, for
    classification or regression, with every column named in the config.

    - CSV: comma-separated, with CSV quoting (`"a, b"`, `""` for a literal quote; a quoted field
      may span lines). TSV: tab-separated, by default without quote processing (as GLUE's
      files: a `"` is an ordinary character). `quoting` switches quote processing on or off.
      Both need an explicit `header: true` (columns are named by the header row) or
      `header: false` (columns are 0-based indices). Every row must have as many columns as the
      header, or as the first row without one. Empty lines are ignored.
    - JSON-lines: one JSON object a line; columns are keys, other keys are ignored. Texts must be
      JSON strings; a class label a string or an integer; a score a number or a numeric string.
      Empty lines are ignored. A line whose arrays or objects are nested deeper than Python's
      JSON parser can read (about a thousand levels) is an invalid row like any other.

    The format is `format`, or else the file's extension (`.csv`, `.tsv`, `.jsonl`).

    **Labels and scores are read as written.** A class label is its text with the spaces around
    it removed (a file whose labels have such spaces gets one warning naming its first such
    line and their number, since `"pos "` is more often a stray space than a class of its own);
    it is never read as a number, so `1`, `1.0` and `01` would be three classes. Labels of a
    `labels_file` that differ only in how a number is written (`1`, `1.0`, `01`, `+1`, `1e0`,
    full-width `１`) are therefore an error naming their lines: write each class one way, or list
    them all in `labels` if they really are different classes. A score follows one grammar:
    ASCII digits with an optional sign, decimal point and exponent (`3`, `-0.5`, `.5`, `1e-3`),
    spaces around it allowed, finite. Python's `float` also reads `1_0` (as 10), other scripts'
    digits (`３`, `٣`), `inf` and `nan`; here each of those is an invalid row naming its line.

    `kind` says what is predicted, and whether rows are pairs:

    | `kind` | texts | `label` field |
    | --- | --- | --- |
    | `classification` | `text` | `LabelField` |
    | `pair_classification` | `text`, `text_pair` | `LabelField` |
    | `regression` | `text` | float `TensorField` |
    | `pair_regression` (STS-B, SICK-R) | `text`, `text_pair` | float `TensorField` |

    The pair kinds are read by `TuneTablePairReader` (`tune_table_pair`), which `tune_table`
    builds for them; this class reads single sentences.

    Instances are those of the task readers: `tokens` and `label` for single sentences (as
    `sst2`), and for pairs `tokens` (`pair_encoding: "joint"`) or `premise` and `hypothesis`
    (`"separate"`), and `label` (as `sick` / `sts_b`). So `pooled_classifier` (`regression: true`
    for the regression kinds), `pair_classifier`, `tune_esim`, `esim_regression` and `tune_bcn`
    train on them, and the `tune_text_classifier` predictor takes `{"sentence": ...}` or
    `{"premise": ..., "hypothesis": ...}`.

    **The label set of a classification.** The reader must know it for every file it reads, so
    that a label in a validation or test file that the training file does not have is an error
    naming its line, not a silent out-of-vocabulary label. Give it either as `labels: [...]`, or
    as `labels_file`: the training file. The reader then reads the label column of that file
    once, before the first file it reads, whatever that file is (training, validation, the
    `evaluate` command's test file) and in every data-loader worker, so the set never depends on
    the order in which AllenNLP reads files. That costs one extra pass over the training file.
    A label that occurs only on the first row of `labels_file` with `header: false` is an error:
    that row is almost certainly a header read as data (give `labels` to accept it).

    A trained model carries its label set with it: its archive's vocabulary (namespace `labels`)
    holds the labels it was trained on. A reader that AllenNLP builds from an archive
    (`allennlp evaluate`, `allennlp predict`, `load_archive`) takes the label set from there,
    not from `labels_file`, so the archive keeps working once the training file has moved or
    changed, and a test label the model never saw is an error naming its line.

    A header read as data never passes silently: with `header: false`, its label cell is an
    unknown label (classification), is not a number (regression), or is caught in `labels_file`
    as above; with `header: true` on a file without a header, the named columns are missing from
    the "header". Every bad row (wrong number of columns, empty text, unknown label, a score that
    is not a number or is outside `score_range`, a line that is not a JSON object, lacks a key
    or has one twice, broken CSV quoting, a field over Python's CSV field limit, a text with a
    NUL byte or no printable character) raises a `ConfigurationError` naming the file and the
    line, or, with `skip_invalid: true`, is logged and skipped, and the number skipped is
    logged. An unclosed quote that runs to the end of a CSV file is always an error (it would
    swallow the rest).

    Registered as a `DatasetReader` with name "tune_table".

    ```jsonnet
    local train = "data/reviews/train.csv";
    {
      "dataset_reader": {
        "type": "tune_table",
        "kind": "classification",
        "header": true,
        "text": "review",
        "label": "sentiment",
        "labels_file": train,  // or "labels": ["negative", "positive"]
      },
      "train_data_path": train,
      "validation_data_path": "data/reviews/dev.csv",
    }
    ```

    A pair regression from a TSV without a header (columns by index):

    ```jsonnet
    "dataset_reader": {
      "type": "tune_table", "kind": "pair_regression", "header": false,
      "text": 1, "text_pair": 2, "label": 0, "score_range": [0, 5],
    },
    ```

    # Parameters

    kind : `str`
        `"classification"`, `"pair_classification"`, `"regression"` or `"pair_regression"`.
    text : `Union[str, int]`
        The column of the text (the first text of a pair): a header name or JSON key, or a
        0-based index with `header: false`.
    label : `Union[str, int]`
        The column of the class label or score. Labels are read as written (spaces around them
        removed, with a warning); scores in one grammar: ASCII digits with an optional sign,
        decimal point and exponent, e.g. `3`, `-0.5`, `1e-3` (no `1_0`, no `３`, no `inf`/`nan`).
    text_pair : `Union[str, int]`, optional (default = `None`)
        The column of the second text; required by the pair kinds, refused by the others.
    format : `str`, optional (default = `None`)
        `"csv"`, `"tsv"` or `"jsonl"`. `None`: from the file's extension (`.csv`, `.tsv`,
        `.jsonl`); an explicit format wins over the extension.
    header : `bool`, optional (default = `None`)
        CSV and TSV: `true` if the first row names the columns (columns are then names), `false`
        if there is none (columns are then 0-based indices). Required for CSV and TSV, refused for
        JSON-lines.
    quoting : `bool`, optional (default = `true` for CSV, `false` for TSV)
        Whether `"` quotes fields (CSV rules). Refused for JSON-lines.
    labels : `List[str]`, optional (default = `None`)
        The label set of a classification (integers are read as their strings). Labels that
        differ only in how a number is written (`"1"`, `"1.0"`) are distinct classes only when
        they are listed here.
    labels_file : `str`, optional (default = `None`)
        Instead of `labels`: a file in the same layout, normally the training file, whose label
        column is the label set. Not read by a reader built from a model archive, which takes
        the label set from the archive's vocabulary.
    score_range : `Tuple[float, float]`, optional (default = `None`)
        Regression: the scores must lie in `[low, high]` (`[0, 5]` for STS-B, `[1, 5]` for
        SICK-R). Without it any finite number is accepted.
    encoding : `str`, optional (default = `"utf-8"`)
        The files' text encoding, checked when the reader is built (a name Python does not know
        is an error naming it); bytes that do not decode are an error naming the line.
    pair_encoding : `str`, optional (default = `"joint"` with a `pretrained_transformer`
        tokenizer, else `"separate"`)
        Pair kinds only: see `PairTaskReader`.
    (plus `tokenizer`, `token_indexers`, `skip_invalid`: see `TaskReader`)
    """

    reads_pairs = False  # TuneTablePairReader: True

    @classmethod
    def from_params(  # type: ignore[override]
        cls, params: Params, constructor_to_call=None, constructor_to_inspect=None, **extras
    ) -> "TuneTableReader":
        """`"type": "tune_table"` with a pair kind builds a `TuneTablePairReader` (found by its
        registered name: its module imports this one), so a task file names one type."""
        kind = params.get("kind")
        if cls is TuneTableReader and isinstance(kind, str) and kind.startswith("pair_"):
            return DatasetReader.by_name("tune_table_pair").from_params(params, **extras)
        return super().from_params(params, constructor_to_call, constructor_to_inspect, **extras)

    def __init__(
        self,
        kind: str,
        text: Column,
        label: Column,
        text_pair: Optional[Column] = None,
        format: Optional[str] = None,
        header: Optional[bool] = None,
        quoting: Optional[bool] = None,
        labels: Optional[List[Union[str, int]]] = None,
        labels_file: Optional[str] = None,
        score_range: Optional[Tuple[float, float]] = None,
        encoding: str = "utf-8",
        pair_encoding: Optional[str] = None,
        **kwargs,
    ) -> None:
        if kind not in KINDS:
            raise ConfigurationError(
                f"dataset_reader.kind is {kind!r}; expected one of {', '.join(KINDS)}."
            )
        self._pair = kind.startswith("pair_")
        self._regression = kind.endswith("regression")
        if self._pair != self.reads_pairs:
            other = "TuneTableReader" if self.reads_pairs else "TuneTablePairReader"
            raise ConfigurationError(
                f"dataset_reader.kind {kind!r} is read by {other}, not {type(self).__name__} "
                '(a config\'s "type": "tune_table" picks the one its kind needs).'
            )
        if self._pair and text_pair is None:
            raise ConfigurationError(
                f"dataset_reader.kind {kind!r} reads sentence pairs: set text_pair to the column "
                "of the second text."
            )
        if not self._pair and text_pair is not None:
            raise ConfigurationError(
                f"dataset_reader.text_pair is set, but kind {kind!r} reads single texts; use "
                f"kind 'pair_{kind}' for sentence pairs."
            )
        if not self._pair and pair_encoding is not None:
            raise ConfigurationError(
                f"dataset_reader.pair_encoding applies to the pair kinds only, not to {kind!r}."
            )
        super().__init__(pair_encoding=pair_encoding, **kwargs)
        self._kind = kind
        self._columns: Dict[str, Column] = {"text": text, "label": label}
        if text_pair is not None:
            self._columns["text_pair"] = text_pair
        for role, column in self._columns.items():
            if not isinstance(column, (str, int)) or column == "":
                raise ConfigurationError(
                    f"dataset_reader.{role} is {column!r}; expected a column name (header row or "
                    "JSON key) or a 0-based column index (header: false)."
                )
        if len(set(self._columns.values())) != len(self._columns):
            raise ConfigurationError(
                f"dataset_reader: {self._describe_columns()} name the same column twice; each "
                "role needs its own column."
            )
        if format is not None and format not in FORMATS:
            raise ConfigurationError(
                f"dataset_reader.format is {format!r}; expected 'csv', 'tsv', 'jsonl', or null "
                "to tell from the file's extension."
            )
        self._format = format
        self._header = header
        self._quoting = quoting
        self._encoding = check_encoding(encoding)
        if format is not None:
            self._check_layout(format, f"dataset_reader.format {format!r}")

        self._labels: Optional[FrozenSet[str]] = None
        self._labels_file = labels_file
        if self._regression:
            if labels is not None or labels_file is not None:
                raise ConfigurationError(
                    f"dataset_reader.labels / labels_file are for classification; kind {kind!r} "
                    "reads numeric scores (see score_range)."
                )
        else:
            if score_range is not None:
                raise ConfigurationError(
                    f"dataset_reader.score_range is for the regression kinds, not {kind!r}."
                )
            if (labels is None) == (labels_file is None):
                raise ConfigurationError(
                    f"dataset_reader: kind {kind!r} needs its label set, from exactly one of "
                    '`labels` (e.g. ["negative", "positive"]) or `labels_file` (the training '
                    "file, whose label column is then the set). "
                    + ("Both are set." if labels is not None else "Neither is set.")
                )
            if labels is not None:
                self._labels = self._check_labels(labels)
            else:
                # Now: AllenNLP removes an extracted archive once it has built the readers.
                self._labels = self._archived_labels()
        self._score_range = self._check_range(score_range) if score_range is not None else None

    # ----------------------------------------------------------------------------------------
    # Settings
    # ----------------------------------------------------------------------------------------
    @staticmethod
    def _check_labels(labels: List[Union[str, int]]) -> FrozenSet[str]:
        names = [str(name).strip() for name in labels if not isinstance(name, bool)]
        if len(names) != len(labels) or any(not name for name in names):
            raise ConfigurationError(
                f"dataset_reader.labels is {labels!r}; expected non-empty strings (or integers)."
            )
        repeated = sorted(name for name, count in Counter(names).items() if count > 1)
        if repeated:
            raise ConfigurationError(f"dataset_reader.labels lists {repeated} more than once.")
        if len(names) < 2:
            raise ConfigurationError(
                f"dataset_reader.labels is {labels!r}; a classification needs at least 2 labels."
            )
        return frozenset(names)

    @staticmethod
    def _check_range(score_range) -> Tuple[float, float]:
        if (
            len(score_range) != 2
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in score_range)
            or not score_range[0] < score_range[1]
        ):
            raise ConfigurationError(
                f"dataset_reader.score_range is {list(score_range)!r}; expected [low, high] with "
                "low < high, e.g. [0, 5]."
            )
        return float(score_range[0]), float(score_range[1])

    def _describe_columns(self) -> str:
        return ", ".join(f"{role}={column!r}" for role, column in self._columns.items())

    def _check_layout(self, fmt: str, where: str) -> None:
        """The header, quoting and column settings that `fmt` needs (`where` names the cause)."""
        columns = self._describe_columns()
        if fmt == "jsonl":
            if self._header is not None or self._quoting is not None:
                raise ConfigurationError(
                    f"{where} is JSON-lines: dataset_reader.header and quoting apply to CSV/TSV "
                    "only; remove them."
                )
            if not all(isinstance(column, str) for column in self._columns.values()):
                raise ConfigurationError(
                    f"{where} is JSON-lines, whose columns are keys: {columns} must all be key "
                    "names (strings)."
                )
            return
        if self._header is None:
            raise ConfigurationError(
                f"{where} is {fmt.upper()}: set dataset_reader.header to true (the first row "
                "names the columns; text/label are names) or false (no header; text/label are "
                "0-based column indices)."
            )
        if self._header and not all(isinstance(c, str) for c in self._columns.values()):
            raise ConfigurationError(
                f"dataset_reader.header is true, so columns are named by the header row: "
                f"{columns} must all be names. Use header: false for 0-based indices."
            )
        if not self._header and not all(
            isinstance(c, int) and c >= 0 for c in self._columns.values()
        ):
            raise ConfigurationError(
                f"dataset_reader.header is false, so columns are 0-based indices: {columns} must "
                "all be integers >= 0. Use header: true to name columns by the header row."
            )

    def _format_of(self, file_path: PathOrStr) -> str:
        suffix = Path(str(file_path)).suffix.lower()
        from_extension = EXTENSIONS.get(suffix)
        if self._format is not None:
            if from_extension is not None and from_extension != self._format:
                warn_once(
                    logger,
                    file_path,
                    f"Reading {file_path} as {self._format} (dataset_reader.format), not as its "
                    "extension says.",
                )
            return self._format
        if from_extension is None:
            raise ConfigurationError(
                f"Cannot tell the format of {file_path} from its extension {suffix!r}: set "
                "dataset_reader.format to 'csv', 'tsv' or 'jsonl'."
            )
        self._check_layout(from_extension, f"{file_path} (from its extension)")
        return from_extension

    # ----------------------------------------------------------------------------------------
    # Reading
    # ----------------------------------------------------------------------------------------
    def _read(self, file_path: PathOrStr) -> Iterable[Instance]:
        labels = self._label_set()
        fmt = self._format_of(file_path)
        state = self._new_state()
        parse = self._parser(file_path, fmt, labels, state)
        for texts, label in self._parse_all(file_path, parse, lines=self._records(file_path, fmt)):
            yield self.text_to_instance(*texts, label)  # type: ignore[call-arg]
        self._report_spaced_labels(file_path, state)

    def label_set(self) -> Optional[FrozenSet[str]]:
        """
        The label set of a classification: `labels`, the labels of the archived vocabulary for
        a reader built from a model archive, or the label column of `labels_file` (read once,
        with its checks); `None` for the regression kinds. `tune-compare` counts it for a task's
        `num_labels`.
        """
        return self._label_set()

    def _label_set(self) -> Optional[FrozenSet[str]]:
        if self._regression or self._labels is not None:
            return self._labels
        self._labels = self._read_labels_file(self._labels_file)  # type: ignore[arg-type]
        return self._labels

    def _archived_labels(self) -> Optional[FrozenSet[str]]:
        """
        The labels a trained model knows, when this reader is built for one: AllenNLP passes
        `serialization_dir` (the extracted archive, or the run's folder) to the readers it
        builds from an archive's config, and the vocabulary there holds the model's labels. So
        evaluating or predicting never needs the training file. `None` before the vocabulary
        exists (when training starts) and for a reader built on its own.
        """
        if not self.serialization_dir:
            return None
        path = os.path.join(self.serialization_dir, "vocabulary", LABEL_NAMESPACE + ".txt")
        if not os.path.isfile(path):
            return None
        vocabulary = Vocabulary(non_padded_namespaces=[LABEL_NAMESPACE])
        vocabulary.set_from_file(path, is_padded=False, namespace=LABEL_NAMESPACE)
        labels = frozenset(vocabulary.get_token_to_index_vocabulary(LABEL_NAMESPACE))
        if not labels:
            return None
        logger.info(
            "Label set from the model's vocabulary %s (not dataset_reader.labels_file): %s",
            path,
            sorted(labels),
        )
        return labels

    def _read_labels_file(self, file_path: str) -> FrozenSet[str]:
        """The label column of `file_path` (all of it: no sharding, no `max_instances`)."""
        fmt = self._format_of(file_path)
        state = self._new_state()
        parse = self._parser(file_path, fmt, None, state)
        counts: Counter = Counter()
        # The first line of each label, for errors.
        lines: Dict[str, int] = {}
        first: Optional[Tuple[int, str]] = None
        skipped = 0
        for line_number, record in self._records(file_path, fmt):
            try:
                row = parse(line_number, record)
            except InvalidRow as error:
                if not self._skip_invalid:
                    raise ConfigurationError(
                        f"{file_path}, line {line_number}: {error} (reading the label set from "
                        "dataset_reader.labels_file). Fix the row, or set `skip_invalid: true`."
                    ) from None
                skipped += 1
                continue
            if row is not None:
                label = row[1]
                counts[label] += 1
                lines.setdefault(label, line_number)
                if first is None:
                    first = (line_number, label)
        if skipped:
            warn_once(
                logger,
                file_path,
                f"{skipped} invalid rows of {file_path} left out of the label set (skip_invalid: "
                "true); they are reported when the file is read as data.",
            )
        if first is None:
            raise ConfigurationError(
                f"{file_path} (dataset_reader.labels_file) has no valid row, so no label set."
            )
        if len(counts) < 2:
            raise ConfigurationError(
                f"{file_path} (dataset_reader.labels_file) has only the label {first[1]!r}; a "
                "classification needs at least 2 labels. Is `label` the right column?"
            )
        line_number, label = first
        if fmt != "jsonl" and not self._header and counts[label] == 1:
            raise ConfigurationError(
                f"{file_path}, line {line_number}: the label {label!r} of the first row occurs "
                "nowhere else in this dataset_reader.labels_file, so the row looks like a header "
                "read as data. Set header: true if it is a header; if it is a real row, give the "
                "label set as dataset_reader.labels instead of labels_file."
            )
        self._check_number_labels(file_path, lines)
        self._report_spaced_labels(file_path, state)
        logger.info("Label set from %s: %s", file_path, sorted(counts))
        return frozenset(counts)

    @staticmethod
    def _check_number_labels(file_path: str, lines: Dict[str, int]) -> None:
        """
        Labels of `labels_file` that are one number written in different ways (`1`, `1.0`,
        `01`, full-width `１`) would be different classes, which is almost never meant: a
        `ConfigurationError` names them and their first lines. (Listed in `labels`, they are
        accepted as distinct classes.)
        """
        by_value: Dict[float, List[str]] = {}
        for label in lines:
            value = parse_number(unicodedata.normalize("NFKC", label))
            if value is not None:
                by_value.setdefault(value, []).append(label)
        for same in by_value.values():
            if len(same) < 2:
                continue
            same.sort(key=lines.__getitem__)
            found = ", ".join(f"{label!r} (line {lines[label]})" for label in same)
            raise ConfigurationError(
                f"{file_path} (dataset_reader.labels_file): the labels {found} are the same "
                f"number written in {len(same)} ways, so they would be {len(same)} different "
                f"classes. Write each class one way in every file (e.g. {same[0]!r}); if they "
                "really are different classes, list them all in dataset_reader.labels instead of "
                "labels_file."
            )

    @staticmethod
    def _new_state() -> Dict[str, object]:
        """What `_parser` keeps while it reads one file (see there)."""
        return {"indices": None, "width": None, "first": None, "spaced": 0, "spaced_first": None}

    def _report_spaced_labels(self, file_path: PathOrStr, state: Dict[str, object]) -> None:
        """One warning per file whose labels had spaces around them (read without them)."""
        if not state["spaced"]:
            return
        line_number, raw = state["spaced_first"]  # type: ignore[misc]
        warn_once(
            logger,
            file_path,
            f"{file_path}: {state['spaced']} label(s) have spaces before or after them, the first "
            f"on line {line_number} ({raw!r}); they are read without the spaces (as "
            f"{str(raw).strip()!r}). Remove the spaces if they are stray; a label cannot keep "
            "them.",
        )

    def _records(self, file_path: PathOrStr, fmt: str) -> Iterator[Tuple[int, object]]:
        """
        `(first line, item)` per record: the line for JSON-lines, else `(cells, last line)`, or
        an `InvalidRow` for broken CSV quoting or a field too long (`quoted_records`). Empty
        lines give `([], line)`.
        """
        lines = self._lines(file_path, self._encoding)
        if fmt == "jsonl":
            yield from lines
            return
        delimiter = DELIMITERS[fmt]
        quoting = self._quoting if self._quoting is not None else fmt == "csv"
        if not quoting:
            for line_number, line in lines:
                yield line_number, ((line.split(delimiter) if line else []), line_number)
            return
        yield from quoted_records(file_path, lines, delimiter)

    def _parser(
        self,
        file_path: PathOrStr,
        fmt: str,
        labels: Optional[FrozenSet[str]],
        state: Dict[str, object],
    ):
        """
        `parse(line_number, record)` for `_parse_all`: `((text[, text_pair]), label)`. `state`
        (`_new_state()`) holds what it learns of the file: the header's column indices, the
        width of a row, the first row, and the labels with spaces around them.
        """

        def parse(line_number: int, record: object):
            if isinstance(record, InvalidRow):
                raise record
            if fmt == "jsonl":
                return self._row(self._json_values(str(record)), labels, fmt, line_number, state)
            cells, end = record  # type: ignore[misc]
            try:
                values = self._cell_values(file_path, line_number, cells, fmt, state)
                return self._row(values, labels, fmt, line_number, state)
            except InvalidRow as error:
                if end == line_number:
                    raise
                raise InvalidRow(f"{error} (the record spans lines {line_number}-{end})") from None

        return parse

    def _row(
        self,
        values: Optional[Dict[str, object]],
        labels: Optional[FrozenSet[str]],
        fmt: str,
        line_number: int,
        state: Dict[str, object],
    ):
        if values is None:
            return None
        if state["first"] is None:
            state["first"] = line_number
        maybe_header = state["first"] == line_number and fmt != "jsonl" and not self._header
        row = self._check_values(values, labels, fmt, maybe_header)
        raw = values["label"]
        if not self._regression and isinstance(raw, str) and raw != raw.strip():
            state["spaced"] += 1  # type: ignore[operator]
            if state["spaced_first"] is None:
                state["spaced_first"] = (line_number, raw)
        return row

    def _cell_values(
        self,
        file_path: PathOrStr,
        line_number: int,
        cells: List[str],
        fmt: str,
        state: Dict[str, object],
    ) -> Optional[Dict[str, object]]:
        if not cells:
            return None  # an empty line
        separated = "comma" if fmt == "csv" else "tab"
        if self._header and state["indices"] is None:
            names = [cell.strip() for cell in cells]
            indices = {}
            for role, column in self._columns.items():
                found = [index for index, name in enumerate(names) if name == column]
                if len(found) != 1:
                    problem = "has no column" if not found else "has more than one column"
                    raise ConfigurationError(
                        f"{file_path}, line {line_number}: the header row {problem} named "
                        f"{column!r} (dataset_reader.{role}); its columns are {names}. Expected "
                        "the column names of the config in the first row; if the file has no "
                        "header row, set header: false and give 0-based column indices."
                    )
                indices[role] = found[0]
            state["indices"] = indices
            state["width"] = (len(cells), "in the header row")
            return None
        if state["width"] is None:
            for role, column in self._columns.items():
                if column >= len(cells):  # type: ignore[operator]
                    raise ConfigurationError(
                        f"{file_path}, line {line_number}: dataset_reader.{role} is column "
                        f"{column}, but the first row has {len(cells)} {separated}-separated "
                        f"columns (indices 0-{len(cells) - 1}). Check the column indices and "
                        "the format (CSV or TSV)."
                    )
            state["indices"] = dict(self._columns)
            state["width"] = (len(cells), f"as on line {line_number}, the first row")
        width, reference = state["width"]  # type: ignore[misc]
        if len(cells) != width:
            raise InvalidRow(
                f"found {len(cells)} {separated}-separated columns, expected {width} ({reference})"
            )
        indices: Dict[str, int] = state["indices"]  # type: ignore[assignment]
        return {role: cells[index] for role, index in indices.items()}

    def _json_values(self, line: str) -> Optional[Dict[str, object]]:
        if not line.strip():
            return None
        value = load_json_line(line, "one JSON object a line")
        if not isinstance(value, dict):
            raise InvalidRow(f"a JSON {_json_type(value)}, expected one JSON object a line")
        values = {}
        for role, key in self._columns.items():
            if key not in value:
                raise InvalidRow(
                    f"no key {key!r} (dataset_reader.{role}); the object's keys are {sorted(value)}"
                )
            values[role] = value[key]
        return values

    def _name(self, role: str, fmt: str) -> str:
        column = self._columns[role]
        if fmt == "jsonl":
            return f"{role} (key {column!r})"
        return f"{role} (column {column!r})"

    def _check_values(
        self,
        values: Dict[str, object],
        labels: Optional[FrozenSet[str]],
        fmt: str,
        maybe_header: bool,
    ) -> Tuple[Tuple[str, ...], Union[str, float]]:
        hint = (
            ". Is this first row a header? Then set header: true and name the columns"
            if maybe_header
            else ""
        )
        texts = []
        for role in ("text", "text_pair") if self._pair else ("text",):
            value = values[role]
            if not isinstance(value, str):
                raise InvalidRow(
                    f"the {self._name(role, fmt)} holds a JSON {_json_type(value)}, expected a "
                    "string"
                )
            texts.append(self.text(value, self._name(role, fmt)))
        raw = values["label"]
        name = self._name("label", fmt)
        if self._regression:
            return tuple(texts), self._score(raw, name, hint)
        if isinstance(raw, bool) or not isinstance(raw, (str, int)):
            raise InvalidRow(
                f"the {name} holds a JSON {_json_type(raw)}, expected a string or an integer"
            )
        label = str(raw).strip()
        if not label:
            raise InvalidRow(f"the {name} is empty")
        if labels is not None and label not in labels:
            source = (
                f"the labels of {self._labels_file}"
                if self._labels_file
                else "dataset_reader.labels"
            )
            choices = ", ".join(repr(choice) for choice in sorted(labels))
            raise InvalidRow(
                f"unknown {name} {label!r}, expected one of {choices} ({source}){hint}"
            )
        return tuple(texts), label

    def _score(self, raw: object, name: str, hint: str) -> float:
        """A score: a JSON number, or text in the readers' one number grammar (`NUMBER`)."""
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            raise InvalidRow(f"the {name} holds a JSON {_json_type(raw)}, expected a number")
        if isinstance(raw, str):
            parsed = parse_number(raw)
            if parsed is None and _python_reads(raw) and not math.isfinite(float(raw)):
                raise InvalidRow(f"the {name} {raw!r} is not a finite number")
            if parsed is None:
                # A header cell read as data needs the hint, `1_0` or `３` the grammar.
                grammar = "" if hint and not _python_reads(raw) else f" (expected {NUMBER_GRAMMAR})"
                raise InvalidRow(f"the {name} {raw!r} is not a number{grammar}{hint}")
            number = parsed
        else:
            try:
                number = float(raw)
            except OverflowError:  # a JSON integer beyond the float range
                number = math.inf
        if not math.isfinite(number):
            raise InvalidRow(f"the {name} {raw!r} is not a finite number")
        if self._score_range is not None:
            low, high = self._score_range
            if not low <= number <= high:
                raise InvalidRow(
                    f"the {name} {number:g} is outside dataset_reader.score_range "
                    f"[{low:g}, {high:g}]"
                )
        return number

    # ----------------------------------------------------------------------------------------
    # Instances
    # ----------------------------------------------------------------------------------------
    def _label_value(self, label: Union[str, float, None]) -> Union[str, float, None]:
        if label is None:
            return None
        return float(label) if self._regression else str(label)

    def text_to_instance(  # type: ignore[override]
        self, sentence: str, label: Union[str, float, None] = None
    ) -> Instance:
        # The tokenizer's own special tokens ([CLS] ... [SEP]) stay, as in the `sst2` reader.
        fields: Dict[str, Field] = {"tokens": TextField(self._tokenizer.tokenize(sentence))}
        label = self._label_value(label)
        if isinstance(label, float):
            fields["label"] = TensorField(torch.tensor(label, dtype=torch.float32))
        elif label is not None:
            fields["label"] = LabelField(label)
        return Instance(fields)
