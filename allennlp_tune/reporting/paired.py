"""
Is one mode better than another on a task, or is the difference noise? A paired bootstrap over
dev examples and seeds, from the runs' `dev_predictions.jsonl` (read by `reporting/predictions.py`,
scored by `reporting/scorers.py`). `compare_modes` and `paired_bootstrap` take, for each mode,
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

Speed: replicates are drawn in chunks as count matrices W (replicates x examples), and every
metric but Spearman is a matrix product of W with per-example statistics, so 10,000 examples x 5
seeds x 5 modes x 2000 replicates take about a second for accuracy and a few for Spearman.
"""

import itertools
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from allennlp_tune.reporting.labels import signed
from allennlp_tune.reporting.predictions import (
    Predictions,
    PredictionsLike,
    PredictionsMismatch,
    as_predictions,
    check_same_examples,
)
from allennlp_tune.reporting.scorers import Scorer, scorer_for

TIE = "tie"
DEFAULT_REPLICATES = 2000
DEFAULT_CONFIDENCE = 0.95
# How many matrix cells (replicates x examples) one chunk of the bootstrap holds.
CHUNK_CELLS = 4_000_000


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
    scorer = scorer_for(metric, runs, positive_label, tag_encoding)
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
