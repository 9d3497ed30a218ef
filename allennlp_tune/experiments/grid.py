"""
tune-grid: train configs x seeds into one results directory, resumably.

Every run is `allennlp train CONFIG -s DIR/<config_stem>/seed_<k> --include-package
allennlp_tune` in a subprocess whose environment is
tune-grid's own plus `TUNE_SEED=<k>` and each `--ext-var KEY=VALUE` (AllenNLP reads environment
variables as Jsonnet ext vars; `allennlp train` has no flag for them). So `source
best_params.env` before tune-grid passes tune-search's best hyperparameters on. Runs go seed by
seed (every config with seed 1 first), so an interrupted grid already has one seed of every
cell. The progress bar (stderr) shows the runs done out of all, the run in progress and, once
it has finished an epoch, its epoch and that epoch's dev metric (`epoch_status`).

Before anything is written, the planner (`allennlp_tune.planning.plan`) prints, for every config
with a run to do, its train split's instances and wordpieces, the expected feature cache size
(fe cells with a cache), peak RAM and time per epoch, and refuses the grid when a cell's cache
would not fit its disk budget, naming the setting to change (`plan=False`: no planner;
`plan_only`: print the plan and train nothing). Its time per epoch is measured on this machine
(`allennlp_tune.planning.calibrate`: a few training batches of each cell timed) unless
`calibrate=False` or `TUNE_PLAN_CALIBRATE=0`; the plan ends with the estimated total of every
pending run, and each run that finishes says how long it took against its plan.

Resuming, after a crash, a kill or Ctrl-C:

- a *complete* run (`metrics.json` and `tune_run.json` with status "ok") is skipped, also
  when its `model.tar.gz` was deleted to free disk (the grid says so once per run: delete the
  run's folder to train it again);
- a *partial* run directory (no `tune_run.json`: the run that was in progress) is renamed to
  `seed_<k>.incomplete-<timestamp>` together with the log of that attempt, and the run starts
  again. Nothing is deleted and `--force` is never used, so a directory a user made by hand is
  never lost; the report ignores these renamed attempts;
- a *failed* run is renamed to `seed_<k>.failed-<timestamp>` and retried, unless `keep_failed`;
- a *damaged* run (its `tune_run.json` says it finished, but a file differs from the digest
  recorded then, or its `metrics.json` score is not the one its dev predictions give:
  `reporting.verify.run_damage_of`) is never complete: it is renamed, all its files kept, to
  `seed_<k>.damaged-<timestamp>` and trained again, with one line saying what failed.

An attempt moved aside keeps its logs and loses its checkpoints, `best.th` and own feature
cache (`tidy.tidy_run_dir`), unless `keep_checkpoints`: an interrupted fine-tuning run otherwise
leaves hundreds of MB behind that nothing ever reads.

A complete run is reused only while it is the run the command would train now
(`allennlp_tune.experiments.fingerprint`, `changed`): its `config.json` equals the config
rendered now (every ext var and override), every local file or folder the config names (data,
label files, the encoder) has the content it had, and the packages that compute the result have
the versions they had. Before anything is trained, a complete run that differs refuses the whole
grid with what changed, per run (`TUNE_LR (unset) -> 1e-3`, `dev.csv changed`), unless
`retrain_changed`: then those runs are moved aside to `seed_<k>.changed-<timestamp>` (all their
files kept) and trained again. Every run records its fingerprint in `tune_run.json`
(`fingerprint`).

The runs of a grid share one cache of frozen-encoder features, `DIR/.feature_cache`
(`TUNE_FEATURE_CACHE_DIR` in their environment; entries are keyed by encoder weights, layers and
input ids, so sharing is safe): the fe and sf runs of one task and encoder compute the features
once instead of once per seed. A `TUNE_FEATURE_CACHE_DIR` of your own (environment or
`--ext-var`) wins. The cache is deleted when the grid has gone through every run, unless
`keep_checkpoints`; an interrupted grid keeps it for the rerun.

A run that succeeded leaves what it cost and what it predicted (`outputs`): `archive_bytes` in
its `cost.json` and `dev_predictions.jsonl`, the archived model's predictions on the validation
data (written in a subprocess, log `tune_predict.log`). A prediction that fails is noted in
`tune_run.json` (`predictions_error`) and on the terminal; the run still counts as complete.

A run that succeeded is tidied (`tidy.tidy_run_dir`, unless `keep_checkpoints`): its epoch
checkpoints, `best.th` and its own `feature_cache/` are deleted, as `model.tar.gz` has the
weights; `tune_run.json` lists what went and how many MB it freed. A failed run keeps everything.

A run that fails (non-zero exit, or no archive or metrics) is recorded as failed in its
`tune_run.json` with its exit code, the last line of its log and the log's path
(`tune_train.log` in the run directory), and the grid goes on. While a run is in progress its
log is `DIR/<config_stem>/seed_<k>.log`.

One writer per results directory: the grid holds a lock on `DIR/.tune_grid.lock` that its
training children inherit (`lock`), and Ctrl-C, SIGTERM or the grid's death stop the training
child (`process`). And since every grid run starts fresh, its trainer refuses to restore any
checkpoint it finds when it starts (it has written none yet: a checkpoint there came from
another process; `refuse_foreign_checkpoints`, which the plugin applies in a process started
with `TUNE_GRID_FRESH_RUN=1`).

Many processes, on one machine or many, can share one grid: given a coordinator (`coordinator`,
`--coordinator URL`, an Optuna RDB storage), each is a worker that claims the next run nobody
holds, trains it and records it (`workers`, which also says what happens when a worker dies).

The grid's other modules, by job: `configs` (what it is given), `process` (the training
subprocess and its signals), `lock`, `progress` (the bar's epoch and dev metric), `outputs`
(archive size, dev predictions, the run record), `changed` (complete runs that no longer
match the command) and `workers` (a grid shared by many processes).
"""

