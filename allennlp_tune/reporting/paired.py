"""
Is one mode better than another on a task, or is the difference noise? A paired bootstrap over
dev examples and seeds, from the runs' `dev_predictions.jsonl`.

Each run writes one JSON line per dev example, in input order:
`{"index": i, "gold": G, "prediction": P}`, with G and P label strings (classification), numbers
(regression) or lists of tag strings, one per word (tagging: BIO / IOB2, IOB1, BIOUL or BMES).
`read_predictions` reads such a file; `compare_modes` and `paired_bootstrap` take, for each mode,
the predictions of its seeds (`Predictions`, paths, or lists of those records).

The test
--------
Every run of both modes must cover the same dev examples in the same order with the same golds
(checked; a `PredictionsMismatch` names the two files that differ). In each of `replicates`
(default 2000) bootstrap replicates:

1. the dev examples are resampled with replacement (n of n), and the *same* resample is used for
   every mode and seed: the comparison is paired, so what both modes get right or wrong cancels
   out, and only the examples on which they disagree move the difference;
2. each mode's metric is computed on that resample for each of its seeds, from the resample's
   sums (correct predictions, a confusion matrix, span counts, moments, midranks), not averaged
   per example, so F1, MCC, correlations and span F1 are the real corpus-level metrics;
3. each mode's seeds are resampled with replacement (S of its S, independently per mode: seed 1
   of fe and seed 1 of ft share nothing) and the mode's score is the mean over those seeds;
4. the difference is score(mode_a) - score(mode_b).

The 95% interval is the 2.5th and 97.5th percentiles of those differences (the percentile
bootstrap); the verdict is the mode it favours, or `tie` when the interval contains 0.

Why resample seeds rather than only average over them: the question is whether the *recipe* (the
mode, trained with a random seed) is better, not whether these particular trained models are.
Averaging the fixed seeds in every replicate would treat the seeds' mean as fixed and report only
the uncertainty from the dev sample, so a gap that comes from one lucky seed would look certain.
Resampling seeds adds their spread to the interval, the hierarchical bootstrap that Bouthillier
et al. (2021, "Accounting for Variance in Machine Learning Benchmarks") recommend for comparing
training procedures across their sources of variance (data sampling and seeds), and in the spirit
of Dror et al. (2018, "The Hitchhiker's Guide to Testing Statistical Significance in NLP") on
paired bootstrap tests over test examples. With 3 to 5 seeds the seed level is coarse (a mode
with one seed adds no seed variance), so the interval is still a lower bound on the true
uncertainty; `resample_seeds=False` gives the data-only interval.

Units and definitions follow `tune-report`: scores are ×100 (points) like its cells, and on the
full sample each value equals the trainer's metric: `accuracy` (CategoricalAccuracy), `f1` of a
positive label (F1Measure; needs `positive_label`), `mcc` (multi-class Matthews correlation, 0 when
undefined), `pearson` and `spearman` (midranks for ties; 0 when a side is constant, as the
models' RegressionMetrics report it), and `f1-measure-overall` (SpanBasedF1Measure's span F1;
the unit resampled is the sentence, since its spans are not independent).

Speed: replicates are drawn in chunks as count matrices W (replicates x examples), and every
metric but Spearman is a matrix product of W with per-example statistics, so 10,000 examples x 5
seeds x 5 modes x 2000 replicates take about a second for accuracy and a few for Spearman.
"""

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from allennlp_tune.reporting.labels import signed
from allennlp_tune.rundir.names import PREDICTIONS_NAME

TIE = "tie"
DEFAULT_REPLICATES = 2000
DEFAULT_CONFIDENCE = 0.95

# Metric names as the configs' validation_metric (and the report) name them -> our kind.
METRICS = {
    "accuracy": "accuracy",
    "f1": "f1",
    "mcc": "mcc",
    "pearson": "pearson",
    "spearman": "spearman",
    "f1-measure-overall": "span_f1",
    "span_f1": "span_f1",
}
TAG_ENCODINGS = ("BIO", "IOB1", "BIOUL", "BMES")
# How many matrix cells (replicates x examples) one chunk of the bootstrap holds.
CHUNK_CELLS = 4_000_000


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


