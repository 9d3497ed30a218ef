"""
tune-search: Optuna search over a config's ext-var hyperparameters, with pruning.

Each `--param` names an ext var the config reads with `std.extVar` and its range:

- `TUNE_LR=1e-5:1e-3:log` a float range sampled on a log scale (`TUNE_DROPOUT=0.0:0.5`: linear);
- `TUNE_EPOCHS=1:4` an integer range (both bounds integers; `:log` works too);
- `TUNE_BATCH_SIZE=8,16,32` a choice among strings.

Values reach the config as strings, like every ext var (read numbers with `std.parseJson`).
Before any trial the config is checked against the parameters (`search_space.check_config`:
no variable twice, every value a trial can draw taken, every variable read).
`TUNE_SEED` is the seed (`--seed`, default 1); `--ext-var KEY=VALUE` fixes others.
`--enqueue "TUNE_LR=1e-4 TUNE_EPOCHS=5"` (a value for every `--param`) runs those settings first,
within `--trials`, unless the study already has a trial with them (queued, running, complete or
pruned; a failed one is tried again): `enqueue_settings`, over Optuna's `enqueue_trial`.

Trials run one after another in the worker process: AllenNLP's `train_model` with the trial's
ext vars, into `DIR/<study>/trial_<number>`, each with a `tune_run.json` (status "ok", "pruned"
or "failed"; an "ok" trial is left with its archive but no checkpoints, a "pruned" one with no
weights, see `tidy.py`). An "ok" trial also gets, as a tune-grid run, `archive_bytes` in its
`cost.json` and its dev predictions, `dev_predictions.jsonl` (`outputs.write_dev_predictions`, here
in-process, where the trial trained). The objective is the trainer's `validation_metric` (its
sign gives the direction), read as `best_validation_<metric>` from the trial's `metrics.json`.
tune-search adds the `optuna_pruning` callback to the trainer, which reports the validation
metric to the trial after every epoch; with `--pruning` a median pruner stops a trial after an
epoch (from the second on) whose metric is worse than the median of earlier trials at that
epoch, once 3 trials have finished. Training in-process is what makes per-epoch pruning a
simple callback.

Storage is `sqlite:///DIR/optuna.db` by default. Any Optuna RDB URL works: with
`postgresql://user@host/db` several processes or machines run workers of one study (same
`--study-name`, `load_if_exists`); `--trials` counts the trials of this worker. A worker that is
killed leaves its trial "RUNNING" in the storage; other workers are not affected. `--budget`'s
one-process search, which holds its results folder's lock, trains such a trial on from its
checkpoint (`trial_resume`, through `resume`).

Ctrl-C or `kill <pid>` (SIGTERM, as Ctrl-C: `process.SigtermAsInterrupt`) ends the search: the
trial in training is told "failed" with the user attr `interrupted` (`INTERRUPTED_ATTR`), its
folder keeps no weights, and no further trial starts. `--budget` does not count such a trial and
runs its setting again (`interrupted_settings`). Without this, AllenNLP's SIGTERM handler raises
an `Exception`, which the search caught as one failed trial before going on to the next.

When a worker finishes, the study's best trial (over all workers) is written to
`DIR/<study>/best_params.json` and, ready to reuse, to `DIR/<study>/best_params.env`
(`export TUNE_LR=...` lines: `source` it, then `allennlp train` or `allennlp tune-grid`).
"""

import contextlib
import gc
import json
import logging
import math
import os
import shlex
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_tune.experiments.fingerprint import fingerprint
from allennlp_tune.experiments.outputs import predict_in_process, record_run_outputs, run_record
from allennlp_tune.experiments.process import SigtermAsInterrupt
from allennlp_tune.experiments.search_space import (  # noqa: F401  (re-exported: search's API)
    SearchParam,
    _load_params,
    check_config,
    parse_settings,
)

