"""
The searches of `tune-compare --budget K --coordinator URL`, shared by workers: any number of
processes given the same command, results folder and coordinator (an Optuna RDB storage,
`workers.Coordinator`) run each mode's K trials between them, then (`compare`) the seeds of
every mode's best setting as one shared grid (`grid.run_grid`'s `config_ext_vars`).

How the K trials are shared:

- the folder's search is the workers' once the first starts: `RESULTS_DIR/search/
  .tune_workers.json` (the workers' marker, `workers._claim_folder`) names a study prefix and the
  search (each mode's config stem and space, the ext vars apart from the device, the
  overrides; not the budget, which a later command may raise); a worker given another search
  is refused with what differs, and a one-process `--budget` on that folder is refused with
  how to join the workers;
- each mode's study, `<prefix>-<config stem>` in the coordinator's storage, holds exactly K
  *slots*: trials enqueued (`Study.enqueue_trial`) with the user attr `budget_slot`, the
  config's own recipe first, the others empty (the sampler draws them,
  `budget.trial_seeded_sampler`: trial n draws what one process would draw for trial n). They
  are enqueued under an exclusive flock (`DIR/search/.tune_workers.lock`) by the first
  worker, topped up to K by any later one (a larger `--budget`); a study with more than K
  counted slots is refused as in one process;
- a worker claims a slot with `Study.ask()`, which moves one WAITING trial to RUNNING, under
  the flock above (`workers.claim_trial`: SQLite would let two workers pop the same one).
  When two workers ask for the last slot together, the loser gets a new trial without the slot
  attr, which it ends at once (FAIL) and which never counts. The trial trains in the worker's
  process (tune-search's objective, `search._Trials`: its folder
  `RESULTS_DIR/search/<config stem>/trial_<n>`, per-epoch pruning) and is told COMPLETE, PRUNED
  or FAIL;
- while it trains, the worker records Optuna heartbeats for the trial every `--heartbeat`
  seconds; a killed worker's trial is failed by the next worker that looks, after `--grace`
  seconds without one (`optuna.storages.fail_stale_trials`), and Optuna's retry callback
  enqueues a copy (same slot attr, same params once drawn) that another worker trains. Ctrl-C or
  SIGTERM gives the trial back at once. A failed trial that was retried is *superseded* and does
  not count (`counted_trials`): every mode ends with exactly K counted trials, complete, pruned
  or failed, as in one process;
- a worker with no slot left to claim in any mode waits, looking for stale trials, while other
  workers train slots; it goes on to the seeds only once every mode's search is finished, so
  every worker reads the same best settings and writes the same `budget.json`.
"""

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_tune.experiments.budget import (
    SAMPLER_SEED,
    BudgetJob,
    ModeSearch,
    _finished,
    budget_pruner,
    budget_record,
    keep_pruner,
    mode_result,
    trial_seeded_sampler,
)
from allennlp_tune.experiments.lock import ResultsDirLock
from allennlp_tune.experiments.process import SigtermAsInterrupt
from allennlp_tune.experiments.search import (
    _open_checked_study,
    _Trials,
    _worker_feature_cache,
    check_config,
)
from allennlp_tune.experiments.workers import (
    MARKER_NAME,
    Coordinator,
    HeldTrial,
    _claim_folder,
    _optuna_quiet,
    _SetupLock,
    claim_trial,
    grid_identity,
    worker_name,
)
from allennlp_tune.rundir import config_stem, write_json
from allennlp_tune.rundir.names import BUDGET_NAME

# The user attr that makes a trial one of a study's K slots.
SLOT_ATTR = "budget_slot"


def search_identity(
    configs: Dict[str, Path],
    spaces: Dict[str, List[str]],
    ext_vars: Dict[str, str],
    overrides: Optional[str],
) -> Dict[str, Any]:
    """What the workers of one search must agree on, in the shape of a grid's identity (so
    `workers` names what differs): each mode's study with its space. The budget is not part of
    it: a later command may raise it (its slots are topped up); workers given different budgets
    at once are refused when their searches end (`run_shared_budget`)."""
    identity = grid_identity([], ext_vars, overrides)
    identity["runs"] = sorted(
        f"{config_stem(config)} over {' '.join(spaces[mode])}" for mode, config in configs.items()
    )
    return identity


def counted_trials(study: Any) -> List[Any]:
    """The study's slots that count against the budget: every slot trial except a failed one a
    retry replaced (a dead or stopped worker's; its copy counts in its place)."""
    trials = study.get_trials(deepcopy=False)
    superseded = set()
    for trial in trials:
        superseded.update(trial.system_attrs.get("retry_history", []))
    return [t for t in trials if SLOT_ATTR in t.user_attrs and t.number not in superseded]


