"""
A run's score proves itself: the validation metric in its `metrics.json` must equal the one
recomputed from its `dev_predictions.jsonl` (and, for a run scored on test, its test metric the
one from `test_predictions.jsonl`), with the paired bootstrap's own scorers on the full sample
(`scorers.metric_values`, which on the full sample are the trainer's metrics).

This is the second check of a finished run; the first, one room down (`rundir.run_damage`), holds
its files to the digests its `tune_run.json` recorded and is what `load_run` already applies. A run
that fails either is "damaged" (`rundir.DAMAGED`), with what failed in its detail
(`metrics.json: best_validation_accuracy 0.55 but dev_predictions.jsonl gives 0.5`): never
complete, never in a score or a verdict, and the grid moves it aside and trains it again
(`run_damage_of`, which tune-grid, tune-compare and the rounds ask before a run counts as
complete).

Equal means within `RELATIVE_TOLERANCE` for the metrics that are ratios of counts (accuracy, F1,
MCC, span F1: the trainer's float32 arithmetic on exact counts), and within
`CORRELATION_TOLERANCE` (absolute) for Pearson and Spearman, which the trainer accumulates in
float32 over batches. A forged score of 0.5 -> 0.55, or 0.9174 -> 0.9175, is far outside both.

A metric the predictions cannot reproduce (a loss, a metric the scorers do not know, F1 without
the config's `positive_label`) is skipped, and the run keeps its score; `Run.unchecked` says why,
and the report counts such runs. Runs recorded before digests are checked here all the same: for
them this is the only check.
"""

import math
from pathlib import Path
from typing import Iterable, List, Optional, Tuple

from allennlp_tune.reporting.intervals import bootstrap_options
from allennlp_tune.reporting.predictions import Predictions, PredictionsMismatch, read_predictions
from allennlp_tune.reporting.scorers import metric_kind, metric_values
from allennlp_tune.rundir import (
    DAMAGED,
    METRICS_NAME,
    OK,
    OUTPUTS_KEY,
    PREDICTIONS_NAME,
    RUN_INFO_NAME,
    TEST_PREDICTIONS_NAME,
    Run,
    load_run,
    read_json,
    write_json,
)

# The key of `tune_run.json` that holds the score check made when the run finished.
SCORE_CHECK_KEY = "score_check"
RELATIVE_TOLERANCE = 1e-5
CORRELATION_TOLERANCE = 1e-4
_CORRELATIONS = ("pearson", "spearman")


def _equal(kind: str, recorded: float, recomputed: float) -> bool:
    if kind in _CORRELATIONS:
        return abs(recorded - recomputed) <= CORRELATION_TOLERANCE
    return math.isclose(recorded, recomputed, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-9)


def _recomputed(run: Run, kind: str, predictions: Predictions) -> float:
    """The run's metric on the full sample of `predictions` (a fraction, like metrics.json)."""
    options = bootstrap_options([run], kind)
    return metric_values([predictions], str(run.metric), scale=1.0, **options)[0]


def _check_split(
    run: Run, kind: str, key: str, name: str, recorded: object
) -> Tuple[Optional[str], Optional[Predictions]]:
    """
    `(damage, predictions)` for one split: what differs between `recorded` (metrics.json's
    `key`) and the score `name` gives, or why that file cannot be read; `(None, predictions)`
    when they agree. A metric the scorers cannot compute raises `ValueError`.
    """
    try:
        predictions = read_predictions(run.path / name)
    except (PredictionsMismatch, OSError, UnicodeDecodeError) as error:
        return f"{name}: cannot be read ({error})", None
    try:
        recomputed = _recomputed(run, kind, predictions)
    except PredictionsMismatch as error:
        return f"{name}: cannot be scored ({error})", None
    if not isinstance(recorded, (int, float)) or isinstance(recorded, bool):
        return None, predictions  # the metric's own status already says what is wrong
    if not _equal(kind, float(recorded), recomputed):
        return (
            f"{METRICS_NAME}: {key} {float(recorded):.6g} but {name} gives {recomputed:.6g}",
            predictions,
        )
    return None, predictions