# storage_with_driver and public_url are imported from here too.
from allennlp_tune.experiments.storage import (  # noqa: F401
    check_storage,
    open_study,
    public_url,
    storage_with_driver,
)
from allennlp_tune.host_access import storage_trial_id
from allennlp_tune.quiet import root_logging
from allennlp_tune.rundir import (
    FAILED,
    METRICS_NAME,
    OK,
    PRUNED,
    RUN_INFO_NAME,
    SEED_EXT_VAR,
    move_aside,
    read_json,
    timestamp,
    write_json,
)
from allennlp_tune.rundir.folders import folder_problem
from allennlp_tune.rundir.tidy import tidy_run_dir
from allennlp_tune.training.callbacks.optuna_pruning import reporting_to

logger = logging.getLogger(__name__)

BEST_PARAMS_JSON = "best_params.json"
BEST_PARAMS_ENV = "best_params.env"
# The user attr of a trial that Ctrl-C or SIGTERM stopped: failed in the storage, not finished.
INTERRUPTED_ATTR = "interrupted"
# The user attr with what a trial trains from (`fingerprint.fingerprint` of its rendered config,
# when it starts): a trial a killed process left is resumed only where it still matches.
FINGERPRINT_ATTR = "fingerprint"


def interrupted(trial: Any) -> bool:
    """Whether Ctrl-C or SIGTERM stopped `trial` (a failed trial that did not finish)."""
    import optuna

    return trial.state == optuna.trial.TrialState.FAIL and bool(
        trial.user_attrs.get(INTERRUPTED_ATTR)
    )


def _state_name(trial: Any) -> str:
    """The trial's state as `best_params.json` and `describe` count it: "interrupted" apart."""
    return "interrupted" if interrupted(trial) else trial.state.name.lower()


def interrupted_settings(study: Any) -> List[Dict[str, Any]]:
    """The searched values of the study's interrupted trials, oldest first: what a resumed
    search runs again (through `enqueue_settings`, which skips those already rerun)."""
    return [dict(trial.params) for trial in study.get_trials(deepcopy=False) if interrupted(trial)]


def enqueue_settings(study: Any, settings: Sequence[Dict[str, Any]]) -> int:
    """
    Puts each of `settings` in the study's queue, so that the next trials run them before the
    sampler draws, unless a trial with the same values is already queued, running, complete
    or pruned (so a resumed search does not run them again; a failed one is tried again).
    Returns how many were queued.
    """
    import optuna

    states = (
        optuna.trial.TrialState.WAITING,
        optuna.trial.TrialState.RUNNING,
        optuna.trial.TrialState.COMPLETE,
        optuna.trial.TrialState.PRUNED,
    )
    known = []
    for trial in study.get_trials(deepcopy=False, states=states):
        # A waiting trial has its values as fixed_params, not yet as params.
        known.append({**trial.system_attrs.get("fixed_params", {}), **trial.params})

    def same(left: Dict[str, Any], right: Dict[str, Any]) -> bool:
        if left.keys() != right.keys():
            return False
        for name, value in left.items():
            other = right[name]
            if isinstance(value, str) or isinstance(other, str):
                if value != other:
                    return False
            elif not math.isclose(float(value), float(other), rel_tol=1e-12, abs_tol=0.0):
                return False
        return True

    queued = 0
    for values in settings:
        if any(same(values, previous) for previous in known):
            continue
        study.enqueue_trial(values)
        known.append(values)
        queued += 1
    return queued


def trial_params(
    config: Path, ext_vars: Dict[str, str], overrides: Optional[str]
) -> Dict[str, Any]:
    """What a trial trains: `config` rendered with `ext_vars` and `overrides`, the
    `optuna_pruning` callback added to its trainer (AllenNLP writes it as the `config.json`)."""
    raw = _load_params(config, ext_vars, overrides).as_dict(quiet=True)
    trainer = raw.setdefault("trainer", {})
    trainer["callbacks"] = list(trainer.get("callbacks") or []) + [{"type": "optuna_pruning"}]
    return raw


