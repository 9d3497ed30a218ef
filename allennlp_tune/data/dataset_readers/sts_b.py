from typing import Iterable, Optional

from allennlp.data.dataset_readers.dataset_reader import DatasetReader, PathOrStr
from allennlp.data.instance import Instance

from allennlp_tune.data.dataset_readers.task_reader import PairTaskReader

RELEASE_COLUMNS = "genre, filename, year, id, score, sentence1, sentence2 [, source fields]"
GLUE_HEADER = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
GLUE_COLUMNS = GLUE_HEADER.replace("\t", ", ") + ", score"


@DatasetReader.register("sts_b")
class StsBReader(PairTaskReader):
    """
    Reads the STS Benchmark, in the release format or GLUE's, for regression (score 0 to 5).

    - Release files `sts-{train,dev,test}.csv`: UTF-8, tab-separated, no header, 7 fields
      `genre, filename, year, id, score, sentence1, sentence2`, sometimes followed by 2 source
      fields that are ignored. Sentences hold unbalanced `"`, so no quote processing is done.
    - GLUE `train.tsv` / `dev.tsv`: a header row starting `index<TAB>genre`, 10 fields, the score
      last. The format is recognised from the first line.

    Instances: `tokens` (`pair_encoding: "joint"`) or `premise`/`hypothesis`, and `label`, a
    float `TensorField` holding the gold score.

    Registered as a `DatasetReader` with name "sts_b".

    ```jsonnet
    "dataset_reader": {"type": "sts_b"},
    "train_data_path": data_dir + "/sts-b/sts-train.csv",
    "validation_data_path": data_dir + "/sts-b/sts-dev.csv",
    ```

    # Parameters

    (`pair_encoding`, `tokenizer`, `token_indexers`, `skip_invalid`: see `PairTaskReader`)
    """

    def _read(self, file_path: PathOrStr) -> Iterable[Instance]:
        glue = False

        def parse(line_number: int, line: str):
            nonlocal glue
            if line_number == 1 and line.startswith("index\tgenre"):
                glue = True
                return None
            if glue:
                fields = self.split(line, 10, GLUE_COLUMNS)
                sentence1, sentence2, score = fields[7], fields[8], fields[9]
            else:
                fields = self.split(line, 7, RELEASE_COLUMNS, at_least=True)
                score, sentence1, sentence2 = fields[4], fields[5], fields[6]
            return (
                self.text(sentence1, "sentence1"),
                self.text(sentence2, "sentence2"),
                self.score(score, 0.0, 5.0),
            )

        for premise, hypothesis, score in self._parse_all(file_path, parse):
            yield self.text_to_instance(premise, hypothesis, score)

    def text_to_instance(  # type: ignore[override]
        self, premise: str, hypothesis: str, label: Optional[float] = None
    ) -> Instance:
        return self.pair_instance(premise, hypothesis, None if label is None else float(label))
