"""
A run's dev (or test) predictions, as the paired bootstrap, the score checks and the sequential
looks read them.

Each run writes one JSON line per dev example, in input order:
`{"index": i, "gold": G, "prediction": P}`, with G and P label strings (classification), numbers
(regression) or lists of tag strings, one per word (tagging: BIO / IOB2, IOB1, BIOUL or BMES).
`read_predictions` reads such a file; `check_same_examples` refuses runs that cannot be paired
example by example.
"""

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Mapping, Optional, Sequence, Union

from allennlp_tune.rundir.names import PREDICTIONS_NAME


class PredictionsMismatch(ValueError):
    """Runs that cannot be compared example by example (other examples, order or golds)."""


@dataclass
class Predictions:
    """One run's dev predictions: golds and predictions in input order, and where they came from."""

    golds: List[Any]
    predictions: List[Any]
    source: str = "<predictions>"

    def __post_init__(self) -> None:
        if len(self.golds) != len(self.predictions):
            raise PredictionsMismatch(
                f"{self.source}: {len(self.golds)} golds but {len(self.predictions)} predictions"
            )

    def __len__(self) -> int:
        return len(self.golds)

    @classmethod
    def from_records(
        cls, records: Sequence[Mapping[str, Any]], source: str = "<predictions>"
    ) -> "Predictions":
        """From `{"index": i, "gold": G, "prediction": P}` records, checked to be in order."""
        golds, predictions = [], []
        for position, record in enumerate(records):
            where = f"{source}, example {position}"
            if not isinstance(record, Mapping):
                raise PredictionsMismatch(f"{where}: expected an object, found {record!r:.60}")
            missing = [key for key in ("index", "gold", "prediction") if key not in record]
            if missing:
                raise PredictionsMismatch(
                    f"{where}: no {', '.join(missing)} (expected "
                    '{"index": i, "gold": G, "prediction": P})'
                )
            if record["index"] != position:
                raise PredictionsMismatch(
                    f"{where}: index is {record['index']!r}, expected {position} (one line per "
                    "dev example, in input order)"
                )
            golds.append(record["gold"])
            predictions.append(record["prediction"])
        return cls(golds, predictions, source)


def read_predictions(path: Union[str, Path]) -> Predictions:
    """
    Reads a `dev_predictions.jsonl` (blank lines skipped). A line that is not JSON raises a
    `PredictionsMismatch` naming the file and line, so a broken run is found, not skipped.
    """
    path = Path(path)
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError as error:
                raise PredictionsMismatch(f"{path} line {number}: not JSON ({error})") from None
    return Predictions.from_records(records, str(path))


def run_predictions(run_dirs: Sequence[Union[str, Path]]) -> List[Predictions]:
    """The `dev_predictions.jsonl` of each run directory (FileNotFoundError names a missing one)."""
    return [read_predictions(Path(run_dir) / PREDICTIONS_NAME) for run_dir in run_dirs]


PredictionsLike = Union[Predictions, str, Path, Sequence[Mapping[str, Any]]]


def as_predictions(item: PredictionsLike, source: Optional[str] = None) -> Predictions:
    """
    `item` as `Predictions`: returned as it is, read from a path, or built from a list of
    records (named `source` in errors, as records have no file to name).
    """
    if isinstance(item, Predictions):
        return item
    if isinstance(item, (str, Path)):
        return read_predictions(item)
    return Predictions.from_records(list(item), source or "<predictions>")


def _same(a: Any, b: Any) -> bool:
    """Equal golds; floats within rounding (a regression gold may be written with other digits)."""
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
        except TypeError:
            return False
    return bool(a == b)


def check_same_examples(runs: Sequence[Predictions]) -> None:
    """Every run has the first run's examples and golds, in its order; else names the files."""
    reference = runs[0]
    for run in runs[1:]:
        if len(run) != len(reference):
            raise PredictionsMismatch(
                f"{run.source} has {len(run)} examples but {reference.source} has "
                f"{len(reference)}: the runs were not scored on the same dev set"
            )
        for position, (gold, expected) in enumerate(zip(run.golds, reference.golds)):
            if not _same(gold, expected):
                raise PredictionsMismatch(
                    f"{run.source} and {reference.source} differ at example {position}: gold "
                    f"{gold!r:.60} vs {expected!r:.60} (another dev set, order or label mapping)"
                )