import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_tune.experiments.changed import changed_runs_message, find_changed_runs
from allennlp_tune.experiments.configs import check_results_dir
from allennlp_tune.experiments.lock import LOCK_FD_ENV, ResultsDirLock
from allennlp_tune.experiments.outputs import (
    PREDICT_LOG_NAME,
    Predictor,
    predict_subprocess,
    record_run_outputs,
    run_record,
)
from allennlp_tune.experiments.process import (
    Runner,
    SigtermAsInterrupt,
    last_line,
    train_command,
    train_subprocess,
)
from allennlp_tune.experiments.progress import EpochProgress
from allennlp_tune.experiments.workers import (
    Coordinator,
    Worker,
    check_marker,
    grid_identity,
    refuse_if_workers_own,
)
from allennlp_tune.rundir import (
    ARCHIVE_NAME,
    BUDGET_SEARCH_DIR,
    COST_NAME,
    FAILED,
    METRICS_NAME,
    OK,
    RUN_INFO_NAME,
    RUN_LOG_NAME,
    SEED_EXT_VAR,
    config_stem,
    is_complete,
    move_aside,
    read_json,
    timestamp,
    write_json,
)
from allennlp_tune.rundir.tidy import tidy_run_dir
from allennlp_tune.training.fresh_run import FRESH_RUN_ENV

SHARED_CACHE_NAME = ".feature_cache"


@dataclass
class GridResult:
    """What a grid did: run directories it trained, skipped (complete) and that failed."""

    trained: List[Path] = field(default_factory=list)
    skipped: List[Path] = field(default_factory=list)
    failed: List[Path] = field(default_factory=list)
    moved_aside: List[Path] = field(default_factory=list)
    # Complete runs that no longer matched the command, moved aside and trained again.
    retrained: List[Path] = field(default_factory=list)
    # Damaged runs (`reporting.verify`), moved aside and trained again.
    damaged: List[Path] = field(default_factory=list)