def score_damage(run: Run) -> Optional[str]:
    """
    What differs between the run's scores in `metrics.json` and those its predictions give
    (module docstring), or `None`; sets `run.unchecked` when its metric cannot be recomputed,
    and keeps the dev predictions it read in `run.loaded` for the intervals.
    """
    if not run.predictions and not run.test_predictions:
        run.unchecked = f"no {PREDICTIONS_NAME}"
        return None
    try:
        kind = metric_kind(str(run.metric))
        if kind == "f1" and bootstrap_options([run], kind)["positive_label"] is None:
            raise ValueError("f1 without the config's positive_label")
    except ValueError as error:
        run.unchecked = f"its metric is not recomputed from predictions ({error})"
        return None
    metrics = read_json(run.path / METRICS_NAME) or {}
    damage = []
    splits = [("best_validation_", PREDICTIONS_NAME, run.predictions)]
    splits.append(("test_", TEST_PREDICTIONS_NAME, run.test_predictions))
    for prefix, name, present in splits:
        key = f"{prefix}{run.metric}"
        if not present or key not in metrics:
            continue
        try:
            problem, predictions = _check_split(run, kind, key, name, metrics[key])
        except ValueError as error:  # e.g. a positive_label that is no label of the file
            run.unchecked = f"{name} not scored ({error})"
            continue
        if problem is not None:
            damage.append(problem)
        elif predictions is not None:
            run.loaded[name] = predictions
    return "; ".join(damage) or None


def verify_run(run: Run) -> Run:
    """Marks a scored run damaged when its scores do not match its predictions; returns it."""
    if run.status != OK:
        return run
    damage = score_damage(run)
    if damage is not None:
        run.status, run.detail, run.value, run.test_value = DAMAGED, damage, None, None
        run.loaded.clear()
    return run


def verify_runs(runs: Iterable[Run]) -> List[Run]:
    """`verify_run` of each run, in order."""
    return [verify_run(run) for run in runs]


def run_damage_of(run_dir: Path, trust_check: bool = True) -> Optional[str]:
    """
    What is damaged in a run that its `tune_run.json` records as finished: its files against
    their digests (`rundir.load_run`) and its scores against its predictions; `None` for an
    intact run, or one not recorded as finished. What the grid asks before it skips a run.

    With `trust_check`, a run whose digests all match and whose record holds the score check
    made when it finished (`SCORE_CHECK_KEY`, `check_finished_run`) is not scored again: its
    `metrics.json` and predictions are byte for byte those that passed it, so a complete grid's
    rerun reads no predictions file.
    """
    info = read_json(Path(run_dir) / RUN_INFO_NAME) or {}
    if info.get("status") != OK:
        return None
    run = load_run(Path(run_dir))
    if trust_check and run.status == OK and run.digested and SCORE_CHECK_KEY in info:
        return None
    run = verify_run(run)
    return run.detail if run.status == DAMAGED else None


def check_finished_run(run_dir: Path) -> Optional[str]:
    """
    The checks of a run that has just finished (its `tune_run.json` written with its digests):
    what is damaged already (`run_damage_of`, nothing trusted), e.g. a score its own dev
    predictions do not give; else `None`, and the record gets `SCORE_CHECK_KEY`: "ok", or why
    the score was not recomputed.
    """
    run_dir = Path(run_dir)
    damage = run_damage_of(run_dir, trust_check=False)
    info = read_json(run_dir / RUN_INFO_NAME) or {}
    if damage is None and info.get("status") == OK and isinstance(info.get(OUTPUTS_KEY), dict):
        run = verify_run(load_run(run_dir))
        info[SCORE_CHECK_KEY] = (
            "ok" if run.unchecked is None else f"not recomputed: {run.unchecked}"
        )
        write_json(run_dir / RUN_INFO_NAME, info)
    return damage
