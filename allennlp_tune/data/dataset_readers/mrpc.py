from typing import Iterable, Optional, Set, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_reader import DatasetReader, PathOrStr
from allennlp.data.instance import Instance

from allennlp_tune.data.dataset_readers.task_reader import PairTaskReader

LABELS = {"0": "0", "1": "1"}
COLUMNS = "Quality, #1 ID, #2 ID, #1 String, #2 String"


@DatasetReader.register("mrpc")
class MrpcReader(PairTaskReader):
    """
    Reads MRPC in the Microsoft release format, which GLUE's `train.tsv` / `dev.tsv` share.

    `msr_paraphrase_{train,test}.txt` (original or SentEval-tokenised copy) and GLUE's
    `dev.tsv`: UTF-8, possibly with a BOM, tab-separated, a header row `Quality  #1 ID  #2 ID
    #1 String  #2 String`, one pair per line; `Quality` is `1` (paraphrase) or `0`.

    GLUE's dev split is the 408 pairs of `msr_paraphrase_train.txt` listed in `dev_ids.tsv`
    (`#1 ID<TAB>#2 ID`, no header) and its train split the other 3,668: give `ids_file` with
    `ids: "include"` or `"exclude"` to read either from the release file.

    Instances: `tokens` (`pair_encoding: "joint"`) or `premise`/`hypothesis`, and `label`
    (`"0"` / `"1"`).

    Registered as a `DatasetReader` with name "mrpc".

    ```jsonnet
    "dataset_reader": {"type": "mrpc", "ids_file": data_dir + "/mrpc/glue/dev_ids.tsv",
                       "ids": "exclude"},
    "validation_dataset_reader": {"type": "mrpc", "ids_file": data_dir + "/mrpc/glue/dev_ids.tsv",
                                  "ids": "include"},
    ```

    # Parameters

    ids_file : `str`, optional (default = `None`)
        A file of `#1 ID<TAB>#2 ID` pairs (GLUE's `dev_ids.tsv`).
    ids : `str`, optional (default = `"include"`)
        With `ids_file`: keep only the listed pairs (`"include"`) or all others (`"exclude"`).
    (plus `pair_encoding`, `tokenizer`, `token_indexers`, `skip_invalid`: see `PairTaskReader`)
    """

    def __init__(self, ids_file: Optional[str] = None, ids: str = "include", **kwargs) -> None:
        super().__init__(**kwargs)
        if ids not in ("include", "exclude"):
            raise ConfigurationError(
                f"dataset_reader.ids is {ids!r}; expected 'include' or 'exclude'."
            )
        self._ids_file = ids_file
        self._include = ids == "include"
        self._ids: Optional[Set[Tuple[str, str]]] = None

    def _load_ids(self) -> Set[Tuple[str, str]]:
        if self._ids is None:
            ids = set()
            for line_number, line in self._lines(self._ids_file):
                fields = line.split("\t")
                if len(fields) != 2 or not all(field.strip() for field in fields):
                    raise ConfigurationError(
                        f"{self._ids_file}, line {line_number}: expected '#1 ID<TAB>#2 ID', "
                        f"got {line!r}."
                    )
                ids.add((fields[0].strip(), fields[1].strip()))
            self._ids = ids
        return self._ids

    def _empty_hint(self) -> str:
        if not self._ids_file:
            return ""
        kept = "listed in" if self._include else "not listed in"
        return (
            f"; with ids: {'include' if self._include else 'exclude'} only the pairs {kept} "
            f"ids_file {self._ids_file} are kept: is it the ids file of this release file?"
        )

    def _read(self, file_path: PathOrStr) -> Iterable[Instance]:
        ids = self._load_ids() if self._ids_file else None

        def parse(line_number: int, line: str):
            if line_number == 1 and line.startswith("Quality"):
                return None
            fields = self.split(line, 5, COLUMNS)
            label = self.label(fields[0], LABELS, "Quality")
            if ids is not None and ((fields[1], fields[2]) in ids) != self._include:
                return None
            return self.text(fields[3], "#1 String"), self.text(fields[4], "#2 String"), label

        for premise, hypothesis, label in self._parse_all(file_path, parse):
            yield self.text_to_instance(premise, hypothesis, label)

    def text_to_instance(  # type: ignore[override]
        self, premise: str, hypothesis: str, label: Optional[str] = None
    ) -> Instance:
        return self.pair_instance(premise, hypothesis, label)
