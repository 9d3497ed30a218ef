"""
The paired intervals of a row: which pairs of modes are compared (`row_pairs`), what the paired
bootstrap needs from the runs' configs (`bootstrap_options`), and `paired_results`, which reads
the runs' dev predictions (or, for the test split, the test predictions that
`experiments.test_split` wrote) and returns a `Row`'s paired results, the seeds behind them and
the notes on why a pair has no interval (the report puts them in the row). With a margin, a tie
inside it reads as equivalence (`within_margin`).
"""

import dataclasses
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

from allennlp_tune.reporting.cells import Row
from allennlp_tune.reporting.labels import (
    PEFT_PAIR,
    REFERENCE,
    SECOND_REFERENCE,
)
from allennlp_tune.reporting.paired import DEFAULT_REPLICATES, TIE, PairedResult, compare_modes
from allennlp_tune.reporting.predictions import Predictions, PredictionsMismatch, read_predictions
from allennlp_tune.reporting.scorers import metric_kind
from allennlp_tune.rundir import (
    PREDICTIONS_NAME,
    TEST_PREDICTIONS_NAME,
    Run,
)


def predictions_name(split: str) -> str:
    """The predictions file the intervals of `split` ("validation" or "test") read."""
    return PREDICTIONS_NAME if split == "validation" else TEST_PREDICTIONS_NAME


def has_predictions(run: Run, split: str) -> bool:
    """Whether the run has (current) predictions of `split`."""
    return run.predictions if split == "validation" else run.test_predictions


def equivalent_verdict(margin: float) -> str:
    """A tie's verdict when its interval lies inside (-margin, +margin): `equivalent within 0.5`."""
    return f"equivalent within {margin:g}"


def within_margin(result: PairedResult, margin: Optional[float]) -> PairedResult:
    """
    `result` with the verdict `equivalent within M` where it is a tie and its interval lies
    inside (-M, +M) (TOST on the same interval: each one-sided test at (1 - confidence) / 2);
    unchanged otherwise, or without a margin. A mode's win stays a win even inside the margin.
    """
    if margin is None or result.verdict != TIE or not -margin < result.low <= result.high < margin:
        return result
    return dataclasses.replace(result, verdict=equivalent_verdict(margin))


def row_pairs(modes: Sequence[str]) -> List[Tuple[str, str]]:
    """
    Each mode against fe (mode_a the mode, mode_b "fe"), then sf / bitfit / lora against ft, then
    lora against bitfit, each pair where both of its modes are in `modes`.
    """
    pairs = [(mode, REFERENCE) for mode in modes if mode != REFERENCE and REFERENCE in modes]
    pairs += [
        (mode, SECOND_REFERENCE)
        for mode in modes
        if mode not in (REFERENCE, SECOND_REFERENCE) and SECOND_REFERENCE in modes
    ]
    if all(mode in modes for mode in PEFT_PAIR):
        pairs.append(PEFT_PAIR)
    return pairs


def _setting(runs: Sequence[Run], name: str) -> Optional[str]:
    """The value of config key `name` (at any depth, e.g. `model.positive_label`) in the runs."""
    for run in runs:
        for key, value in (run.settings or {}).items():
            if key.split(".")[-1] == name:
                try:
                    loaded = json.loads(value)
                except ValueError:
                    continue
                if isinstance(loaded, str):
                    return loaded
    return None


def bootstrap_options(runs: Sequence[Run], kind: str) -> Dict[str, Optional[str]]:
    """
    What the paired bootstrap needs besides the predictions, read from the runs' configs: the
    `positive_label` of an F1 metric and the `label_encoding` of span F1 (`kind` is
    `scorers.metric_kind` of the runs' metric).
    """
    return {
        "positive_label": _setting(runs, "positive_label") if kind == "f1" else None,
        "tag_encoding": _setting(runs, "label_encoding") if kind == "span_f1" else None,
    }


def _mixed_note(mode: str, mixed: Dict[str, Dict[str, int]]) -> str:
    named = ", ".join(list(mixed)[:3]) + (", ..." if len(mixed) > 3 else "")
    return (
        f"{mode}: no verdict: its runs were trained differently ({named}); put runs "
        "of one setting in a cell (see the cells that mix settings)"
    )