def _before_training(
    grid: "_Grid",
    configs: Sequence[Path],
    seeds: Sequence[int],
    retrain_changed: bool,
    plan: bool,
    plan_only: bool,
    calibrate: bool = True,
    plan_seeds: Optional[Sequence[int]] = None,
) -> None:
    """
    The checks before anything is written (each config with the grid's ext vars and its own
    `config_ext_vars`). Finds the complete runs that no longer match the command
    (`changed.find_changed_runs`), to be moved aside and trained again (`grid.retrain`);
    raises a `ConfigurationError` naming them unless `retrain_changed`, and says how many
    complete runs could not be checked for want of a fingerprint. Then, with `plan` or
    `plan_only`, the planner's table (`_plan_before_training`, of `plan_seeds` when given),
    whose plans (by config stem) go to `grid.plans`, and the damaged runs with what failed
    (`find_damaged_runs`, `grid.damaged`), which the plan counts as runs to do.
    """
    results_dir, overrides = grid.results_dir, grid.overrides
    damaged = find_damaged_runs(configs, seeds, results_dir)
    changed, unverified = [], []
    for config in configs:
        found, unchecked = find_changed_runs(
            [config], seeds, results_dir, grid.ext_vars_of(config), overrides, grid.shared_cache
        )
        changed.extend(run for run in found if run.run_dir not in damaged)
        unverified.extend(unchecked)
    if changed and not retrain_changed:
        raise ConfigurationError(changed_runs_message(changed, results_dir))
    if unverified:
        print(
            f"{grid.tool}: {len(unverified)} complete run(s) predate run fingerprints: their "
            "config matches this command, their data and encoder files could not be checked.",
            file=sys.stderr,
        )
    grid.retrain = {run.run_dir for run in changed}
    grid.damaged = damaged
    if plan or plan_only:
        grid.plans = _plan_before_training(
            configs, plan_seeds or seeds, grid, plan_only, grid.retrain | set(damaged), calibrate
        )


def find_damaged_runs(
    configs: Sequence[Path], seeds: Sequence[int], results_dir: Path
) -> Dict[Path, str]:
    """The grid's runs that their `tune_run.json` records as finished but that are damaged
    (`reporting.verify.run_damage_of`), each with what failed."""
    # Here, not at the top: importing the plugin loads no reporting module.
    from allennlp_tune.reporting.verify import run_damage_of

    damaged = {}
    for config in configs:
        for seed in seeds:
            run_dir = results_dir / config_stem(config) / f"seed_{seed}"
            damage = run_damage_of(run_dir) if run_dir.is_dir() else None
            if damage is not None:
                damaged[run_dir] = damage
    return damaged


def pending_seeds(
    config: Path, seeds: Sequence[int], results_dir: Path, retrain: Iterable[Path] = ()
) -> List[int]:
    """The seeds of `config` with a run to do in `results_dir`: not complete, or complete and
    to be trained again (`retrain`: their run folders)."""
    retrain = set(retrain)
    folder = results_dir / config_stem(config)
    return [
        seed
        for seed in seeds
        if not is_complete(folder / f"seed_{seed}") or folder / f"seed_{seed}" in retrain
    ]


def _plan_before_training(
    configs: Sequence[Path],
    seeds: Sequence[int],
    grid: "_Grid",
    plan_only: bool,
    retrain: Iterable[Path] = (),
    calibrate: bool = True,
) -> Dict[str, Any]:
    """The planner's table for the configs with a run to do (`retrain`: complete runs that will
    train again), calibrated on this machine when `calibrate` and `TUNE_PLAN_CALIBRATE` allow;
    raises when a cache won't fit. Returns the plans by config stem. The folder, the ext vars
    (the grid's and each config's), the overrides and the shared cache are `grid`'s."""
    from allennlp_tune.modules.feature_cache import user_cache_directory
    from allennlp_tune.planning.plan import plan_cell
    from allennlp_tune.planning.render import show_plans

    results_dir, ext_vars = grid.results_dir, grid.ext_vars
    retrain = set(retrain)  # once, for every config below
    plans = []
    for config in configs:
        pending = pending_seeds(config, seeds, results_dir, retrain)
        if not pending:
            continue
        run_ext_vars = {**grid.ext_vars_of(config), SEED_EXT_VAR: str(pending[0])}
        cache_directory = grid.shared_cache or user_cache_directory(ext_vars)
        cell = plan_cell(
            config, run_ext_vars, grid.overrides, Path(cache_directory) if cache_directory else None
        )
        cell.pending_runs = len(pending)
        # The grid's runs share the cache folder until its last run (module docstring).
        cell.shares_cache = cache_directory is not None
        # Every complete run of the cell, of these seeds or others (a rerun with other seeds),
        # and the trials of its --budget search (the seeds' plan follows them): the
        # calibration takes its epoch times from those of this machine.
        folder = results_dir / config_stem(config)
        trials = results_dir / BUDGET_SEARCH_DIR / config_stem(config)
        cell.finished_runs = sorted(
            run_dir
            for run_dir in (folder.glob("seed_*") if folder.is_dir() else [])
            if run_dir.is_dir() and is_complete(run_dir) and run_dir not in retrain
        ) + sorted(trials.glob("trial_*") if trials.is_dir() else [])
        plans.append(cell)
    if not plans:
        return {}
    show_plans(
        plans, f"plan of the {len(plans)} cell(s) with runs to do", grid.tool, plan_only, calibrate
    )
    return {cell.stem: cell for cell in plans}


