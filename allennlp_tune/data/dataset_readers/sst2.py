from typing import Optional, Tuple

from allennlp.data.dataset_readers.dataset_reader import DatasetReader

from allennlp_tune.data.dataset_readers.task_reader import InvalidRow, SentenceTaskReader

LABELS = {"0": "0", "1": "1"}


@DatasetReader.register("sst2")
class Sst2Reader(SentenceTaskReader):
    """
    Reads binary SST (SST-2) in GLUE's format or SentEval's.

    - GLUE `train.tsv` / `dev.tsv`: UTF-8, a header row `sentence<TAB>label`, then
      `sentence<TAB>label` lines with labels `0` (negative) / `1` (positive).
    - SentEval `sentiment-{train,dev,test}`: no header, `sentence<SPACE><TAB>label` (the space
      before the tab is part of the format and is dropped).

    Instances: `tokens` and `label` (`"0"` / `"1"`).

    Registered as a `DatasetReader` with name "sst2".

    ```jsonnet
    "dataset_reader": {"type": "sst2"},
    "train_data_path": data_dir + "/sst-2/train.tsv",
    ```

    # Parameters

    (`tokenizer`, `token_indexers`, `skip_invalid`: see `TaskReader`)
    """

    def parse_line(self, line_number: int, line: str) -> Optional[Tuple[str, str]]:
        if line_number == 1 and line == "sentence\tlabel":
            return None
        sentence, tab, label = line.rpartition("\t")
        if not tab:
            raise InvalidRow("no tab found, expected 'sentence<TAB>label'")
        return self.text(sentence.rstrip(" "), "sentence"), self.label(label, LABELS)
