"""
Scoring finished runs on the test split, once, after the decision on dev.

A task's `test` (its config's `test_data_path`) is never read in training: no run evaluates on
it while the modes are compared and their settings chosen on dev. `score_test_split(dirs)` is
the explicit step after that decision (`tune-compare --test`, `tune-grid --test`): for every
complete run under `dirs` whose config has a `test_data_path` and that has no current test
scores, it

1. evaluates the run's archive on the test data with AllenNLP's own `evaluate` and the test data
   loader `allennlp train` would build with `evaluate_on_test` (the config's validation reader
   and validation data loader), and adds each metric as `test_<name>` to the run's
   `metrics.json`, as `evaluate_on_test` would have: `tune-report --split test` reads those;
2. writes `test_predictions.jsonl`, the archived model's predictions on the test data in the
   format of `dev_predictions.jsonl` (`outputs.write_predictions`), from which `tune-report`
   computes the paired intervals on test;
3. records in `tune_run.json` under `test` the archive it scored (`rundir.archive_stamp`), the
   test file's content digest, the predictions' count and its metrics, or the `error` that
   stopped it; and, for a run whose record holds the digests of its outputs (`rundir.digests`),
   the new digests of `metrics.json` and `test_predictions.jsonl`.

A run is scored once: a rerun skips every run whose record names its current archive and test
file. A run trained again is a new folder (the grid moves the old one aside whole) and is
scored afresh; a run whose archive or test file changed in place has its stale
`test_predictions.jsonl` removed and is scored again (`rundir.current_test_record` keeps the
report from reading stale predictions meanwhile). A run without `model.tar.gz` cannot be
scored and is named in a note. The runs are scored in one subprocess (log
`RESULTS_DIR/tune_test.log`), so the calling process never holds a model or a GPU, under the
results folder's lock.
"""

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from allennlp.common.checks import ConfigurationError

from allennlp_tune.experiments.fingerprint import content_digest
from allennlp_tune.experiments.lock import LOCK_FD_ENV, ResultsDirLock
from allennlp_tune.experiments.outputs import (
    load_for_prediction,
    prediction_batch_size,
    write_predictions,
)
from allennlp_tune.experiments.process import last_line, train_subprocess
from allennlp_tune.rundir import (
    ARCHIVE_NAME,
    CONFIG_NAME,
    METRICS_NAME,
    OUTPUTS_KEY,
    RUN_INFO_NAME,
    TEST_PREDICTIONS_NAME,
    TEST_RECORD_KEY,
    archive_stamp,
    current_test_record,
    find_run_dirs,
    is_complete,
    read_json,
    record_digests,
    timestamp,
    write_json,
)

TEST_LOG_NAME = "tune_test.log"


@dataclass
class TestSplitResult:
    """What `score_test_split` did: runs it scored, found scored, could not score, and why."""

    scored: List[Path] = field(default_factory=list)
    already: List[Path] = field(default_factory=list)
    failed: List[Path] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    def summary(self, command: str) -> str:
        return (
            f"{command} --test: {len(self.scored)} run(s) scored on test, {len(self.already)} "
            f"scored before, {len(self.failed)} failed."
        )


def run_test_path(run_dir: Path) -> Optional[str]:
    """The `test_data_path` of the run's `config.json`, `None` without one."""
    path = (read_json(Path(run_dir) / CONFIG_NAME) or {}).get("test_data_path")
    return path if isinstance(path, str) and path else None


def _data_digest(path: str) -> Optional[str]:
    return content_digest(path) if os.path.exists(path) else None


def is_scored(run_dir: Path) -> bool:
    """Whether the run's test record names its current archive and test file's content."""
    record = current_test_record(run_dir, read_json(Path(run_dir) / RUN_INFO_NAME) or {})
    path = run_test_path(run_dir)
    # Stricter than the report's `current_test_record`: a run whose archive is gone scores again.
    return (
        record is not None
        and record.get("archive") == archive_stamp(run_dir)
        and path is not None
        and record.get("data") == _data_digest(path)
    )


def _record(run_dir: Path, record: Dict[str, Any]) -> None:
    """Writes the test record into `tune_run.json`, and, for a run whose record holds digests
    of its outputs (`rundir.digests`), those of the `metrics.json` and `test_predictions.jsonl`
    that scoring rewrote (or removed), so that the run stays intact."""
    info = read_json(run_dir / RUN_INFO_NAME) or {}
    info[TEST_RECORD_KEY] = record
    outputs = info.get(OUTPUTS_KEY)
    if isinstance(outputs, dict):
        outputs = {name: entry for name, entry in outputs.items() if name != TEST_PREDICTIONS_NAME}
        outputs.update(record_digests(run_dir, (METRICS_NAME, TEST_PREDICTIONS_NAME)))
        info[OUTPUTS_KEY] = outputs
    write_json(run_dir / RUN_INFO_NAME, info)