def _shared_cache(results_dir: Path, ext_vars: Optional[Dict[str, str]]) -> Optional[Path]:
    """`DIR/.feature_cache`, the grid's shared feature cache, unless the user chose a cache
    directory (environment or `--ext-var`), which then wins."""
    from allennlp_tune.modules.feature_cache import user_cache_directory

    if user_cache_directory(ext_vars) is None:
        return (results_dir / SHARED_CACHE_NAME).resolve()
    return None


@dataclass
class _Grid:
    """
    What every run of one grid shares: where it writes, what its training children get, what
    it keeps, and the `GridResult` its runs add to. `run` takes one config and seed from a
    folder as the last attempt left it to a finished run with its `tune_run.json`.
    """

    results_dir: Path
    ext_vars: Optional[Dict[str, str]]
    overrides: Optional[str]
    keep_failed: bool
    keep_checkpoints: bool
    runner: Runner
    predict: Optional[Predictor]
    progress: bool
    tool: str
    shared_cache: Optional[Path]
    # Complete runs that no longer match the command, moved aside and trained again.
    retrain: Set[Path] = field(default_factory=set)
    result: GridResult = field(default_factory=GridResult)
    # The worker's name (`workers.worker_name`) when the grid is shared, for `tune_run.json`.
    worker: Optional[str] = None
    # The planner's `CellPlan` per config stem, for the estimate's error after each run.
    plans: Dict[str, Any] = field(default_factory=dict)
    # Ext vars of one config's runs over `ext_vars` (`run_grid`'s `config_ext_vars`).
    config_ext_vars: Optional[Dict[Path, Dict[str, str]]] = None
    # Damaged runs found before training (`find_damaged_runs`), with what failed.
    damaged: Dict[Path, str] = field(default_factory=dict)

    def ext_vars_of(self, config: Path) -> Dict[str, str]:
        """The ext vars of `config`'s runs: the grid's, then the config's own over them."""
        return {**(self.ext_vars or {}), **(self.config_ext_vars or {}).get(config, {})}

    def run(self, config: Path, seed: int, bar: Any, lock_fd: int) -> None:
        """Trains `config` with `seed` unless its run is kept; moves a previous attempt aside."""
        stem = config_stem(config)
        run_dir = self.results_dir / stem / f"seed_{seed}"
        pending_log = run_dir.with_name(f"seed_{seed}.log")
        bar.set_postfix_str(f"{stem} seed {seed}")
        if self._kept(run_dir, pending_log, bar):
            bar.update()
            return
        run_dir.parent.mkdir(parents=True, exist_ok=True)

        run_ext_vars = {**self.ext_vars_of(config), SEED_EXT_VAR: str(seed)}
        environment = self._environment(run_ext_vars, lock_fd)
        command = train_command(config, run_dir, self.overrides)
        info = run_record(
            self.tool,
            config,
            seed,
            run_ext_vars,
            config_stem=stem,
            overrides=self.overrides,
            command=command,
        )
        if self.worker is not None:
            info["worker"] = self.worker
        started = time.monotonic()
        # KeyboardInterrupt leaves run_dir without tune_run.json: partial, rerun next time.
        with EpochProgress(bar, f"{stem} seed {seed}", run_dir, enabled=self.progress):
            returncode = self.runner(command, environment, pending_log)

        run_dir.mkdir(parents=True, exist_ok=True)
        if pending_log.exists():
            os.replace(pending_log, run_dir / RUN_LOG_NAME)
        produced = (run_dir / ARCHIVE_NAME).is_file() and (run_dir / METRICS_NAME).is_file()
        info.update(
            returncode=returncode,
            finished=timestamp(),
            duration_s=round(time.monotonic() - started, 1),
            log=RUN_LOG_NAME,
            status=OK if returncode == 0 and produced else FAILED,
        )
        label = f"{stem} seed {seed}"
        if info["status"] == FAILED:
            self._failed(run_dir, info, label, bar)
        else:
            self._succeeded(run_dir, info, environment, label, bar)
        write_json(run_dir / RUN_INFO_NAME, info)
        if info["status"] == OK:
            from allennlp_tune.reporting.verify import check_finished_run

            damage = check_finished_run(run_dir)
            if damage is not None:  # the pipeline's own predictions disagree with its score
                bar.write(f"{self.tool}: {label}: finished, but damaged at once: {damage}")
        bar.update()

    def _kept(self, run_dir: Path, pending_log: Path, bar: Any) -> bool:
        """
        Whether `run_dir` stays as it is: a complete run that still matches the command, or a
        failed one with `keep_failed`. Otherwise what is there (a changed run, a partial or
        failed attempt) is moved aside, and the run is to be trained.
        """
        damage = self._damage(run_dir)
        if run_dir in self.retrain:
            aside = move_aside(run_dir, "changed")
            self.result.moved_aside.append(aside)
            self.result.retrained.append(run_dir)
            bar.write(f"{self.tool}: moved the changed {run_dir} aside to {aside.name}")
        elif damage is not None:
            aside = move_aside(run_dir, "damaged")
            self.result.moved_aside.append(aside)
            self.result.damaged.append(run_dir)
            bar.write(
                f"{self.tool}: {run_dir} is damaged ({damage}); moved it aside to "
                f"{aside.name}, all its files kept, and training it again"
            )
        elif is_complete(run_dir):
            if not (run_dir / ARCHIVE_NAME).is_file():
                bar.write(
                    f"{self.tool}: {run_dir} finished earlier but has no {ARCHIVE_NAME} any "
                    "more; kept as it is (delete that folder to train it again)"
                )
            self.result.skipped.append(run_dir)
            return True
        if run_dir.exists():
            previous = read_json(run_dir / RUN_INFO_NAME) or {}
            if previous.get("status") == FAILED and self.keep_failed:
                self.result.skipped.append(run_dir)
                self.result.failed.append(run_dir)
                return True
            reason = "failed" if previous.get("status") == FAILED else "incomplete"
            self._move_unfinished_aside(run_dir, reason, pending_log, bar)
        return False

    def _damage(self, run_dir: Path) -> Optional[str]:
        """What is damaged in `run_dir`: as found before training, or, for a worker (whose
        runs other workers may have finished since), checked now."""
        if run_dir in self.damaged:
            return self.damaged.pop(run_dir)
        if self.worker is not None and run_dir not in self.retrain:
            from allennlp_tune.reporting.verify import run_damage_of

            return run_damage_of(run_dir)
        return None

    def _move_unfinished_aside(
        self, run_dir: Path, reason: str, pending_log: Path, bar: Any
    ) -> None:
        """Renames the attempt with the log it left; drops its checkpoints unless kept."""
        aside = move_aside(run_dir, reason)
        if pending_log.exists() and not (aside / RUN_LOG_NAME).exists():
            os.replace(pending_log, aside / RUN_LOG_NAME)
        self.result.moved_aside.append(aside)
        freed = ""
        if not self.keep_checkpoints:
            tidied = tidy_run_dir(aside, drop_weights=True)
            if tidied["removed"]:
                freed = f" (its checkpoints deleted, {tidied['freed_mb']} MB)"
        bar.write(f"{self.tool}: moved the unfinished {run_dir} aside to {aside.name}{freed}")

    def _environment(self, run_ext_vars: Dict[str, str], lock_fd: int) -> Dict[str, str]:
        """
        The training child's environment: this process's, the run's ext vars (AllenNLP reads
        environment variables as ext vars), the shared feature cache, the inherited lock and
        the mark of a fresh run.
        """
        from allennlp_tune.modules.feature_cache import CACHE_DIR_ENV

        environment = dict(os.environ)
        environment.update(run_ext_vars)
        if self.shared_cache is not None:
            environment[CACHE_DIR_ENV] = str(self.shared_cache)
        environment[LOCK_FD_ENV] = str(lock_fd)
        environment[FRESH_RUN_ENV] = "1"
        return environment

    def _failed(self, run_dir: Path, info: Dict[str, Any], label: str, bar: Any) -> None:
        """Records why the run failed (exit code, the log's last error line) and says so."""
        returncode = info["returncode"]
        reason = (
            f"exit code {returncode}"
            if returncode != 0
            else "exit code 0 but no model.tar.gz or metrics.json"
        )
        last = last_line(run_dir / RUN_LOG_NAME)
        info["error"] = f"{reason}: {last}" if last else reason
        self.result.failed.append(run_dir)
        bar.write(f"{self.tool}: {label} failed ({info['error']}); log: {run_dir / RUN_LOG_NAME}")

    def _succeeded(
        self,
        run_dir: Path,
        info: Dict[str, Any],
        environment: Dict[str, str],
        label: str,
        bar: Any,
    ) -> None:
        """Adds the run's fingerprint and outputs (archive size, dev predictions) to `info`,
        then tidies the run unless `keep_checkpoints`."""
        self.result.trained.append(run_dir)
        bar.set_postfix_str(f"{label}, dev predictions")
        info.update(record_run_outputs(run_dir, environment, self.predict))
        if "predictions_error" in info:
            bar.write(
                f"{self.tool}: {label}: no dev predictions "
                f"({info['predictions_error']}); log: {run_dir / PREDICT_LOG_NAME}"
            )
        if not self.keep_checkpoints:
            info["tidied"] = tidy_run_dir(run_dir)
        cell = self.plans.get(run_dir.parent.name)
        if cell is not None:
            from allennlp_tune.planning.render import estimate_error

            # A cell's later runs read the cache an earlier run of it in this grid filled.
            earlier = self.result.trained[:-1]
            filled = cell.shares_cache and any(done.parent == run_dir.parent for done in earlier)
            cost = read_json(run_dir / COST_NAME)
            said = estimate_error(cell, cost, info.get("duration_s"), cache_filled=filled)
            if said:  # stderr, with the plan and the bar: stdout is the report's
                bar.write(f"{self.tool}: {label} {said}", file=sys.stderr)