def _open_slots(study: Any) -> Tuple[int, int]:
    """How many counted slots wait and how many are held by a worker."""
    from optuna.trial import TrialState

    states = [trial.state for trial in counted_trials(study)]
    return states.count(TrialState.WAITING), states.count(TrialState.RUNNING)


class _Mode:
    """One mode's shared study and what its trials need."""

    def __init__(self, mode: str, config: Path, params: List[Any], space: List[str]) -> None:
        self.mode, self.config, self.params, self.space = mode, config, params, space
        self.stem = config_stem(config)
        self.study: Any = None
        self.objective: Optional[_Trials] = None
        self.start: Optional[Dict[str, Any]] = None
        self.notes: List[str] = []
        self.done_before = 0
        self.trained = 0


def refuse_if_search_is_shared(search_dir: Path) -> None:
    """Refuses a one-process `--budget` on a folder whose search workers share."""
    from allennlp_tune.experiments.workers import refuse_if_workers_own

    refuse_if_workers_own(search_dir)


def run_shared_budget(
    job: BudgetJob,
    coordinator: Coordinator,
    poll_s: Optional[float] = None,
) -> Dict[str, ModeSearch]:
    """
    This process's part of the shared searches (module docstring): returns every mode's search
    once all are finished, and writes `RESULTS_DIR/budget.json` as one process would.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    coordinator = coordinator.checked()
    if (job.search_dir / "optuna.db").exists() and not (job.search_dir / MARKER_NAME).exists():
        raise ConfigurationError(
            f"{job.search_dir} holds the searches of one process (optuna.db): finish them without "
            "--coordinator, or give the workers another --results-dir."
        )
    modes = [_Mode(mode, config, *job.space_of(mode)) for mode, config in job.configs.items()]
    identity = search_identity(
        job.configs, {m.mode: m.space for m in modes}, job.ext_vars, job.overrides
    )
    fixed = job.trial_ext_vars
    name = worker_name()
    with ResultsDirLock(job.results_dir, shared=True):
        prefix = _claim_folder(job.search_dir, identity, coordinator)
        storage, retry = coordinator.open_storage()
        with _SetupLock(job.search_dir):
            if not (job.results_dir / BUDGET_NAME).exists():
                # Written first, so that the trials stay out of tune-report's runs from the start.
                write_json(
                    job.results_dir / BUDGET_NAME,
                    budget_record(
                        job.task,
                        job.encoder,
                        job.budget,
                        [],
                        pruner=job.pruner,
                        search_seed=job.search_seed,
                    ),
                )
            for mode in modes:
                _set_up(job, mode, prefix, storage, fixed, name)
        with _worker_feature_cache(job.search_dir, name, fixed, job.keep_checkpoints):
            with SigtermAsInterrupt():
                _train_slots(modes, storage, retry, coordinator, job.search_dir, job.tool, poll_s)
        searches = {}
        for mode in modes:
            counted = counted_trials(mode.study)
            if len(counted) != job.budget:
                raise ConfigurationError(
                    f"--budget {job.budget}: the workers' study of {mode.mode} ended with "
                    f"{len(counted)} trials: another worker was given --budget {len(counted)}. "
                    f"Give every worker the same --budget (rerun with --budget {len(counted)})."
                )
            finished = _finished(mode.study, counted)
            searches[mode.mode] = mode_result(
                mode.mode, mode.study, mode.stem, mode.config, mode.space, mode.start,
                mode.notes, finished, mode.done_before, job.search_dir,
            )  # fmt: skip
        with _SetupLock(job.search_dir):  # one writer of budget.json at a time
            record = budget_record(
                job.task,
                job.encoder,
                job.budget,
                list(searches.values()),
                pruner=job.pruner,
                search_seed=job.search_seed,
            )
            write_json(job.results_dir / BUDGET_NAME, record)
    return searches


def _set_up(
    job: BudgetJob,
    mode: _Mode,
    prefix: str,
    storage: Any,
    fixed: Dict[str, str],
    worker: str,
) -> None:
    """Opens the mode's study (checked as in one process), tops its slots up to `budget`."""
    metric, higher_is_better = check_config(mode.config, mode.params, fixed, job.overrides)
    study_name = f"{prefix}-{mode.stem}"
    sampler = trial_seeded_sampler(SAMPLER_SEED)
    mode.study = study = _open_checked_study(
        storage,
        study_name,
        mode.config,
        metric,
        higher_is_better,
        True,
        budget_pruner(job.pruner),
        sampler,
        None,
    )
    keep_pruner(study, job.pruner, f"study {study_name} on the coordinator")
    counted = counted_trials(study)
    if len(counted) > job.budget:
        raise ConfigurationError(
            f"--budget {job.budget}: study {study_name} on the coordinator has {len(counted)} "
            "trials already, more than the budget; give --budget "
            f"{len(counted)} or more (every mode then gets that many), or another --results-dir."
        )
    new = "budget_start" not in study.user_attrs
    mode.start, mode.notes = job.start_of(study, mode.config, mode.params)
    if new:
        study.set_user_attr("budget_space", mode.space)
        study.set_user_attr("budget_start", mode.start)
        study.set_user_attr("budget_notes", mode.notes)
    if not counted and mode.start:
        study.enqueue_trial(mode.start, user_attrs={SLOT_ATTR: True})
    for _ in range(job.budget - len(counted_trials(study))):
        study.enqueue_trial({}, user_attrs={SLOT_ATTR: True})
    mode.done_before = sum(_finished(study, counted_trials(study)).values())
    study_dir = job.search_dir / mode.stem
    study_dir.mkdir(parents=True, exist_ok=True)
    mode.objective = _Trials(
        mode.config, mode.params, fixed, job.overrides, mode.stem, study_dir, job.search_seed,
        metric, higher_is_better, job.keep_checkpoints, worker,
    )  # fmt: skip
    print(
        f"{job.tool}: {mode.mode}: {job.budget} trials over {' '.join(mode.space)}, shared by the "
        f"workers of {job.search_dir} ({mode.done_before} finished before); their logs: "
        f"{study_dir}/trial_<n>/out.log",
        file=sys.stderr,
    )
    for note in mode.notes:
        print(f"{job.tool}: {mode.mode}: {note}", file=sys.stderr)


