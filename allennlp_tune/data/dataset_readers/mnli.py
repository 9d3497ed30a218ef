import csv
import json
import logging
from typing import Any, Iterable, Iterator, List, Optional, Tuple

from allennlp.data.dataset_readers.dataset_reader import DatasetReader, PathOrStr
from allennlp.data.instance import Instance

from allennlp_tune.data.dataset_readers.quoted_records import FIELD_LIMIT_ERROR, field_too_large
from allennlp_tune.data.dataset_readers.task_reader import (
    DuplicateKey,
    InvalidRow,
    PairTaskReader,
    json_too_deep_message,
    unique_keys,
)

logger = logging.getLogger(__name__)

LABELS = {"entailment": "entailment", "neutral": "neutral", "contradiction": "contradiction"}
NO_GOLD_LABEL = "-"
EXPECTED_JSON = "expected a JSON object with sentence1, sentence2 and gold_label"


@DatasetReader.register("mnli")
class MnliReader(PairTaskReader):
    """
    Reads MultiNLI in any of its common formats; the format is chosen by the file name.

    - `*.jsonl` (official release): one JSON object a line with `gold_label`, `sentence1`,
      `sentence2`.
    - `*.csv`: standard CSV quoting (a quoted field may span lines), a header row with
      `sentence1`, `sentence2` and `label` (or `gold_label`), e.g. `pairID,sentence1,sentence2,
      label`.
    - anything else, `*.tsv` / `*.txt` (official release and GLUE): tab-separated, no quote
      processing, a header row naming `sentence1`, `sentence2` and `gold_label`.

    Labels are `entailment`, `neutral`, `contradiction`. Rows whose gold label is `-` (no
    annotator consensus) are not part of the task: they are dropped, and their number is logged.

    Instances: `tokens` (`pair_encoding: "joint"`) or `premise`/`hypothesis`, and `label`.

    Registered as a `DatasetReader` with name "mnli".

    ```jsonnet
    "dataset_reader": {"type": "mnli"},
    "validation_data_path": data_dir + "/mnli/multinli_1.0_dev_matched.csv",
    ```

    # Parameters

    (`pair_encoding`, `tokenizer`, `token_indexers`, `skip_invalid`: see `PairTaskReader`)
    """

    def _empty_hint(self) -> str:
        return f"; rows whose gold label is {NO_GOLD_LABEL!r} are dropped"

    def _read(self, file_path: PathOrStr) -> Iterable[Instance]:
        name = str(file_path).lower()
        if name.endswith(".jsonl"):
            records = self._jsonl_records(file_path)
        elif name.endswith(".csv"):
            records = self._table_records(file_path, self._csv_rows(file_path))
        else:
            rows = ((n, line.split("\t")) for n, line in self._lines(file_path))
            records = self._table_records(file_path, rows)
        dropped = 0

        def parse(line_number: int, record) -> Optional[Tuple[str, str, str]]:
            nonlocal dropped
            if isinstance(record, InvalidRow):
                raise record
            sentence1, sentence2, label = record
            if label.strip() == NO_GOLD_LABEL:
                dropped += 1
                return None
            return (
                self.text(sentence1, "sentence1"),
                self.text(sentence2, "sentence2"),
                self.label(label, LABELS, "gold label"),
            )

        for premise, hypothesis, label in self._parse_all(
            file_path, parse, lines=records, unit="row"
        ):
            yield self.text_to_instance(premise, hypothesis, label)
        logger.info("Dropped %d rows without a gold label ('-') from %s", dropped, file_path)

    def _csv_rows(self, file_path: PathOrStr) -> Iterator[Tuple[int, object]]:
        """`(first line, cells)` per CSV record, or `(first line, InvalidRow)`."""
        lines = self._lines(file_path)
        numbers: List[int] = []

        def feed() -> Iterator[str]:
            for line_number, line in lines:
                numbers.append(line_number)
                yield line + "\n"

        reader = csv.reader(feed())
        first_line = 1
        while True:
            try:
                row: object = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                last = numbers[-1] if numbers else first_line
                row = (
                    field_too_large(first_line, last)
                    if FIELD_LIMIT_ERROR in str(error)
                    else InvalidRow(f"not readable as CSV ({error})")
                )
            yield first_line, row
            first_line = numbers[-1] + 1 if numbers else first_line

    def _table_records(self, file_path: PathOrStr, rows: Iterator[Tuple[int, Any]]):
        header: Optional[List[str]] = None
        for line_number, row in rows:
            if isinstance(row, InvalidRow):  # a CSV record that could not be read
                yield line_number, row
                continue
            if header is None:
                header = [column.strip() for column in row]
                label_column = "gold_label" if "gold_label" in header else "label"
                missing = [c for c in ("sentence1", "sentence2", label_column) if c not in header]
                if missing:
                    yield (
                        line_number,
                        InvalidRow(
                            f"the header lacks the column(s) {', '.join(missing)}; expected a "
                            "header naming sentence1, sentence2 and gold_label (or label)"
                        ),
                    )
                    return
                positions = [header.index(c) for c in ("sentence1", "sentence2", label_column)]
                continue
            if len(row) != len(header):
                yield (
                    line_number,
                    InvalidRow(
                        f"found {len(row)} columns, expected {len(header)} as in the header"
                    ),
                )
                continue
            yield line_number, tuple(row[p] for p in positions)

    def _jsonl_records(self, file_path: PathOrStr):
        for line_number, line in self._lines(file_path):
            if not line.strip():
                continue
            try:
                record = json.loads(line, object_pairs_hook=unique_keys)
                yield line_number, (record["sentence1"], record["sentence2"], record["gold_label"])
            except DuplicateKey as error:
                yield line_number, InvalidRow(f"{error} (which value is meant?); {EXPECTED_JSON}")
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                yield (
                    line_number,
                    InvalidRow(
                        f"expected a JSON object with sentence1, sentence2 and gold_label ({error})"
                    ),
                )
            except RecursionError:
                yield (
                    line_number,
                    InvalidRow(
                        f"{json_too_deep_message()}; expected a JSON object with sentence1, "
                        "sentence2 and gold_label"
                    ),
                )

    def text_to_instance(  # type: ignore[override]
        self, premise: str, hypothesis: str, label: Optional[str] = None
    ) -> Instance:
        return self.pair_instance(premise, hypothesis, label)