def run_grid(
    configs: Sequence[Path],
    seeds: Sequence[int],
    results_dir: Path,
    ext_vars: Optional[Dict[str, str]] = None,
    overrides: Optional[str] = None,
    keep_failed: bool = False,
    keep_checkpoints: bool = False,
    runner: Runner = train_subprocess,
    progress: bool = True,
    tool: str = "tune-grid",
    predict: Optional[Predictor] = predict_subprocess,
    plan: bool = True,
    plan_only: bool = False,
    retrain_changed: bool = False,
    coordinator: Optional[Coordinator] = None,
    config_ext_vars: Optional[Dict[Path, Dict[str, str]]] = None,
    calibrate: bool = True,
    plan_seeds: Optional[Sequence[int]] = None,
) -> GridResult:
    """
    Trains every config with every seed into `results_dir`: the module docstring says what is
    planned first (`plan`, `plan_only`: print the plan and return an empty result,
    `calibrate`), what is skipped, moved aside and rerun (`keep_failed`, `retrain_changed`),
    and what a finished run leaves (`predict`: its dev predictions, None for none;
    `keep_checkpoints`). `KeyboardInterrupt` propagates after the run in progress is stopped,
    the only one lost. `tool` names the command in the progress bar, the messages and each
    run's `tune_run.json`. `plan_seeds`: the seeds the plan counts when they are more than this
    grid's (`--sequential`'s rounds: every seed up to the last look).

    `coordinator` (`workers.Coordinator`): this process is one worker of a grid shared through
    that Optuna storage; it trains the runs no other worker holds and returns once every run of
    the grid is done (`workers`). Without it, a folder that workers share is refused.
    `config_ext_vars` (config -> ext vars): a config's runs get these over `ext_vars`
    (`tune-compare --budget`: each mode's best setting); they are part of the workers' grid
    identity.
    """
    results_dir = Path(results_dir)
    jobs = [(config, seed) for seed in seeds for config in configs]
    # --- workers (`workers`): a folder workers share is theirs; a worker's checks come first.
    if coordinator is None:
        refuse_if_workers_own(results_dir)
    else:
        coordinator = coordinator.checked()
        check_marker(results_dir, grid_identity(jobs, ext_vars, overrides, config_ext_vars))
    # --- end workers
    check_results_dir(results_dir)
    shared_cache = _shared_cache(results_dir, ext_vars)
    grid = _Grid(
        results_dir, ext_vars, overrides, keep_failed, keep_checkpoints, runner, predict,
        progress, tool, shared_cache, config_ext_vars=config_ext_vars,
    )  # fmt: skip
    _before_training(grid, configs, seeds, retrain_changed, plan, plan_only, calibrate, plan_seeds)
    if plan_only:
        return GridResult()
    results_dir.mkdir(parents=True, exist_ok=True)
    if coordinator is not None:  # --- workers
        return _run_as_worker(grid, jobs, coordinator, retrain_changed)
    return _run_in_one_process(grid, jobs, results_dir, shared_cache, keep_checkpoints)