def score_run_on_test(run_dir: Path, cuda_device: Optional[int] = None) -> Dict[str, Any]:
    """
    Scores one run on its test data in this process (steps 1 to 3 of the module docstring) and
    returns its record; a failure is recorded (`error`) and raised.
    """
    from allennlp.training.util import data_loaders_from_params, evaluate

    run_dir = Path(run_dir)
    stamp = archive_stamp(run_dir)
    (run_dir / TEST_PREDICTIONS_NAME).unlink(missing_ok=True)  # stale, if any
    try:
        path = run_test_path(run_dir)
        if path is None:
            raise ConfigurationError(f"{run_dir / CONFIG_NAME} has no test_data_path")
        archive, predictor = load_for_prediction(run_dir, cuda_device, "test scores of a run")
        loader = data_loaders_from_params(
            archive.config.duplicate(), train=False, validation=False, test=True
        )["test"]
        loader.index_with(archive.model.vocab)
        device = next(archive.model.parameters()).device
        metrics = evaluate(archive.model, loader, device.index if device.type == "cuda" else -1)
        count = write_predictions(
            predictor,
            archive.validation_dataset_reader,
            path,
            run_dir / TEST_PREDICTIONS_NAME,
            prediction_batch_size(read_json(run_dir / CONFIG_NAME) or {}),
        )
        saved = read_json(run_dir / METRICS_NAME) or {}
        saved.update({f"test_{key}": value for key, value in metrics.items()})
        write_json(run_dir / METRICS_NAME, saved)
        record = {
            "archive": stamp,
            "data_path": path,
            "data": _data_digest(path),
            "predictions": TEST_PREDICTIONS_NAME,
            "examples": count,
            "metrics": {f"test_{key}": value for key, value in metrics.items()},
            "scored": timestamp(),
        }
    except Exception as error:
        _record(run_dir, {"archive": stamp, "error": f"{type(error).__name__}: {error}"[:300]})
        raise
    _record(run_dir, record)
    return record


def score_runs_in_process(run_dirs: Sequence[str]) -> None:
    """Scores each run in turn; one that fails is recorded and the others go on."""
    for run_dir in run_dirs:
        try:
            record = score_run_on_test(Path(run_dir))
            print(f"{run_dir}: {record['examples']} test predictions", flush=True)
        except Exception as error:
            print(f"{run_dir}: {type(error).__name__}: {error}", flush=True)


_SCORE_SCRIPT = (
    "import sys, allennlp_tune; "
    "from allennlp_tune.experiments.test_split import score_runs_in_process; "
    "score_runs_in_process(sys.argv[1:])"
)


def _pending(dirs: Sequence[Path], scoring: TestSplitResult) -> List[Path]:
    """The complete runs to score; the others go to `scoring` (already scored, or a note)."""
    run_dirs, _ = find_run_dirs(dirs)
    complete = [run_dir for run_dir in run_dirs if is_complete(run_dir)]
    with_test = [run_dir for run_dir in complete if run_test_path(run_dir) is not None]
    if complete and not with_test:
        raise ConfigurationError(
            f"--test: the runs in {', '.join(map(str, dirs))} have no test split (their "
            "config.json has no test_data_path). Give the task a test file (`test: "
            '"test.csv"` in a task file of your own) to score its runs on test; the shipped '
            "tasks' test sets are held back."
        )
    pending = []
    for run_dir in with_test:
        if is_scored(run_dir):
            scoring.already.append(run_dir)
        elif not (run_dir / ARCHIVE_NAME).is_file():
            scoring.failed.append(run_dir)
            scoring.notes.append(f"{run_dir}: not scored on test: it has no {ARCHIVE_NAME}")
        else:
            pending.append(run_dir)
    without = len(complete) - len(with_test)
    if without:
        scoring.notes.append(f"{without} complete run(s) have no test_data_path: not scored")
    return pending


def score_test_split(
    dirs: Sequence[Path], in_process: bool = False, log_name: str = TEST_LOG_NAME
) -> TestSplitResult:
    """
    Scores on test every complete run under `dirs` that has a test split and no current test
    scores (module docstring), in one subprocess under each folder's lock (`in_process`: here,
    as tune-search works). Raises a `ConfigurationError` when no complete run has a test split.
    """
    scoring = TestSplitResult()
    for results_dir in map(Path, dirs):
        pending = _pending([results_dir], scoring)
        if not pending:
            continue
        with ResultsDirLock(results_dir) as lock:
            if in_process:
                score_runs_in_process([str(run_dir) for run_dir in pending])
            else:
                environment = {**os.environ, LOCK_FD_ENV: str(lock.fd)}
                command = [sys.executable, "-c", _SCORE_SCRIPT, *map(str, pending)]
                returncode = train_subprocess(command, environment, results_dir / log_name)
                if returncode != 0:
                    scoring.notes.append(
                        f"scoring on test stopped (exit code {returncode}: "
                        f"{last_line(results_dir / log_name)}); log: {results_dir / log_name}"
                    )
        for run_dir in pending:
            record = (read_json(run_dir / RUN_INFO_NAME) or {}).get(TEST_RECORD_KEY) or {}
            if is_scored(run_dir):
                scoring.scored.append(run_dir)
            else:
                scoring.failed.append(run_dir)
                scoring.notes.append(
                    f"{run_dir}: not scored on test ({record.get('error', 'no record')}); "
                    f"log: {results_dir / log_name}"
                )
    return scoring