def _read_mode(
    scored: Sequence[Run], mode: str, notes: List[str], split: str = "validation"
) -> List[Tuple[Run, Predictions]]:
    """The predictions of a mode's scored runs that have usable ones; the others become notes."""
    loaded = []
    name = predictions_name(split)
    for run in scored:
        if not has_predictions(run, split):
            continue
        try:
            loaded.append((run, run.loaded.get(name) or read_predictions(run.path / name)))
        except (PredictionsMismatch, OSError, UnicodeDecodeError) as error:
            notes.append(f"{mode}: left out of the intervals: {error}")
    if loaded and len(loaded) < len(scored):
        notes.append(
            f"{mode}: the intervals use {len(loaded)} of its {len(scored)} scored runs (the "
            f"others have no usable {name})"
        )
    return loaded


def row_predictions(
    row: Row, notes: List[str], split: str = "validation"
) -> Tuple[Dict[str, List[Predictions]], Dict[str, List[Run]]]:
    """
    Per mode of the row, the predictions of `split` its intervals use and the runs they came
    from. A mode whose runs mix settings, or whose scored runs have no usable predictions, is
    left out, and `notes` says why.
    """
    by_mode: Dict[str, List[Predictions]] = {}
    used: Dict[str, List[Run]] = {}
    without: List[str] = []  # modes with scores but no predictions
    for mode in row.used_modes():
        scored = row.cells[mode].scored_runs
        mixed = row.cells[mode].mixed_settings()
        if mixed:
            notes.append(_mixed_note(mode, mixed))
            continue
        loaded = _read_mode(scored, mode, notes, split)
        if not loaded:
            if scored:
                without.append(mode)
            continue
        by_mode[mode] = [predictions for _, predictions in loaded]
        used[mode] = [run for run, _ in loaded]
    if by_mode and without:
        notes.append(
            f"not compared: {', '.join(without)} (no scored run has {predictions_name(split)})"
        )
    return by_mode, used


def _compare_pairs(
    by_mode: Dict[str, List[Predictions]],
    metric: str,
    pairs: List[Tuple[str, str]],
    options: Dict[str, Any],
    notes: List[str],
) -> List[PairedResult]:
    """
    Every pair in one `compare_modes` call (the same resamples for all); where the modes' dev
    sets differ, pair by pair, so the pairs that match still get their interval.
    """
    try:
        return compare_modes(by_mode, metric, pairs=pairs, **options)
    except PredictionsMismatch:
        # Some modes (or seeds) were scored on another dev set: compare pair by pair, so the
        # pairs that do match still get their interval, and name the files of the others.
        results = []
        for mode_a, mode_b in pairs:
            two = {mode_a: by_mode[mode_a], mode_b: by_mode[mode_b]}
            try:
                results += compare_modes(two, metric, pairs=[(mode_a, mode_b)], **options)
            except (PredictionsMismatch, ValueError) as error:
                notes.append(f"no interval for {mode_a} vs {mode_b}: {error}")
        return results
    except ValueError as error:  # e.g. a positive_label that is no label of the predictions
        notes.append(f"no intervals: {error}")
        return []


Paired = Tuple[List[PairedResult], Dict[str, List[Optional[int]]], List[str]]


def paired_results(
    row: Row,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = 0,
    margin: Optional[float] = None,
    split: str = "validation",
) -> Paired:
    """
    The paired bootstrap of every pair of `row_pairs` over the row's scored runs with
    predictions of `split`, in one `compare_modes` call (the same resamples for every pair):
    the results, the seeds behind them per mode, and the notes. Problems (a broken or
    mismatched predictions file, a metric the bootstrap does not know) become notes, never
    errors. With a `margin` (points), a tie whose interval lies inside (-margin, +margin) gets
    the verdict `equivalent_verdict(margin)`.
    """
    notes: List[str] = []
    by_mode, used = row_predictions(row, notes, split)
    pairs = row_pairs(list(by_mode))
    if not pairs:
        return [], {}, notes
    runs = [run for mode_runs in used.values() for run in mode_runs]
    metrics = sorted({str(run.metric) for run in runs})
    if len(metrics) > 1:
        return [], {}, notes + [f"no intervals: the runs' metrics differ ({', '.join(metrics)})"]
    metric = metrics[0]
    try:
        kind = metric_kind(metric)
    except ValueError as error:
        return [], {}, notes + [f"no intervals: {error}"]
    options = dict(replicates=replicates, seed=seed, **bootstrap_options(runs, kind))
    results = _compare_pairs(by_mode, metric, pairs, options, notes)
    compared = {mode for result in results for mode in (result.mode_a, result.mode_b)}
    seeds = {mode: [run.seed for run in used[mode]] for mode in by_mode if mode in compared}
    return [within_margin(result, margin) for result in results], seeds, notes