def _run_in_one_process(
    grid: _Grid,
    jobs: List[Tuple[Path, int]],
    results_dir: Path,
    shared_cache: Optional[Path],
    keep_checkpoints: bool,
) -> GridResult:
    """The grid's runs in order in this process, under the results folder's lock; then the
    shared feature cache goes (unless `keep_checkpoints`)."""
    from tqdm import tqdm

    # Taken before anything is moved aside, held until the shared cache is gone: the run of a
    # live writer is left alone.
    with ResultsDirLock(results_dir) as lock:
        bar = tqdm(
            total=len(jobs), unit="run", desc=grid.tool, disable=not grid.progress, file=sys.stderr
        )
        with bar, SigtermAsInterrupt():
            for config, seed in jobs:
                grid.run(config, seed, bar, lock.fd)
        if shared_cache is not None and shared_cache.is_dir() and not keep_checkpoints:
            shutil.rmtree(shared_cache)
    return grid.result


def _run_as_worker(
    grid: _Grid,
    jobs: List[Any],
    coordinator: Coordinator,
    retrain_changed: bool,
) -> GridResult:
    """The grid as one worker of many (`workers.Worker`): this process trains the runs it claims
    with `_Grid.run`; the last worker out deletes the shared feature cache (unless kept)."""
    from tqdm import tqdm

    def changed(config: Path, seed: int) -> bool:
        found, _ = find_changed_runs(
            [config],
            [seed],
            grid.results_dir,
            grid.ext_vars_of(config),
            grid.overrides,
            grid.shared_cache,
        )
        return bool(found)

    def set_retrain(runs: Set[Path]) -> None:
        grid.retrain = runs

    def cleanup() -> None:
        cache = grid.shared_cache
        if cache is not None and cache.is_dir() and not grid.keep_checkpoints:
            shutil.rmtree(cache, ignore_errors=True)

    worker = Worker(
        coordinator,
        grid.results_dir,
        jobs,
        grid_identity(jobs, grid.ext_vars, grid.overrides, grid.config_ext_vars),
        train=grid.run,
        set_retrain=set_retrain,
        changed=changed if retrain_changed else None,
        retrain=set(grid.retrain),
        tool=grid.tool,
    )
    grid.worker = worker.name
    # Runs found changed at the start are retrained only once claimed and checked again.
    grid.retrain = set()
    total = len(jobs)
    bar = tqdm(total=total, unit="run", desc=grid.tool, disable=not grid.progress, file=sys.stderr)
    with bar:
        worker.run(bar, cleanup)
    return grid.result
