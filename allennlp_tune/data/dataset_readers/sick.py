from typing import Iterable, Optional, Union

from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_reader import DatasetReader, PathOrStr
from allennlp.data.instance import Instance

from allennlp_tune.data.dataset_readers.task_reader import InvalidRow, PairTaskReader

SPLITS = {"train": "TRAIN", "trial": "TRIAL", "dev": "TRIAL", "test": "TEST"}
ENTAILMENT_LABELS = {
    "ENTAILMENT": "entailment",
    "NEUTRAL": "neutral",
    "CONTRADICTION": "contradiction",
}
COLUMNS = (
    "pair_ID, sentence_A, sentence_B, entailment_label, relatedness_score, entailment_AB, "
    "entailment_BA, sentence_A_original, sentence_B_original, sentence_A_dataset, "
    "sentence_B_dataset, SemEval_set"
)


@DatasetReader.register("sick")
class SickReader(PairTaskReader):
    """
    Reads the SICK release file `SICK.txt` for SICK-E (entailment) or SICK-R (relatedness).

    The file is tab-separated, with CRLF line endings, a header row and 12 columns: `pair_ID`,
    `sentence_A`, `sentence_B`, `entailment_label` (`NEUTRAL` / `ENTAILMENT` / `CONTRADICTION`),
    `relatedness_score` (1 to 5), `entailment_AB`, `entailment_BA`, `sentence_A_original`,
    `sentence_B_original`, `sentence_A_dataset`, `sentence_B_dataset`, `SemEval_set`
    (`TRAIN` / `TRIAL` / `TEST`). All three splits live in the one file; the reader keeps the
    rows of one split. TRIAL is the usual development split.

    Instances: `premise` and `hypothesis` (`pair_encoding: "separate"`) or `tokens` (`"joint"`),
    and `label`: a `LabelField` (`entailment` / `neutral` / `contradiction`, lower-cased as in
    MultiNLI) for `task: "entailment"`, a float `TensorField` for `task: "relatedness"`.

    Registered as a `DatasetReader` with name "sick".

    ```jsonnet
    "dataset_reader": {"type": "sick", "task": "relatedness", "split": "train"},
    "validation_dataset_reader": {"type": "sick", "task": "relatedness", "split": "trial"},
    "train_data_path": std.extVar("TUNE_DATA_DIR") + "/sick/SICK.txt",
    ```

    The split may also be given in the path, which overrides `split`:
    `".../SICK.txt#trial"`.

    # Parameters

    task : `str`, optional (default = `"entailment"`)
        `"entailment"` (SICK-E, 3 labels) or `"relatedness"` (SICK-R, a score from 1 to 5).
    split : `str`, optional (default = `None`)
        `"train"`, `"trial"` (alias `"dev"`) or `"test"`. Required unless the path names it.
    (plus `pair_encoding`, `tokenizer`, `token_indexers`, `skip_invalid`: see `PairTaskReader`)
    """

    def __init__(self, task: str = "entailment", split: Optional[str] = None, **kwargs) -> None:
        super().__init__(**kwargs)
        if task not in ("entailment", "relatedness"):
            raise ConfigurationError(
                f"dataset_reader.task is {task!r}; expected 'entailment' (SICK-E) or "
                "'relatedness' (SICK-R)."
            )
        self._task = task
        self._split = self._check_split(split) if split is not None else None

    @staticmethod
    def _check_split(split: str) -> str:
        if split.lower() not in SPLITS:
            raise ConfigurationError(
                f"SICK split {split!r} is unknown; expected one of 'train', 'trial' (or 'dev'), "
                "'test', as dataset_reader.split or as a '#split' suffix of the data path."
            )
        return SPLITS[split.lower()]

    def _empty_hint(self) -> str:
        return (
            "; this reader keeps only the rows of one split (dataset_reader.split or the path's "
            "'#split' suffix): does the file have rows whose SemEval_set is that split?"
        )

    def _read(self, file_path: PathOrStr) -> Iterable[Instance]:
        path, _, fragment = str(file_path).partition("#")
        split = self._check_split(fragment) if fragment else self._split
        if split is None:
            raise ConfigurationError(
                f"No SICK split given for {file_path}: set dataset_reader.split (and "
                "validation_dataset_reader.split) to 'train', 'trial' or 'test', or append "
                "'#trial' to the data path."
            )

        def parse(line_number: int, line: str):
            if line_number == 1 and line.startswith("pair_ID"):
                return None
            fields = self.split(line, 12, COLUMNS)
            if fields[11] not in SPLITS.values():
                raise InvalidRow(
                    f"unknown SemEval_set {fields[11]!r}, expected 'TRAIN', 'TRIAL' or 'TEST'"
                )
            if fields[11] != split:
                return None
            premise = self.text(fields[1], "sentence_A")
            hypothesis = self.text(fields[2], "sentence_B")
            if self._task == "entailment":
                label = self.label(fields[3], ENTAILMENT_LABELS, "entailment_label")
            else:
                label = self.score(fields[4], 1.0, 5.0, "relatedness_score")
            return premise, hypothesis, label

        for premise, hypothesis, label in self._parse_all(path, parse):
            yield self.text_to_instance(premise, hypothesis, label)

    def text_to_instance(  # type: ignore[override]
        self, premise: str, hypothesis: str, label: Union[str, float, None] = None
    ) -> Instance:
        return self.pair_instance(premise, hypothesis, label)