def _train_trial(raw: Dict[str, Any], run_dir: Path, recover: bool = False) -> None:
    """Trains `raw` (`trial_params`) into `run_dir`; with `recover`, on from the folder's
    latest checkpoint (AllenNLP's `--recover`, `trial_resume`)."""
    from allennlp.commands.train import train_model
    from allennlp.common.params import Params

    # train_model points the root logger at the trial's out.log; put it back afterwards. Until
    # it does, it logs a few parameters at INFO: without the command's own handlers (which hold
    # the terminal's stderr, so tune-compare's quiet search would print them) they go nowhere,
    # as they never reached out.log.
    try:
        with root_logging([]):
            train_model(
                Params(raw),
                serialization_dir=str(run_dir),
                file_friendly_logging=True,
                recover=recover,
            )
    finally:
        _release_gpu_memory()


def _release_gpu_memory() -> None:
    # The trainer and its callbacks reference each other, so a trial's model can outlive it
    # until the next collection: free it before the next trial needs the GPU. (On CPU this
    # would only cost time.)
    import torch

    if torch.cuda.is_available():
        gc.collect()
        torch.cuda.empty_cache()


@dataclass
class SearchResult:
    study: Any
    best_json: Optional[Path] = None
    best_env: Optional[Path] = None
    trial_states: Dict[str, int] = field(default_factory=dict)


def write_best_params(
    study: Any,
    study_dir: Path,
    storage: str,
    config: Path,
    metric: str,
    fixed_ext_vars: Dict[str, str],
    seed: int,
) -> Tuple[Path, Path]:
    """Writes the study's best trial as `best_params.json` and `best_params.env`."""
    best = study.best_trial
    searched = best.user_attrs.get("ext_vars") or {
        name: repr(value) if isinstance(value, float) else str(value)
        for name, value in best.params.items()
    }
    states: Dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        states[_state_name(trial)] = states.get(_state_name(trial), 0) + 1
    data = {
        "study_name": study.study_name,
        "storage": public_url(storage),
        "config": str(config),
        "metric": metric,
        "direction": study.direction.name.lower(),
        "value": best.value,
        "trial": best.number,
        "run_dir": best.user_attrs.get("run_dir"),
        "ext_vars": searched,
        "fixed_ext_vars": fixed_ext_vars,
        "seed": seed,
        "trials": states,
    }
    best_json = study_dir / BEST_PARAMS_JSON
    write_json(best_json, data)
    best_env = study_dir / BEST_PARAMS_ENV
    lines = [
        f"# Best trial {best.number} of study {study.study_name!r}: "
        f"{metric} = {best.value:.6g} ({data['direction']}), config {config}.",
        "# Reuse: source this file, then allennlp train / allennlp tune-grid.",
    ]
    lines += [f"export {name}={shlex.quote(value)}" for name, value in sorted(searched.items())]
    best_env.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return best_json, best_env


def _check_arguments(params: Sequence[SearchParam], study_name: str) -> None:
    if not params:
        raise ConfigurationError("Give at least one --param to search over.")
    if not study_name or "/" in study_name or study_name.startswith("."):
        raise ConfigurationError(f"--study-name {study_name!r}: use a name without '/'.")


def _storage_url(
    storage: Optional[str],
    results_dir: Path,
    option: str = "--storage (default: RESULTS_DIR/optuna.db)",
    fix: str = (
        "move it away (its trials are lost to the search) to start a new study there, or "
        "pass --storage to keep the study elsewhere"
    ),
) -> str:
    """The storage to use, checked: `sqlite:///DIR/optuna.db` when none is given. Refuses a
    results folder that cannot be written first. `option` and `fix` name, for the default
    database, where it came from and what to do with a damaged one: tune-search's defaults;
    `budget_storage_url` gives tune-compare --budget's, which has no --storage."""
    problem = folder_problem(results_dir)
    if problem is not None:
        raise ConfigurationError(f"--results-dir {results_dir} {problem}")
    if storage is None:
        results_dir.mkdir(parents=True, exist_ok=True)
        database = (results_dir / "optuna.db").resolve()
        check_storage(f"sqlite:///{database}", option, fix=fix)
        return f"sqlite:///{database}"
    storage = storage_with_driver(storage)
    check_storage(storage)
    return storage