def _train_slots(
    modes: List[_Mode],
    storage: Any,
    retry: Callable,
    coordinator: Coordinator,
    search_dir: Path,
    tool: str,
    poll_s: Optional[float],
) -> None:
    """Claims and trains slots of any mode until no mode has a slot waiting or held."""
    from optuna.storages import fail_stale_trials
    from optuna.trial import TrialState

    poll = poll_s or min(5.0, float(coordinator.heartbeat_s))
    grace = coordinator.grace_s or 2 * coordinator.heartbeat_s
    said_waiting = False
    while True:
        held = 0
        claimed = None
        for mode in modes:
            with _optuna_quiet():
                fail_stale_trials(mode.study)
            waiting, running = _open_slots(mode.study)
            held += running
            if waiting:
                trial = claim_trial(mode.study, search_dir)
                if SLOT_ATTR not in trial.user_attrs:
                    # Another worker took the last waiting slot: ask() made a trial of its own,
                    # which never counts. That slot now runs, held by the other worker, though
                    # `running` was counted while it waited: count it, so that this worker
                    # waits for it rather than go on to the seeds before it ends.
                    mode.study.tell(trial, state=TrialState.FAIL)
                    held += 1
                    continue
                claimed = (mode, trial)
                break
        if claimed is not None:
            said_waiting = False
            _train_slot(*claimed, storage, retry, coordinator, tool)
            continue
        if not held:
            return
        if not said_waiting:
            print(
                f"{tool}: no search trial left to take; waiting for the {held} trial(s) other "
                f"workers train (a dead worker's trial comes back after {grace} s without its "
                "heartbeat, and is trained here)",
                file=sys.stderr,
            )
            said_waiting = True
        time.sleep(poll)


def _train_slot(
    mode: _Mode, trial: Any, storage: Any, retry: Callable, coordinator: Coordinator, tool: str
) -> None:
    """Trains one claimed slot (`HeldTrial`: heartbeats, the give-back) and tells the study how
    it ended."""
    import optuna
    from optuna.trial import TrialState

    print(f"{tool}: {mode.mode}: training trial {trial.number}", file=sys.stderr)
    state, value = TrialState.COMPLETE, None
    with HeldTrial(mode.study, storage, retry, trial, coordinator.heartbeat_s) as held:
        try:
            # AllenNLP logs every parameter; the trial's out.log keeps them.
            with open(os.devnull, "w", encoding="utf-8") as quiet:
                with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                    value = mode.objective(trial)
        except optuna.TrialPruned:
            state = TrialState.PRUNED
        except Exception:
            state = TrialState.FAIL
    mode.trained += 1
    if not held.tell(value, state=state):
        print(
            f"{tool}: {mode.mode}: trial {trial.number} was given to another worker while this "
            "one trained it",
            file=sys.stderr,
        )
