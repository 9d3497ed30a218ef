from typing import Optional, Tuple

from allennlp.data.dataset_readers.dataset_reader import DatasetReader

from allennlp_tune.data.dataset_readers.task_reader import SentenceTaskReader

LABELS = {"0": "0", "1": "1"}


@DatasetReader.register("cola")
class ColaReader(SentenceTaskReader):
    """
    Reads CoLA's raw release files (`in_domain_train.tsv`, `in_domain_dev.tsv`,
    `out_of_domain_dev.tsv`; GLUE's `train.tsv` / `dev.tsv` are the same format): UTF-8,
    tab-separated, no header, 4 columns `source, label, original_judgment, sentence`, label `1`
    (acceptable) or `0`.

    Instances: `tokens` and `label` (`"0"` / `"1"`). Used for probing (Matthews correlation).

    Registered as a `DatasetReader` with name "cola".

    ```jsonnet
    "dataset_reader": {"type": "cola"},
    "train_data_path": data_dir + "/cola/in_domain_train.tsv",
    ```

    # Parameters

    (`tokenizer`, `token_indexers`, `skip_invalid`: see `TaskReader`)
    """

    def parse_line(self, line_number: int, line: str) -> Optional[Tuple[str, str]]:
        fields = self.split(line, 4, "source, label, original_judgment, sentence")
        return self.text(fields[3], "sentence"), self.label(fields[1], LABELS)