def budget_storage_url(search_dir: Path) -> str:
    """`_storage_url` for tune-compare --budget's searches (`RESULTS_DIR/search/optuna.db`):
    a damaged database is named as the budget's, with a fix that needs no --storage."""
    return _storage_url(
        None,
        search_dir,
        option="tune-compare --budget's searches (RESULTS_DIR/search/optuna.db)",
        fix=(
            "move it away to run the budget's searches again from their first trial (its "
            "trials are lost), or pass another --results-dir"
        ),
    )


def _open_checked_study(
    storage: str,
    study_name: str,
    config: Path,
    metric: str,
    higher_is_better: bool,
    pruning: bool,
    pruner: Any,
    sampler: Any,
    sampler_seed: Optional[int],
) -> Any:
    """
    Creates the study or loads it, with the default pruner (a median pruner with `pruning`,
    none without) unless `pruner`, and TPE seeded by `sampler_seed` plus the trials the study
    already has. Refuses a study that was created for another direction or metric: its trials
    would not compare with this config's.
    """
    import optuna

    direction = "maximize" if higher_is_better else "minimize"
    if pruner is None:
        pruner = (
            optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1)
            if pruning
            else optuna.pruners.NopPruner()
        )
    if sampler is not None and sampler_seed is not None:
        raise ConfigurationError("Give a sampler or a sampler seed, not both.")
    study = open_study(storage, study_name, direction, sampler, pruner)
    if sampler_seed is not None:
        done = len(study.get_trials(deepcopy=False))
        study.sampler = optuna.samplers.TPESampler(seed=sampler_seed + done)
    if study.direction.name.lower() != direction:
        raise ConfigurationError(
            f"Study {study_name!r} in {public_url(storage)} was created to "
            f"{study.direction.name.lower()}, but {config}'s validation_metric asks to "
            f"{direction}: use another --study-name."
        )
    recorded_metric = study.user_attrs.get("metric")
    if recorded_metric is None:
        study.set_user_attr("metric", metric)
        study.set_user_attr("config", str(config))
    elif recorded_metric != metric:
        raise ConfigurationError(
            f"Study {study_name!r} optimises {recorded_metric!r}, but {config}'s "
            f"validation_metric is {metric!r}: use another --study-name."
        )
    return study


