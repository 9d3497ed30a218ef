"""`tune_table_pair`: `tune_table` for the pair kinds, whose instances are sentence pairs."""

from typing import Union

from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data.instance import Instance

from allennlp_tune.data.dataset_readers.tune_table import TuneTableReader


@DatasetReader.register("tune_table_pair")
class TuneTablePairReader(TuneTableReader):
    """
    `TuneTableReader` (its docstring has the formats, the columns and the checks) for the kinds
    `pair_classification` and `pair_regression`: `text_to_instance` takes a premise and a
    hypothesis, which is how the `tune_text_classifier` predictor tells pair readers from
    single ones. A config's `"type": "tune_table"` with a pair kind builds this class, so task
    files need not name it; from Python, build this class for pairs and `TuneTableReader` for
    single sentences (the other kinds are refused, naming the right class).

    Registered as a `DatasetReader` with name "tune_table_pair".

    ```jsonnet
    "dataset_reader": {
      "type": "tune_table", // or "tune_table_pair"
      "kind": "pair_regression", "header": false,
      "text": 1, "text_pair": 2, "label": 0, "score_range": [0, 5],
    },
    ```

    # Parameters

    kind : `str`, optional (default = `"pair_classification"`)
        `"pair_classification"` or `"pair_regression"`.
    (the others: see `TuneTableReader`)
    """

    reads_pairs = True

    def __init__(self, kind: str = "pair_classification", **kwargs) -> None:
        super().__init__(kind=kind, **kwargs)

    def text_to_instance(  # type: ignore[override]
        self, premise: str, hypothesis: str, label: Union[str, float, None] = None
    ) -> Instance:
        return self.pair_instance(premise, hypothesis, self._label_value(label))
