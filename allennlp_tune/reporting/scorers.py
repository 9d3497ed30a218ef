"""
The metrics the paired bootstrap resamples: for one mode's seeds, a `Scorer` maps resample counts
W (replicates x examples) to each seed's metric on each resample, from per-example statistics.

Units and definitions follow `tune-report`: scores are ×100 (points) like its cells, and on the
full sample each value equals the trainer's metric: `accuracy` (CategoricalAccuracy), `f1` of a
positive label (F1Measure; needs `positive_label`), `mcc` (multi-class Matthews correlation, 0 when
undefined), `pearson` and `spearman` (midranks for ties; 0 when a side is constant, as the
models' RegressionMetrics report it), and `f1-measure-overall` (SpanBasedF1Measure's span F1;
the unit resampled is the sentence, since its spans are not independent).

Every metric but Spearman is a matrix product of W with per-example statistics, so 10,000
examples x 5 seeds x 5 modes x 2000 replicates take about a second for accuracy and a few for
Spearman.
"""

import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from allennlp_tune.host_access import continued_spans_merger
from allennlp_tune.reporting.predictions import (
    Predictions,
    PredictionsLike,
    PredictionsMismatch,
    as_predictions,
    check_same_examples,
)

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

    to_spans = tags_to_spans_function(encoding)
    merge = continued_spans_merger()
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


def scorer_for(
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
    scorer = scorer_for(metric, loaded, positive_label, tag_encoding)
    return [float(v) * scale for v in scorer(np.ones((1, len(loaded[0]))))[:, 0]]