@dataclass
class _Trials:
    """
    The objective Optuna calls once per trial of this worker: trains the trial in this process
    into `study_dir/trial_<number>` with the searched values as ext vars, writes its
    `tune_run.json` (status "ok", "pruned" or "failed") and returns its metric. `numbers` holds
    the trials this worker ran, which the study's storage does not tell apart from others'.
    """

    config: Path
    params: Sequence[SearchParam]
    fixed: Dict[str, str]
    overrides: Optional[str]
    study_name: str
    study_dir: Path
    seed: int
    metric: str
    higher_is_better: bool
    keep_checkpoints: bool
    worker: str
    numbers: List[int] = field(default_factory=list)
    # Trials a killed process left half-trained, by number: the epochs of the checkpoint each
    # trains on from, in its own folder (`trial_resume`).
    resume: Dict[int, int] = field(default_factory=dict)

    def __call__(self, trial: Any) -> float:
        import optuna

        self.numbers.append(trial.number)
        searched = {param.name: param.suggest(trial) for param in self.params}
        run_ext_vars = {**self.fixed, **searched}
        run_dir = self.study_dir / f"trial_{trial.number}"
        resumed_after = self.resume.get(trial.number)
        resumed = {} if resumed_after is None else {"resumed_after_epochs": resumed_after}
        if resumed_after is None and run_dir.exists():  # left by a deleted study of this name
            aside = move_aside(run_dir, "incomplete")
            if not self.keep_checkpoints:
                tidy_run_dir(aside, drop_weights=True)
        trial.set_user_attr("ext_vars", searched)
        trial.set_user_attr("run_dir", str(run_dir.resolve()))
        if INTERRUPTED_ATTR in trial.user_attrs:  # a workers' retry copies its failed original's
            trial.set_user_attr(INTERRUPTED_ATTR, False)
        trial.set_user_attr("worker", self.worker)
        info = run_record(
            "tune-search",
            self.config,
            self.seed,
            run_ext_vars,
            variant=f"{self.study_name}/trial_{trial.number}",
            study_name=self.study_name,
            trial=trial.number,
            worker=self.worker,
            metric=("+" if self.higher_is_better else "-") + self.metric,
            log="out.log",
            **resumed,
        )
        try:
            value = self._train(trial, run_dir, run_ext_vars, resumed_after is not None)
            info["status"] = OK
            return value
        except optuna.TrialPruned as pruned:
            info.update(status=PRUNED, error=str(pruned))
            raise
        except Exception as error:
            info.update(status=FAILED, error=f"{type(error).__name__}: {error}")
            raise
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM: Optuna tells the trial failed and re-raises; the attr keeps it
            # out of the trials that count. Its folder stays partial (no tune_run.json, as in
            # tune-grid), without the weights nobody will resume from.
            trial.set_user_attr(INTERRUPTED_ATTR, True)
            if run_dir.is_dir() and not self.keep_checkpoints:
                tidy_run_dir(run_dir, drop_weights=True)
            raise
        finally:
            if "status" in info:
                self._finish(run_dir, info)

    def _train(
        self, trial: Any, run_dir: Path, run_ext_vars: Dict[str, str], resumed: bool
    ) -> float:
        """Trains the trial, reporting each epoch to it; its `best_validation_<metric>`. A new
        trial first records what it trains from (`FINGERPRINT_ATTR`), which a resumed one
        (`resumed`: on from its checkpoint) was checked against."""
        raw = trial_params(self.config, run_ext_vars, self.overrides)
        if not resumed:
            trial.set_user_attr(FINGERPRINT_ATTR, fingerprint(raw))
        with reporting_to(trial, self.metric):
            _train_trial(raw, run_dir, recover=resumed)
        metrics = read_json(run_dir / METRICS_NAME) or {}
        value = metrics.get(f"best_validation_{self.metric}")
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(
                f"{run_dir / METRICS_NAME} has no finite best_validation_{self.metric} ({value!r})"
            )
        return float(value)

    def _finish(self, run_dir: Path, info: Dict[str, Any]) -> None:
        """
        As tune-grid does for a run: an "ok" trial gets its archive size and dev predictions
        (in this process, as the trial trained, on its device); an "ok" or "pruned" one is
        tidied unless `keep_checkpoints`. Then its `tune_run.json`.
        """
        run_dir.mkdir(parents=True, exist_ok=True)
        if info["status"] == OK:
            info.update(record_run_outputs(run_dir, dict(os.environ), predict_in_process))
            _release_gpu_memory()
        if info["status"] in (OK, PRUNED) and not self.keep_checkpoints:
            info["tidied"] = tidy_run_dir(run_dir, drop_weights=info["status"] == PRUNED)
        info["finished"] = timestamp()
        write_json(run_dir / RUN_INFO_NAME, info)


@contextlib.contextmanager
def _worker_feature_cache(
    study_dir: Path, worker: str, fixed: Dict[str, str], keep_checkpoints: bool
) -> Iterator[None]:
    """
    While inside, `TUNE_FEATURE_CACHE_DIR` in this process's environment names the cache of
    frozen-encoder features this worker's trials share (keyed by content, so safe):
    `study_dir/.feature_cache-<worker>`, unless the user chose one (environment or `--ext-var`).
    The trials train in this process and the feature cache reads its directory from the
    environment, so a `--ext-var` must reach the environment, as tune-grid's ext vars do.
    Afterwards the previous value is restored and the worker's own cache removed, unless
    `keep_checkpoints`.
    """
    from allennlp_tune.modules.feature_cache import CACHE_DIR_ENV, user_cache_directory

    own_cache = user_cache_directory(fixed)
    shared_cache = study_dir / f".feature_cache-{worker.replace(':', '-')}"
    previous = os.environ.get(CACHE_DIR_ENV)
    os.environ[CACHE_DIR_ENV] = own_cache or str(shared_cache.resolve())
    try:
        yield
    finally:
        if previous is None:
            del os.environ[CACHE_DIR_ENV]
        else:
            os.environ[CACHE_DIR_ENV] = previous
        if not own_cache and shared_cache.is_dir() and not keep_checkpoints:
            shutil.rmtree(shared_cache)