@dataclass(frozen=True)
class PairedResult:
    """score_a - score_b with its bootstrap interval, in points (×100) like tune-report."""

    metric: str
    mode_a: str
    mode_b: str
    score_a: float  # mean over seeds on the full dev set
    score_b: float
    difference: float  # score_a - score_b
    low: float
    high: float
    verdict: str  # mode_a, mode_b or "tie"
    examples: int
    seeds_a: int
    seeds_b: int
    replicates: int
    confidence: float = DEFAULT_CONFIDENCE
    resample_seeds: bool = True
    std_error: float = 0.0  # the bootstrap differences' standard deviation

    @property
    def width(self) -> float:
        return self.high - self.low

    def text(self, digits: int = 1) -> str:
        """`+1.2 [-0.3, +2.8] tie`."""
        interval = f"[{signed(self.low, digits)}, {signed(self.high, digits)}]"
        return f"{signed(self.difference, digits)} {interval} {self.verdict}"

    def as_dict(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def describe_test(
    replicates: int = DEFAULT_REPLICATES,
    confidence: float = DEFAULT_CONFIDENCE,
    resample_seeds: bool = True,
) -> str:
    """One sentence for a report's notes on how the intervals and verdicts were made."""
    seeds = (
        "and each mode's seeds (resampled with replacement, mean over them)"
        if resample_seeds
        else "(each mode's score the mean over its seeds)"
    )
    return (
        f"Paired bootstrap over dev examples (the same resampled examples for both modes) {seeds}, "
        f"{replicates} replicates; {confidence:.0%} percentile interval of the difference; "
        f"the verdict is the mode it favours, or {TIE} when the interval contains 0."
    )


# Scorers: the per-seed metric of one mode for a batch of resamples -------------------------------

# W: (replicates, examples) counts of each example in each resample -> (seeds, replicates).
Scorer = Callable[[np.ndarray], np.ndarray]


def _safe_divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, and 0 where the denominator is 0 (as AllenNLP's metrics do)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = numerator / denominator
    return np.where(denominator > 0, out, 0.0)


def _label_ids(runs: Sequence[Predictions], labels: Dict[Any, int]) -> Tuple[np.ndarray, ...]:
    """
    The golds (of the first run; the runs are checked to share them) and each run's predictions
    as integer ids, numbering labels in `labels` as they are first seen.
    """

    def ids(values: Sequence[Any]) -> np.ndarray:
        return np.array([labels.setdefault(_label_key(v), len(labels)) for v in values])

    gold = ids(runs[0].golds)
    return (gold,) + tuple(ids(run.predictions) for run in runs)


def _label_key(value: Any) -> Any:
    """A label as a dictionary key; lists (tags) and objects are not labels."""
    if isinstance(value, (list, dict)):
        raise PredictionsMismatch(f"expected a label, found {value!r:.60}")
    return value


def _classification_scorer(
    kind: str, runs: Sequence[Predictions], positive_label: Optional[str]
) -> Scorer:
    """
    The scorer of `accuracy`, `f1` (of `positive_label`) or `mcc` over the runs' seeds. Each
    metric is a function of per-example counts summed over a resample (correct, true positive,
    confusion-matrix margins), so a batch of resamples is one matrix product.
    """
    labels: Dict[Any, int] = {}
    gold, *predicted = _label_ids(runs, labels)
    predictions = np.stack(predicted)  # (S, n)
    seeds, n = predictions.shape
    if kind == "accuracy":
        stats = (predictions == gold).T.astype(np.float64)  # (n, S)

        def accuracy(weights: np.ndarray) -> np.ndarray:
            return (weights @ stats).T / weights.sum(axis=1)

        return accuracy
    if kind == "f1":
        if positive_label is None:
            raise ValueError("metric f1 needs positive_label (the label whose F1 it is)")
        if positive_label not in labels:
            raise ValueError(
                f"positive_label {positive_label!r} is not a label of {runs[0].source} and the "
                f"runs compared with it (labels: {sorted(map(str, labels))})"
            )
        positive = labels[positive_label]
        is_gold = gold == positive
        is_predicted = predictions == positive
        stats = np.concatenate(
            [(is_predicted & is_gold).T, is_predicted.T, is_gold[:, None]], axis=1
        ).astype(np.float64)

        def f1(weights: np.ndarray) -> np.ndarray:
            sums = weights @ stats
            tp, predicted_, gold_ = sums[:, :seeds], sums[:, seeds : 2 * seeds], sums[:, -1:]
            return _safe_divide(2 * tp, predicted_ + gold_).T

        return f1
    # mcc: correct counts, gold class counts and predicted class counts per seed.
    classes = len(labels)
    gold_onehot = np.eye(classes)[gold]  # (n, K)
    predicted_onehot = np.eye(classes)[predictions]  # (S, n, K)
    stats = np.concatenate(
        [
            (predictions == gold).T,
            gold_onehot,
            predicted_onehot.transpose(1, 0, 2).reshape(n, seeds * classes),
        ],
        axis=1,
    ).astype(np.float64)

    def mcc(weights: np.ndarray) -> np.ndarray:
        sums = weights @ stats
        correct = sums[:, :seeds]  # (B, S)
        gold_counts = sums[:, seeds : seeds + classes]  # (B, K)
        predicted_counts = sums[:, seeds + classes :].reshape(-1, seeds, classes)  # (B, S, K)
        total = weights.sum(axis=1)[:, None]  # (B, 1)
        numerator = correct * total - np.einsum("bsk,bk->bs", predicted_counts, gold_counts)
        spread_predicted = total**2 - (predicted_counts**2).sum(axis=2)
        spread_gold = total**2 - (gold_counts**2).sum(axis=1, keepdims=True)
        return _safe_divide(numerator, np.sqrt(spread_predicted * spread_gold)).T

    return mcc


def _numbers(values: Sequence[Any], source: str) -> np.ndarray:
    """Finite numbers (not booleans) as an array; else names the source and example."""
    for position, value in enumerate(values):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise PredictionsMismatch(
                f"{source}, example {position}: expected a finite number, found {value!r:.60}"
            )
    return np.asarray(values, dtype=np.float64)


def _pearson_scorer(runs: Sequence[Predictions]) -> Scorer:
    """
    The scorer of Pearson's correlation over the runs' seeds, from a resample's sums of y, y^2,
    x, x^2 and xy; 0 where a side is constant, as the models' RegressionMetrics report it.
    """
    gold = _numbers(runs[0].golds, runs[0].source)
    predictions = np.stack([_numbers(run.predictions, run.source) for run in runs])  # (S, n)
    seeds = len(runs)
    # Centred on the full-sample means, for numerical stability; correlation is unchanged.
    y = gold - gold.mean()
    x = predictions - predictions.mean(axis=1, keepdims=True)
    stats = np.concatenate([y[:, None], (y**2)[:, None], x.T, (x**2).T, (x * y).T], axis=1)

    def pearson(weights: np.ndarray) -> np.ndarray:
        sums = weights @ stats
        total = weights.sum(axis=1)[:, None]
        sy, syy = sums[:, :1], sums[:, 1:2]
        sx, sxx, sxy = (sums[:, 2 + k * seeds : 2 + (k + 1) * seeds] for k in range(3))
        covariance = sxy - sx * sy / total
        variance_x = sxx - sx**2 / total
        variance_y = syy - sy**2 / total
        denominator = np.sqrt(np.clip(variance_x, 0, None) * np.clip(variance_y, 0, None))
        # Constant within rounding counts as constant (as scipy would return NaN; the models 0).
        tiny = 1e-12 * (np.abs(sxx) + 1e-300) * (np.abs(syy) + 1e-300)
        denominator = np.where(denominator**2 > tiny, denominator, 0.0)
        return np.clip(_safe_divide(covariance, denominator), -1.0, 1.0).T

    return pearson


class _Ranker:
    """
    Midranks (average ranks for ties) of one variable in resamples given as counts, laid out
    (examples, replicates). A resample's tie groups are the variable's own tie groups, with the
    counts of their examples as sizes (an example drawn k times is a tie of k).
    """

    def __init__(self, values: np.ndarray) -> None:
        self.order = np.argsort(values, kind="mergesort")
        ordered = values[self.order]
        new_group = np.concatenate([[True], ordered[1:] != ordered[:-1]])
        self.group_of_sorted = np.cumsum(new_group) - 1
        self.group_last = np.flatnonzero(np.concatenate([new_group[1:], [True]]))
        self.ties = len(self.group_last) < len(values)

    def _groups(self, cumulative: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(midrank, count) of each tie group from the cumulative counts in sorted order."""
        end = cumulative[self.group_last]
        start = np.concatenate([np.zeros((1, end.shape[1])), end[:-1]])
        return (start + end + 1) / 2, end - start

    def ranks(self, weights: np.ndarray) -> np.ndarray:
        """Each example's midrank, (examples, replicates)."""
        rank, _ = self._groups(np.cumsum(weights[self.order], axis=0))
        ranks = np.empty_like(weights)
        ranks[self.order] = rank[self.group_of_sorted]
        return ranks

    def cross(
        self, weights: np.ndarray, weighted_other: np.ndarray, untied_offset: np.ndarray
    ) -> np.ndarray:
        """
        sum_i w_i rank_i other_i per replicate, given weighted_other = w * other and
        untied_offset = sum_i w_i (w_i - 1) other_i / 2 (which does not depend on the order).
        """
        cumulative = np.cumsum(weights[self.order], axis=0)
        other = weighted_other[self.order]
        if not self.ties:
            # rank_j = cum_j - (w_j - 1) / 2 in sorted order.
            return np.einsum("nb,nb->b", cumulative, other) - untied_offset
        rank, _ = self._groups(cumulative)
        group_sums = np.cumsum(other, axis=0)[self.group_last]
        group_sums[1:] -= group_sums[:-1].copy()
        return np.einsum("gb,gb->b", rank, group_sums)

    def tie_correction(self, weights: np.ndarray, untied: np.ndarray) -> np.ndarray:
        """
        sum over the resample's tie groups of (c**3 - c) / 12, per replicate; `untied` is that
        sum for a variable without ties (the same for every such variable).
        """
        if not self.ties:
            return untied
        _, counts = self._groups(np.cumsum(weights[self.order], axis=0))
        return ((counts**3 - counts) / 12).sum(axis=0)


def _spearman_scorer(runs: Sequence[Predictions]) -> Scorer:
    """
    The scorer of Spearman's correlation over the runs' seeds: Pearson's correlation of the
    midranks within each resample (ranks change with the resample, so they are recomputed per
    replicate by `_Ranker`, from one sort of each variable made up front).
    """
    gold = _Ranker(_numbers(runs[0].golds, runs[0].source))
    predicted = [_Ranker(_numbers(run.predictions, run.source)) for run in runs]

    def spearman(weights: np.ndarray) -> np.ndarray:
        weights = np.ascontiguousarray(weights.T)  # (n, B): sorting gathers whole rows
        total = weights.sum(axis=0)
        # sum of squared deviations of midranks 1..m from their mean, less the ties' share
        spread = (total**3 - total) / 12
        gold_ranks = gold.ranks(weights)
        weighted_gold = weights * gold_ranks
        untied = ((weights**3 - weights) / 12).sum(axis=0)
        gold_spread = spread - gold.tie_correction(weights, untied)
        mean_term = total * ((total + 1) / 2) ** 2
        untied_offset = np.einsum("nb,nb->b", weights - 1, weighted_gold) / 2
        values = []
        for ranker in predicted:
            covariance = ranker.cross(weights, weighted_gold, untied_offset) - mean_term
            variance = spread - ranker.tie_correction(weights, untied)
            denominator = np.sqrt(np.clip(variance, 0, None) * np.clip(gold_spread, 0, None))
            denominator = np.where(denominator > 1e-9 * (total**3 + 1), denominator, 0.0)
            values.append(np.clip(_safe_divide(covariance, denominator), -1.0, 1.0))
        return np.stack(values)

    return spearman


def tags_to_spans_function(encoding: str) -> Callable[[List[str]], List[Any]]:
    """AllenNLP's tags -> spans function for a label encoding (BIO, IOB1, BIOUL, BMES)."""
    from allennlp.data.dataset_readers.dataset_utils import span_utils

    functions = {
        "BIO": span_utils.bio_tags_to_spans,
        "IOB1": span_utils.iob1_tags_to_spans,
        "BIOUL": span_utils.bioul_tags_to_spans,
        "BMES": span_utils.bmes_tags_to_spans,
    }
    if encoding not in functions:
        raise ValueError(f"tag encoding {encoding!r}: expected one of {', '.join(functions)}")
    return functions[encoding]


def guess_tag_encoding(tag_sequences: Sequence[Sequence[str]]) -> str:
    """BIOUL when any tag starts with U- or L-, else BIO (which also reads IOB1 tags right)."""
    for tags in tag_sequences:
        for tag in tags:
            if isinstance(tag, str) and tag[:2] in ("U-", "L-"):
                return "BIOUL"
    return "BIO"


def sentence_span_counts(
    golds: Sequence[Sequence[str]],
    predictions: Sequence[Sequence[str]],
    encoding: str = "BIO",
    source: str = "<predictions>",
) -> np.ndarray:
    """
    (true positive, predicted, gold) span counts per sentence, as SpanBasedF1Measure counts them
    (same tags -> spans function, continued `C-` spans merged, spans as a set).
    """
    from allennlp.data.dataset_readers.dataset_utils.span_utils import InvalidTagSequence
    from allennlp.training.metrics.span_based_f1_measure import SpanBasedF1Measure

    to_spans = tags_to_spans_function(encoding)
    merge = SpanBasedF1Measure._handle_continued_spans
    counts = np.zeros((len(golds), 3), dtype=np.float64)
    for position, (gold, predicted) in enumerate(zip(golds, predictions)):
        where = f"{source}, example {position}"
        if not isinstance(gold, list) or not isinstance(predicted, list):
            raise PredictionsMismatch(f"{where}: expected lists of tags for span F1")
        if len(gold) != len(predicted):
            raise PredictionsMismatch(
                f"{where}: {len(predicted)} predicted tags for {len(gold)} words"
            )
        try:
            gold_spans = set(merge(to_spans(gold)))
            predicted_spans = set(merge(to_spans(predicted)))
        except InvalidTagSequence as error:
            raise PredictionsMismatch(f"{where}: not valid {encoding} tags ({error})") from None
        counts[position] = (
            len(gold_spans & predicted_spans),
            len(predicted_spans),
            len(gold_spans),
        )
    return counts


def _span_f1_scorer(runs: Sequence[Predictions], encoding: Optional[str]) -> Scorer:
    """
    The scorer of span F1 over the runs' seeds, from each sentence's (true positive,
    predicted, gold) span counts: the resampled unit is the sentence.
    """
    if encoding is None:
        encoding = guess_tag_encoding(runs[0].golds)
    counts = [
        sentence_span_counts(run.golds, run.predictions, encoding, run.source) for run in runs
    ]
    seeds = len(runs)
    stats = np.concatenate(
        [np.stack([c[:, 0] for c in counts], 1), np.stack([c[:, 1] for c in counts], 1)]
        + [counts[0][:, 2:3]],
        axis=1,
    )

    def span_f1(weights: np.ndarray) -> np.ndarray:
        sums = weights @ stats
        tp, predicted, gold = sums[:, :seeds], sums[:, seeds : 2 * seeds], sums[:, -1:]
        return _safe_divide(2 * tp, predicted + gold).T

    return span_f1


def metric_kind(metric: str) -> str:
    """`accuracy`, `f1`, `mcc`, `pearson`, `spearman` or `span_f1`, from a metric name."""
    name = metric.lstrip("+-")
    if name not in METRICS:
        raise ValueError(
            f"metric {metric!r}: the paired bootstrap knows {', '.join(sorted(METRICS))}"
        )
    return METRICS[name]


def _scorer(
    metric: str,
    runs: Sequence[Predictions],
    positive_label: Optional[str],
    tag_encoding: Optional[str],
) -> Scorer:
    """The scorer of `metric` for the runs (the seeds of one mode)."""
    kind = metric_kind(metric)
    if kind in ("accuracy", "f1", "mcc"):
        return _classification_scorer(kind, runs, positive_label)
    if kind == "pearson":
        return _pearson_scorer(runs)
    if kind == "spearman":
        return _spearman_scorer(runs)
    return _span_f1_scorer(runs, tag_encoding)


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


@dataclass
class _Mode:
    """
    One mode inside `compare_modes`: its runs, its scorer, and its seeds' scores on the full dev
    set (`full`) and on each replicate's resample (`per_seed`, filled by steps 1-2).
    """

    name: str
    runs: List[Predictions]
    scorer: Scorer = field(repr=False)
    per_seed: np.ndarray = field(repr=False)  # (S, replicates)
    full: np.ndarray = field(repr=False)  # (S,)


def compare_modes(
    by_mode: Mapping[str, Sequence[PredictionsLike]],
    metric: str,
    pairs: Optional[Sequence[Tuple[str, str]]] = None,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    resample_seeds: bool = True,
    positive_label: Optional[str] = None,
    tag_encoding: Optional[str] = None,
    scale: float = 100.0,
) -> List[PairedResult]:
    """
    The paired bootstrap (module docstring) between modes of one task, all on the same resamples.

    The steps: check the options and the pairs, load every mode's runs and check that they
    share their examples, score each mode's seeds on the full dev set, score them on the
    resampled dev sets (steps 1-2), resample each mode's seeds (step 3), and turn each pair's
    differences (step 4) into a `PairedResult`. The random draws come in that order from one
    generator: the example resamples chunk by chunk, then the seed resamples mode by mode.

    # Parameters

    by_mode : `Mapping[str, Sequence[PredictionsLike]]`
        A mode name -> its seeds' predictions (each a `Predictions`, a path of a
        `dev_predictions.jsonl`, or its records).
    metric : `str`
        A configs' metric name: `accuracy`, `f1` (with `positive_label`), `mcc`, `pearson`,
        `spearman` or `f1-measure-overall` (with `tag_encoding`); a leading `+` or `-` is
        ignored.
    pairs : `Sequence[Tuple[str, str]]`, optional
        The (mode_a, mode_b) to compare, each giving mode_a - mode_b; default every pair in
        `by_mode`'s order.
    replicates : `int`
        Bootstrap replicates.
    seed : `int`
        Seed of `numpy.random.default_rng`, so that a result is reproducible.
    confidence : `float`
        The interval's level, in (0, 1).
    resample_seeds : `bool`
        Whether step 3 resamples each mode's seeds (else each mode's score is the mean over its
        fixed seeds: the data-only interval).
    positive_label : `str`, optional
        The label whose F1 `f1` is.
    tag_encoding : `str`, optional
        BIO, IOB1, BIOUL or BMES for span F1; guessed from the golds when `None`.
    scale : `float`
        Scores are multiplied by it (100: points, like tune-report).

    # Returns

    `List[PairedResult]`
        One result per pair, in `pairs`' order.
    """
    _check_options(replicates, confidence)
    pairs = _pairs_to_compare(by_mode, pairs)
    loaded = _load_modes(by_mode)
    n = _shared_example_count(loaded)
    modes = {
        name: _score_full_dev_set(name, runs, metric, positive_label, tag_encoding, scale)
        for name, runs in loaded.items()
    }
    rng = np.random.default_rng(seed)
    _score_resampled_examples(modes, rng, replicates, n, scale)
    scores = _resample_seeds(modes, rng, replicates, resample_seeds)
    return [
        _paired_result(metric, modes[a], modes[b], scores, confidence, resample_seeds)
        for a, b in pairs
    ]


def _check_options(replicates: int, confidence: float) -> None:
    """At least one replicate and a confidence strictly between 0 and 1."""
    if replicates < 1:
        raise ValueError(f"replicates must be at least 1, not {replicates}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")


def _pairs_to_compare(
    by_mode: Mapping[str, Sequence[PredictionsLike]],
    pairs: Optional[Sequence[Tuple[str, str]]],
) -> List[Tuple[str, str]]:
    """The pairs asked for (default every pair of modes, in order), each naming known modes."""
    pairs = list(pairs) if pairs is not None else list(itertools.combinations(list(by_mode), 2))
    for a, b in pairs:
        for name in (a, b):
            if name not in by_mode:
                raise ValueError(f"pair ({a}, {b}): no predictions for mode {name!r}")
    return pairs


def _load_modes(
    by_mode: Mapping[str, Sequence[PredictionsLike]],
) -> Dict[str, List[Predictions]]:
    """Each mode's runs as `Predictions` (named `<mode> seed #k` when they have no file)."""
    loaded: Dict[str, List[Predictions]] = {}
    for name in by_mode:
        runs = [
            as_predictions(item, f"{name} seed #{k + 1}") for k, item in enumerate(by_mode[name])
        ]
        if not runs:
            raise ValueError(f"mode {name!r} has no runs with predictions")
        loaded[name] = runs
    return loaded


def _shared_example_count(loaded: Mapping[str, List[Predictions]]) -> int:
    """The number of dev examples, once every run is checked to have the same ones."""
    everything = [run for runs in loaded.values() for run in runs]
    check_same_examples(everything)
    n = len(everything[0])
    if n == 0:
        raise PredictionsMismatch(f"{everything[0].source} has no examples")
    return n


def _score_full_dev_set(
    name: str,
    runs: List[Predictions],
    metric: str,
    positive_label: Optional[str],
    tag_encoding: Optional[str],
    scale: float,
) -> _Mode:
    """A mode with its scorer and its seeds' scores (×`scale`) on the full dev set."""
    scorer = _scorer(metric, runs, positive_label, tag_encoding)
    full = scorer(np.ones((1, len(runs[0]))))[:, 0] * scale
    return _Mode(name, runs, scorer, np.empty((len(runs), 0)), full)


def _resample_weights(rng: np.random.Generator, size: int, n: int) -> np.ndarray:
    """
    `size` resamples of n of the n examples with replacement, as counts (size, n): how often
    each example was drawn in each resample.
    """
    picks = rng.integers(0, n, size=(size, n)) + (np.arange(size) * n)[:, None]
    weights = np.bincount(picks.ravel(), minlength=size * n).reshape(size, n)
    return weights.astype(np.float64)


def _score_resampled_examples(
    modes: Mapping[str, _Mode], rng: np.random.Generator, replicates: int, n: int, scale: float
) -> None:
    """
    Steps 1-2: fills each mode's `per_seed` with its seeds' scores on the same resamples of the
    dev examples, drawn in chunks of at most `CHUNK_CELLS` counts.
    """
    for mode in modes.values():
        mode.per_seed = np.empty((len(mode.runs), replicates))
    chunk = max(1, min(replicates, CHUNK_CELLS // n))
    for start in range(0, replicates, chunk):
        size = min(chunk, replicates - start)
        weights = _resample_weights(rng, size, n)
        for mode in modes.values():
            mode.per_seed[:, start : start + size] = mode.scorer(weights) * scale


def _resample_seeds(
    modes: Mapping[str, _Mode], rng: np.random.Generator, replicates: int, resample_seeds: bool
) -> Dict[str, np.ndarray]:
    """
    Step 3: each mode's score in each replicate, the mean over S of its S seeds drawn with
    replacement (independently per mode), or over its fixed seeds when `resample_seeds` is
    off or the mode has one seed (which draws nothing).
    """
    scores: Dict[str, np.ndarray] = {}
    for name, mode in modes.items():
        seeds = len(mode.runs)
        if resample_seeds and seeds > 1:
            chosen = rng.integers(0, seeds, size=(replicates, seeds))
            scores[name] = mode.per_seed[chosen, np.arange(replicates)[:, None]].mean(axis=1)
        else:
            scores[name] = mode.per_seed.mean(axis=0)
    return scores


def _paired_result(
    metric: str,
    mode_a: _Mode,
    mode_b: _Mode,
    scores: Mapping[str, np.ndarray],
    confidence: float,
    resample_seeds: bool,
) -> PairedResult:
    """
    Step 4: the differences score(mode_a) - score(mode_b) of the replicates (`scores` has each
    mode's) as a result: the percentile interval, the verdict (the mode the interval favours, or
    a tie when it contains 0) and the full-dev scores.
    """
    differences = scores[mode_a.name] - scores[mode_b.name]
    replicates = len(differences)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(differences, [tail, 100 - tail])
    verdict = mode_a.name if low > 0 else mode_b.name if high < 0 else TIE
    return PairedResult(
        metric=metric.lstrip("+-"),
        mode_a=mode_a.name,
        mode_b=mode_b.name,
        score_a=float(mode_a.full.mean()),
        score_b=float(mode_b.full.mean()),
        difference=float(mode_a.full.mean() - mode_b.full.mean()),
        low=float(low),
        high=float(high),
        verdict=verdict,
        examples=len(mode_a.runs[0]),
        seeds_a=len(mode_a.runs),
        seeds_b=len(mode_b.runs),
        replicates=replicates,
        confidence=confidence,
        resample_seeds=resample_seeds,
        std_error=float(differences.std(ddof=1)) if replicates > 1 else 0.0,
    )


def paired_bootstrap(
    runs_a: Sequence[PredictionsLike],
    runs_b: Sequence[PredictionsLike],
    metric: str,
    names: Tuple[str, str] = ("a", "b"),
    **options: Any,
) -> PairedResult:
    """
    score(a) - score(b) over the seeds' predictions of two modes: `compare_modes` with one pair.

    # Parameters

    runs_a, runs_b : `Sequence[PredictionsLike]`
        Each mode's seeds' predictions.
    metric : `str`
        As `compare_modes`.
    names : `Tuple[str, str]`
        The modes' names (they must differ); the verdict is one of them, or "tie".
    **options : `Any`
        `compare_modes`' other options.
    """
    if names[0] == names[1]:
        raise ValueError(f"names must differ, got {names}")
    return compare_modes({names[0]: runs_a, names[1]: runs_b}, metric, **options)[0]


def metric_values(
    runs: Sequence[PredictionsLike],
    metric: str,
    positive_label: Optional[str] = None,
    tag_encoding: Optional[str] = None,
    scale: float = 100.0,
) -> List[float]:
    """
    Each run's metric on its full dev set (×`scale`), as the bootstrap computes it: on the full
    sample it should equal the trainer's metric, which lets tests check the scorers.
    """
    loaded = [as_predictions(item) for item in runs]
    check_same_examples(loaded)
    scorer = _scorer(metric, loaded, positive_label, tag_encoding)
    return [float(v) * scale for v in scorer(np.ones((1, len(loaded[0]))))[:, 0]]