def _search_result(
    study: Any,
    mine: Sequence[int],
    study_dir: Path,
    storage: str,
    config: Path,
    metric: str,
    fixed: Dict[str, str],
    seed: int,
) -> SearchResult:
    """The states of this worker's trials and the study's best, written as
    `best_params.json` and `.env`; a `ConfigurationError` when no trial has completed."""
    import optuna

    states: Dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        if trial.number in mine:
            states[_state_name(trial)] = states.get(_state_name(trial), 0) + 1
    result = SearchResult(study=study, trial_states=states)
    if not any(
        t.state == optuna.trial.TrialState.COMPLETE for t in study.get_trials(deepcopy=False)
    ):
        raise ConfigurationError(
            f"No trial of study {study.study_name!r} has completed (this worker: {states}); "
            f"see the logs in {study_dir}/trial_*/out.log."
        )
    result.best_json, result.best_env = write_best_params(
        study, study_dir, storage, config, metric, dict(fixed), seed
    )
    return result


def run_search(
    config: Path,
    params: Sequence[SearchParam],
    trials: int,
    study_name: str,
    results_dir: Path,
    storage: Optional[str] = None,
    pruning: bool = False,
    ext_vars: Optional[Dict[str, str]] = None,
    seed: int = 1,
    overrides: Optional[str] = None,
    pruner: Any = None,
    sampler: Any = None,
    keep_checkpoints: bool = False,
    sampler_seed: Optional[int] = None,
    enqueue: Sequence[Dict[str, Any]] = (),
    stop: Optional[Callable[[Any], bool]] = None,
    resume: Optional[Dict[int, int]] = None,
    study_attrs: Optional[Dict[str, Any]] = None,
    after_trial: Optional[Callable[[Any, Any], None]] = None,
) -> SearchResult:
    """
    Runs `trials` trials of the study `study_name` in this process (see the module docstring).
    `pruner` and `sampler` (Optuna objects) replace the defaults: a median pruner with
    `pruning`, none without, and TPE. `sampler_seed` (without `sampler`) seeds TPE with
    `sampler_seed + the trials the study already has`: a new study draws the same settings for
    the same seed, and a resumed one goes on to new draws instead of repeating the first ones
    (a seeded sampler restarts its random sequence in every process). Unless
    `keep_checkpoints`, a completed trial keeps only its archive and a pruned one no weights at
    all (`tidy.tidy_run_dir`); a failed one keeps all. `enqueue` (Optuna params, see
    `parse_settings`) are run first, as part of `trials`, unless the study already has them
    (`enqueue_settings`): e.g. the config's own defaults, so the search ends no worse than them.
    `stop(study)`, asked after each trial, ends the search before `trials` when it is true (a
    budget in compute, `budget_compute`). The trials of this worker share a feature cache,
    `DIR/<study>/.feature_cache-<worker>`, unless `TUNE_FEATURE_CACHE_DIR` is set in the
    environment or `ext_vars`; it is removed when the worker stops (kept with
    `keep_checkpoints`). `resume` (`trial_resume.dead_trials`): trials a killed process left,
    trained on first, as part of `trials`. `study_attrs`: set where the study lacks them,
    before any trial. `after_trial(study, trial)`: called as each trial ends.
    """
    config = Path(config)
    results_dir = Path(results_dir)
    _check_arguments(params, study_name)
    storage = _storage_url(storage, results_dir)
    fixed = dict(ext_vars or {})
    fixed[SEED_EXT_VAR] = str(seed)
    metric, higher_is_better = check_config(config, params, fixed, overrides)
    study = _open_checked_study(
        storage,
        study_name,
        config,
        metric,
        higher_is_better,
        pruning,
        pruner,
        sampler,
        sampler_seed,
    )
    if enqueue:
        enqueue_settings(study, enqueue)
    study_dir = results_dir / study_name
    study_dir.mkdir(parents=True, exist_ok=True)
    worker = f"{socket.gethostname()}:{os.getpid()}"
    objective = _Trials(
        config,
        params,
        fixed,
        overrides,
        study_name,
        study_dir,
        seed,
        metric,
        higher_is_better,
        keep_checkpoints,
        worker,
        resume=dict(resume or {}),
    )
    with _worker_feature_cache(study_dir, worker, fixed, keep_checkpoints), SigtermAsInterrupt():
        _optimize(study, objective, trials, stop, study_attrs or {}, after_trial)
    return _search_result(study, objective.numbers, study_dir, storage, config, metric, fixed, seed)


def set_missing_attrs(study: Any, attrs: Dict[str, Any]) -> None:
    """Sets each of `attrs` as a user attr of `study` where the study lacks it."""
    for key, value in attrs.items():
        if key not in study.user_attrs:
            study.set_user_attr(key, value)


def _optimize(
    study: Any,
    objective: _Trials,
    trials: int,
    stop: Optional[Callable[[Any], bool]],
    study_attrs: Dict[str, Any],
    after_trial: Optional[Callable[[Any, Any], None]],
) -> None:
    """`trials` trials of `objective`: those it resumes first (`_run_resumed`; one that fails
    to is given back, its setting queued to train from its start), then Optuna's, until
    `stop(study)`; `study_attrs` set first where the study lacks them, `after_trial` called
    as each ends."""
    set_missing_attrs(study, study_attrs)
    left = trials
    for number in objective.resume:
        if _run_resumed(study, objective, number):
            left -= 1
            if after_trial is not None:
                after_trial(study, study.trials[number])
        else:
            enqueue_settings(study, [dict(study.trials[number].params)])
    callbacks = [] if after_trial is None else [after_trial]
    if stop is not None:
        callbacks.append(lambda study, _trial: study.stop() if stop(study) else None)
    if left > 0 and not (stop is not None and stop(study)):
        study.optimize(objective, n_trials=left, catch=(Exception,), callbacks=callbacks)


def _run_resumed(study: Any, objective: _Trials, number: int) -> bool:
    """
    The RUNNING trial `number` a killed process left, trained on by `objective` as the same
    Optuna trial (its values, reported epochs and passed rungs stay), then told how it ended,
    as `study.optimize` tells a new one: its value or pruned (True). A failure is told failed
    and interrupted, so it does not count, and logged (False: the caller trains its setting
    again from its start): a checkpoint the kill cut short in writing fails to load, and that
    is no result of the setting. Ctrl-C is told failed and interrupted, and stops the search.
    """
    import optuna
    from optuna.trial import TrialState

    frozen = study.trials[number]
    trial = optuna.trial.Trial(study, storage_trial_id(frozen))
    try:
        value = objective(trial)
    except optuna.TrialPruned:
        study.tell(trial, state=TrialState.PRUNED)
        return True
    except Exception as error:
        logger.warning(
            "Trial %d failed to train on from its checkpoint (%s: %s); its setting trains again "
            "from its start",
            number,
            type(error).__name__,
            error,
        )
        trial.set_user_attr(INTERRUPTED_ATTR, True)
        study.tell(trial, state=TrialState.FAIL)
        return False
    except KeyboardInterrupt:
        study.tell(trial, state=TrialState.FAIL)
        raise
    study.tell(trial, value)
    return True


def describe(result: SearchResult) -> str:
    """A few lines for the terminal: this worker's trials and the study's best."""
    study = result.study
    best = study.best_trial
    return "\n".join(
        [
            f"Study {study.study_name!r}: {len(study.trials)} trials in all; this worker: "
            + json.dumps(result.trial_states),
            f"Best: trial {best.number}, value {best.value:.6g}, "
            + " ".join(f"{k}={v}" for k, v in sorted(best.user_attrs.get("ext_vars", {}).items())),
            f"Wrote {result.best_json} and {result.best_env}",
        ]
    )
