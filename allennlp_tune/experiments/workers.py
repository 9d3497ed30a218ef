"""
Workers that share one grid: any number of `tune-grid` / `tune-compare` processes, on one machine
or many, given the same results folder (a shared filesystem), the same grid (configs, seeds, ext
vars, overrides) and the same coordinator (`--coordinator URL`, an Optuna RDB storage: SQLite
for one machine, PostgreSQL for many), each take the next run nobody holds, train it and record
it, until every run of the grid is done.

The coordination is Optuna's, not a queue of our own:

- the grid is an Optuna study (`Coordinator.open_storage`) whose trials are its runs: every run
  is an enqueued trial (`Study.enqueue_trial`) with the user attr `run` = `<config_stem>/seed_<k>`;
- a worker claims a run with `Study.ask()`, which moves one WAITING trial to RUNNING, under the
  folder's setup flock (`claim_trial`: SQLite ignores the `SELECT ... FOR UPDATE` Optuna relies
  on, so two workers could pop the same trial), so a run is held by one worker; it records the
  run's status, its worker and its training time on the trial and ends it with `Study.tell`
  (its value: seconds);
- while it trains, the worker records Optuna heartbeats for its trial every `heartbeat_s`
  seconds (`RDBStorage.record_heartbeat`). A worker that dies (kill -9, a lost node) stops
  beating; after `grace_s` (default: twice `heartbeat_s`) the next worker that looks
  (`optuna.storages.fail_stale_trials`, called before every claim and while waiting) fails
  its trial, and Optuna's `RetryHeartbeatStaleTrialCallback` (`RetryFailedTrialCallback` in older
  Optuna) enqueues it again: another worker trains that run from scratch, moving the partial
  run folder aside as the grid does for any partial run. A worker stopped by Ctrl-C or SIGTERM
  fails and re-enqueues its trial itself at once;
- a worker whose queue is empty waits (and keeps looking for stale trials) while other workers
  hold runs, and ends when no run is waiting or held, so that every worker ends with the whole
  grid done and prints the same report.

The folder is the workers' once the first one starts: it writes `DIR/.tune_workers.json` (the
marker: the study's name, the coordinator without its password, and the grid), and every worker
after checks it: one given another grid (other configs or seeds, other ext vars apart from the
device, other overrides) is refused with what differs, and a one-machine grid (no
`--coordinator`) on that folder is refused with how to join the workers or take the folder
back (delete the marker once no worker runs). Each worker holds a *shared* flock on
`DIR/.tune_grid.lock` for its life (`lock.ResultsDirLock`), which a one-machine grid's exclusive
one excludes, and an exclusive flock on the run it trains (`lock.RunLock`,
`DIR/<config_stem>/.seed_<k>.lock`, inherited by the training child): a worker whose claimed
run is still held by another process (a worker that only stalled past its grace period, or the
child of a dead one before it dies too) waits for it, then finds the run complete (skipped) or
partial (moved aside and trained), so a run is never trained by two processes at once.

A worker starting on a folder with a study refills it (`_refill`): every run of the grid that is
neither waiting nor held and not complete on disk (a failed run, a run whose folder was deleted)
and every complete run the fingerprint check asks to retrain (`--retrain-changed`) is enqueued
again. Complete runs are skipped as always (`grid._Grid.run`): nothing finished is retrained.
Setting up (study, marker check, refill) and the end of the grid (deleting the shared feature
cache once no run is waiting or held) happen under an exclusive flock on
`DIR/.tune_workers.lock`, so two workers starting together do not enqueue a run twice.

Each worker's GPU is its own: `--ext-var TUNE_CUDA_DEVICE=N` (tune-compare: `--cuda-device N`)
sets the device of the runs it trains; the device is no part of the grid's identity, nor of a
run's fingerprint. Each run's `tune_run.json` records the worker that trained it (`worker`,
`host:pid`).
"""

import contextlib
import fcntl
import inspect
import os
import socket
import sys
import threading
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_tune.experiments.lock import ResultsDirLock, RunLock
from allennlp_tune.experiments.process import SigtermAsInterrupt
from allennlp_tune.host_access import storage_trial_id
from allennlp_tune.rundir import (
    RUN_INFO_NAME,
    config_stem,
    is_complete,
    read_json,
    timestamp,
    write_json,
)

MARKER_NAME = ".tune_workers.json"
SETUP_LOCK_NAME = ".tune_workers.lock"
# The trial's user attr that names its run, `<config_stem>/seed_<k>`.
RUN_ATTR = "run"
# Ext vars that place a worker's runs (its GPU, its cache) rather than define them: workers of one
# grid may differ in them.
PLACEMENT_EXT_VARS = ("TUNE_CUDA_DEVICE", "TUNE_CUDA_DEVICES", "TUNE_FEATURE_CACHE_DIR")
DEFAULT_HEARTBEAT_S = 60
COORDINATOR_FORMS = (
    "an Optuna RDB URL: sqlite:///path/to/workers.db (workers on one machine) or "
    "postgresql://user:password@host:5432/database (workers on many)"
)


@dataclass(frozen=True)
class Coordinator:
    """
    Where the workers of one grid meet: an Optuna RDB storage, and how fast a dead worker's run
    is given to another.

    # Parameters

    url : `str`
        The storage's URL: `sqlite:///path/to/workers.db` (one machine; the file is created)
        or `postgresql://user:password@host:5432/database` (many machines).
    heartbeat_s : `int`, optional (default = `60`)
        Seconds between a worker's heartbeats for the run it trains.
    grace_s : `int`, optional (default = `None`: twice `heartbeat_s`)
        Seconds without a heartbeat after which a run's worker counts as dead and the run is
        given to another worker. Keep it well above `heartbeat_s`: a worker that only stalls
        longer than this has its run trained again elsewhere (its own result is still kept).
    """

    url: str
    heartbeat_s: int = DEFAULT_HEARTBEAT_S
    grace_s: Optional[int] = None

    def checked(self) -> "Coordinator":
        """This coordinator with the installed PostgreSQL driver in its URL, checked; raises a
        `ConfigurationError` naming `--coordinator` for a URL Optuna cannot use."""
        from allennlp_tune.experiments.storage import check_storage, storage_with_driver

        if self.heartbeat_s < 1 or (self.grace_s is not None and self.grace_s < 1):
            raise ConfigurationError("--heartbeat and --grace take whole seconds of at least 1.")
        try:
            import optuna  # noqa: F401
        except ImportError:
            raise ConfigurationError(
                "--coordinator needs Optuna: pip install 'allennlp-tune[search]'."
            ) from None
        url = storage_with_driver(self.url)
        fix = "name the workers' database, or a new file (SQLite creates it)"
        check_storage(url, option="--coordinator", forms=COORDINATOR_FORMS, fix=fix)
        return Coordinator(url, self.heartbeat_s, self.grace_s)

    @property
    def public_url(self) -> str:
        """The URL without its password, for messages and the marker."""
        from allennlp_tune.experiments.storage import public_url

        return public_url(self.url)

    def open_storage(self) -> Tuple[Any, Callable]:
        """
        The RDB storage with heartbeats on, and the callback that re-enqueues a failed trial
        (Optuna's retry callback, unlimited retries), which the storage also runs on the trials
        `fail_stale_trials` fails.
        """
        import optuna
        from sqlalchemy.exc import SQLAlchemyError

        from allennlp_tune.experiments.storage import opening_failed

        retry_class = getattr(optuna.storages, "RetryHeartbeatStaleTrialCallback", None)
        retry_class = retry_class or optuna.storages.RetryFailedTrialCallback
        with _optuna_quiet():
            retry = retry_class(max_retry=None)
        parameters = inspect.signature(optuna.storages.RDBStorage).parameters
        callback_key = (
            "heartbeat_stale_trial_callback"
            if "heartbeat_stale_trial_callback" in parameters
            else "failed_trial_callback"
        )
        engine_kwargs = {}
        if self.url.startswith("sqlite"):
            # Many processes write one file: wait for its lock rather than fail at once.
            engine_kwargs["connect_args"] = {"timeout": 60}
        # Workers starting together may race to create the tables; retry a little.
        for attempt in range(5):
            try:
                with _optuna_quiet():
                    storage = optuna.storages.RDBStorage(
                        self.url,
                        engine_kwargs=engine_kwargs,
                        heartbeat_interval=self.heartbeat_s,
                        grace_period=self.grace_s,
                        **{callback_key: retry},
                    )
                return storage, retry
            except SQLAlchemyError as error:
                if attempt == 4:
                    raise opening_failed("--coordinator", self.url, error) from error
                time.sleep(0.5 + attempt)
        raise AssertionError("unreachable")


def coordinator_of(
    url: Optional[str], heartbeat: Optional[int], grace: Optional[int]
) -> Optional[Coordinator]:
    """The `Coordinator` of --coordinator, --heartbeat and --grace (`None` without a URL);
    raises a `ConfigurationError` for --heartbeat or --grace without --coordinator."""
    if url is None:
        if heartbeat is not None or grace is not None:
            raise ConfigurationError("--heartbeat and --grace need --coordinator.")
        return None
    return Coordinator(url, heartbeat or DEFAULT_HEARTBEAT_S, grace)


@contextlib.contextmanager
def _optuna_quiet() -> Iterator[None]:
    """Without Optuna's warnings that the heartbeat API is experimental and meant for
    `Study.optimize`: workers use it on purpose, with `Study.ask` and `Study.tell`."""
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message="Heartbeat of storage", category=UserWarning)
        yield


def worker_name() -> str:
    """This worker as `tune_run.json` and the trials record it: `host:pid`."""
    return f"{socket.gethostname()}:{os.getpid()}"


def run_key(config: Path, seed: int) -> str:
    return f"{config_stem(config)}/seed_{seed}"


def _defining(ext_vars: Optional[Dict[str, str]]) -> Dict[str, str]:
    return {
        key: value
        for key, value in sorted((ext_vars or {}).items())
        if key not in PLACEMENT_EXT_VARS
    }


def grid_identity(
    jobs: Sequence[Tuple[Path, int]],
    ext_vars: Optional[Dict[str, str]],
    overrides: Optional[str],
    config_ext_vars: Optional[Dict[Path, Dict[str, str]]] = None,
) -> Dict[str, Any]:
    """What workers of one grid must agree on: its runs, its ext vars apart from the device
    (`PLACEMENT_EXT_VARS`), its overrides, and the ext vars of single configs
    (`config_ext_vars`, keyed by config stem; left out when there are none)."""
    identity = {
        "runs": sorted(run_key(config, seed) for config, seed in jobs),
        "ext_vars": _defining(ext_vars),
        "overrides": overrides,
    }
    if config_ext_vars:
        identity["config_ext_vars"] = {
            config_stem(config): _defining(own) for config, own in sorted(config_ext_vars.items())
        }
    return identity


def _differences(theirs: Dict[str, Any], ours: Dict[str, Any]) -> str:
    def some(items: List[str]) -> str:
        shown = ", ".join(items[:4])
        return shown + (f" (+{len(items) - 4} more)" if len(items) > 4 else "")

    parts = []
    only_there = sorted(set(theirs.get("runs", [])) - set(ours["runs"]))
    only_here = sorted(set(ours["runs"]) - set(theirs.get("runs", [])))
    if only_there:
        parts.append(f"runs only in theirs: {some(only_there)}")
    if only_here:
        parts.append(f"runs only in this command: {some(only_here)}")
    their_vars, our_vars = theirs.get("ext_vars", {}), ours["ext_vars"]
    for key in sorted(set(their_vars) | set(our_vars)):
        if their_vars.get(key) != our_vars.get(key):
            there, here = their_vars.get(key, "(unset)"), our_vars.get(key, "(unset)")
            parts.append(f"--ext-var {key}: {there} there, {here} here")
    their_own, our_own = theirs.get("config_ext_vars", {}), ours.get("config_ext_vars", {})
    for stem in sorted(set(their_own) | set(our_own)):
        if their_own.get(stem) != our_own.get(stem):
            there, here = their_own.get(stem, "(none)"), our_own.get(stem, "(none)")
            parts.append(f"ext vars of {stem}: {there} there, {here} here")
    if theirs.get("overrides") != ours["overrides"]:
        parts.append(f"--overrides: {theirs.get('overrides')!r} there, {ours['overrides']!r} here")
    return "; ".join(parts) or "their grid differs"


def refuse_if_workers_own(results_dir: Path) -> None:
    """Refuses a one-machine grid (no coordinator) on a folder that workers share."""
    marker = read_json(results_dir / MARKER_NAME)
    if marker is None:
        return
    coordinator = marker.get("coordinator", "?")
    raise ConfigurationError(
        f"{results_dir} belongs to workers sharing one grid (study {marker.get('study')!r} on "
        f"{coordinator}; {results_dir / MARKER_NAME}). Join them with --coordinator "
        f"{coordinator} (with its password, if it has one), or, once no worker runs there any "
        f"more, delete {results_dir / MARKER_NAME} to train there without workers (finished "
        "runs are kept)."
    )


def check_marker(results_dir: Path, identity: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """
    The folder's marker (`None` when there is none yet); raises a `ConfigurationError` naming
    what differs when the folder's workers share another grid than `identity`.
    """
    marker = results_dir / MARKER_NAME
    if not marker.exists():
        return None
    existing = read_json(marker)
    if not isinstance(existing, dict) or "study" not in existing:
        raise ConfigurationError(
            f"{marker} is not a workers' marker tune-grid can read; delete it once no worker "
            "runs there, then start the workers again."
        )
    if existing.get("grid") != identity:
        differences = _differences(existing.get("grid") or {}, identity)
        raise ConfigurationError(
            f"{results_dir} belongs to workers of another grid (study {existing['study']!r} on "
            f"{existing.get('coordinator')}): {differences}. Give every worker the same configs, "
            "--seeds, --ext-var and --overrides, or use another --results-dir (or, once that "
            f"grid is done and no worker runs, delete {marker})."
        )
    return existing


def _claim_folder(results_dir: Path, identity: Dict[str, Any], coordinator: Coordinator) -> str:
    """
    Writes the marker unless a worker did (atomically: `os.link` of a complete file, which NFS
    does too) and returns its study name; raises a `ConfigurationError` naming what differs
    when the folder's workers share another grid.
    """
    marker = results_dir / MARKER_NAME
    record = {
        "study": f"tune-grid-{uuid.uuid4().hex[:12]}",
        "coordinator": coordinator.public_url,
        "grid": identity,
        "created": timestamp(),
    }
    draft = results_dir / f"{MARKER_NAME}.{uuid.uuid4().hex}"
    write_json(draft, record)
    try:
        os.link(draft, marker)
    except FileExistsError:
        pass
    finally:
        draft.unlink()
    existing = check_marker(results_dir, identity)
    assert existing is not None
    if existing.get("coordinator") != coordinator.public_url:
        print(
            f"tune-grid: {marker} names the coordinator {existing.get('coordinator')}, this "
            f"worker was given {coordinator.public_url}: workers only share runs through one "
            "database (a run two databases hand out is still trained once, by the run's lock).",
            file=sys.stderr,
        )
    return existing["study"]


class _SetupLock:
    """An exclusive, blocking flock on `DIR/.tune_workers.lock`, held for the moments workers
    must not interleave (setting up the study, ending the grid)."""

    def __init__(self, results_dir: Path) -> None:
        self.path = results_dir / SETUP_LOCK_NAME

    def __enter__(self) -> "_SetupLock":
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc_info) -> None:
        os.close(self.fd)


def claim_trial(study: Any, lock_dir: Path) -> Any:
    """
    `study.ask()` under the exclusive flock on `lock_dir/.tune_workers.lock`, which every worker
    of the study shares. Optuna pops an enqueued trial by reading the WAITING trials and then
    setting one RUNNING in a row read `FOR UPDATE`; SQLite ignores `FOR UPDATE`, so two workers
    asking together could both move the same trial to RUNNING and both train it (seen: 3 forked
    processes asking 30 times each from 100 enqueued trials got 3-7 trials twice). PostgreSQL
    locks the row itself; the flock costs it a few milliseconds per claim.
    """
    with _SetupLock(lock_dir), _optuna_quiet():
        return study.ask()


class _Heartbeat:
    """Records Optuna heartbeats for one trial every `interval` seconds in a thread, the first at
    once (a trial without any is never found stale)."""

    def __init__(self, storage: Any, trial_id: int, interval: float) -> None:
        self.storage, self.trial_id, self.interval = storage, trial_id, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name="tune-heartbeat")

    def __enter__(self) -> "_Heartbeat":
        self.storage.record_heartbeat(self.trial_id)
        self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.storage.record_heartbeat(self.trial_id)
            except Exception as error:  # a lost connection: the next beat tries again
                print(f"tune-grid: heartbeat failed ({error})", file=sys.stderr)

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()


def give_back(study: Any, storage: Any, retry: Callable, trial_id: int) -> None:
    """Fails the trial and enqueues it again (Optuna's retry callback)."""
    from optuna.trial import TrialState

    try:
        if storage.set_trial_state_values(trial_id, state=TrialState.FAIL):
            retry(study, storage.get_trial(trial_id))
    except Exception as error:  # already failed as stale, or the database is gone
        print(f"tune-grid: could not give the run back ({error})", file=sys.stderr)


class HeldTrial:
    """
    A claimed trial while this worker trains it: the one protocol of the grid's workers (a
    trial is a run: `Worker`) and of `--budget`'s search workers (a trial is a search trial:
    `budget_workers`). Inside `with`, its heartbeat beats; an exception or an interrupt (Ctrl-C,
    SIGTERM) that ends the block gives it back to the queue at once (`give_back`), not after the
    grace. `tell` ends it; False when it was given to another worker meanwhile (this one stalled
    past the grace period, and another found the trial stale).
    """

    def __init__(self, study: Any, storage: Any, retry: Callable, trial: Any, beat_s: float):
        self.study, self.storage, self.retry, self.trial = study, storage, retry, trial
        self.trial_id = storage_trial_id(trial)  # the heartbeat and the give-back need it
        self._heartbeat = _Heartbeat(storage, self.trial_id, beat_s)

    def __enter__(self) -> "HeldTrial":
        self._heartbeat.__enter__()
        return self

    def __exit__(self, exc_type: Any, *exc_info: Any) -> None:
        self._heartbeat.__exit__()
        if exc_type is not None:
            give_back(self.study, self.storage, self.retry, self.trial_id)

    def tell(self, value: Optional[float] = None, state: Any = None, **user_attrs: Any) -> bool:
        """Records `user_attrs` and ends the trial with `value` (COMPLETE) or `state`."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        try:
            for name, attr in user_attrs.items():
                self.trial.set_user_attr(name, attr)
            if state is None or state == TrialState.COMPLETE:
                self.study.tell(self.trial, value)
            else:
                self.study.tell(self.trial, state=state)
        except (UpdateFinishedTrialError, ValueError):
            # Given to another worker: Optuna says so with a ValueError ("Cannot tell a FAIL
            # trial") when this one failed or pruned. Still running: not that.
            if self.storage.get_trial(self.trial_id).state == TrialState.RUNNING:
                raise
            return False
        return True


def _open_trials(study: Any) -> Tuple[List[Any], List[Any]]:
    """The study's WAITING and RUNNING trials that are runs."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False, states=(TrialState.WAITING, TrialState.RUNNING))
    trials = [trial for trial in trials if RUN_ATTR in trial.user_attrs]
    waiting = [trial for trial in trials if trial.state == TrialState.WAITING]
    running = [trial for trial in trials if trial.state == TrialState.RUNNING]
    return waiting, running


def _refill(
    study: Any, jobs: Sequence[Tuple[Path, int]], results_dir: Path, retrain: Set[Path]
) -> int:
    """Enqueues every run of `jobs` (in the grid's order) that is neither waiting nor held and
    either not complete on disk or to be retrained; returns how many."""
    waiting, running = _open_trials(study)
    open_runs = {trial.user_attrs[RUN_ATTR] for trial in waiting + running}
    added = 0
    for config, seed in jobs:
        key = run_key(config, seed)
        run_dir = results_dir / key
        if key in open_runs or (is_complete(run_dir) and run_dir not in retrain):
            continue
        study.enqueue_trial({}, user_attrs={RUN_ATTR: key})
        added += 1
    return added


def _done_runs(study: Any) -> int:
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    return len({trial.user_attrs.get(RUN_ATTR) for trial in trials} - {None})


@dataclass
class Worker:
    """
    One worker of a shared grid: claims runs from the study and trains each with the grid's
    `train(config, seed, bar, lock_fd)` (`grid._Grid.run`) under the run's `RunLock`.

    # Parameters

    coordinator : `Coordinator`
    results_dir : `Path`
    jobs : `Sequence[Tuple[Path, int]]`
        The grid's runs, (config, seed), in the order they are enqueued.
    identity : `Dict[str, Any]`
        The grid as workers must agree on it (`grid_identity`).
    train : `Callable`
        Trains one run: `train(config, seed, bar, lock_fd)`.
    set_retrain : `Callable`
        `set_retrain(runs)`: the complete runs the next `train` is to move aside and train again
        (the grid's `retrain`), set before each run.
    changed : `Callable`, optional
        `changed(config, seed) -> bool`: whether a complete run differs from what this command
        trains (checked when the run is claimed; `None`: never retrain a complete run).
    retrain : `Set[Path]`
        Complete runs that differ now, to enqueue again when the worker starts.
    name : `str`
        This worker's name, in the trials and in `tune_run.json`.
    poll_s : `float`, optional (default = `None`: `heartbeat_s`, at most 5)
        Seconds between looks at the study while other workers hold every open run.
    tool : `str`, optional (default = `"tune-grid"`)
        The command, in messages.
    """

    coordinator: Coordinator
    results_dir: Path
    jobs: Sequence[Tuple[Path, int]]
    identity: Dict[str, Any]
    train: Callable[[Path, int, Any, int], None]
    set_retrain: Callable[[Set[Path]], None]
    changed: Optional[Callable[[Path, int], bool]] = None
    retrain: Set[Path] = field(default_factory=set)
    name: str = field(default_factory=worker_name)
    poll_s: Optional[float] = None
    tool: str = "tune-grid"

    def run(self, bar: Any, cleanup: Callable[[], None]) -> None:
        """Takes the folder, sets up the study, trains runs until none is waiting or held, then
        (the last worker out) runs `cleanup`."""
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        by_key = {run_key(config, seed): (config, seed) for config, seed in self.jobs}
        with ResultsDirLock(self.results_dir, shared=True):
            study_name = _claim_folder(self.results_dir, self.identity, self.coordinator)
            storage, retry = self.coordinator.open_storage()
            with _SetupLock(self.results_dir):
                study = optuna.create_study(
                    storage=storage, study_name=study_name, load_if_exists=True
                )
                if study.user_attrs.get("grid") is None:
                    study.set_user_attr("grid", self.identity)
                elif study.user_attrs["grid"] != self.identity:  # a marker copied elsewhere
                    differences = _differences(study.user_attrs["grid"], self.identity)
                    raise ConfigurationError(
                        f"Study {study_name!r} on {self.coordinator.public_url} holds another "
                        f"grid than this command ({differences}); {self.results_dir / MARKER_NAME}"
                        " names it. Delete that file (no worker of it runs here) to start a "
                        "study of its own."
                    )
                _refill(study, self.jobs, self.results_dir, self.retrain)
            with SigtermAsInterrupt():
                for trial in self._claims(study, bar):
                    self._train(study, storage, retry, trial, by_key, bar)
            with _SetupLock(self.results_dir):
                waiting, running = _open_trials(study)
                if not waiting and not running:
                    cleanup()

    def _claims(self, study: Any, bar: Any) -> Iterator[Any]:
        """Claimed trials (`Study.ask()`), until no run is waiting or held by anyone."""
        from optuna.storages import fail_stale_trials
        from optuna.trial import TrialState

        poll = self.poll_s or min(5.0, float(self.coordinator.heartbeat_s))
        grace = self.coordinator.grace_s or 2 * self.coordinator.heartbeat_s
        said_waiting = False
        while True:
            with _optuna_quiet():
                fail_stale_trials(study)
            waiting, running = _open_trials(study)
            bar.n = _done_runs(study)
            if not waiting:
                if not running:
                    bar.refresh()
                    return
                if not said_waiting:
                    bar.write(
                        f"{self.tool}: no run left to take; waiting for the {len(running)} run(s) "
                        f"other workers hold (a dead worker's run comes back after {grace} s "
                        "without its heartbeat, and is trained here)"
                    )
                    said_waiting = True
                bar.set_postfix_str(f"waiting: other workers hold {len(running)} run(s)")
                time.sleep(poll)
                continue
            said_waiting = False
            trial = claim_trial(study, self.results_dir)
            if RUN_ATTR not in trial.user_attrs:
                # No run was left to pop (another worker took the last): ask() made an empty
                # trial, ended at once.
                study.tell(trial, state=TrialState.PRUNED)
                continue
            yield trial

    def _wait_for(self, run_lock: RunLock, key: str, bar: Any) -> None:
        """
        Waits, heartbeats going, until the process that holds the run's lock lets go: a worker
        that stalled past its grace period (its run is then complete, and skipped) or the
        training child of a dead worker, which dies with it (`process.train_subprocess`).
        """
        bar.write(
            f"{self.tool}: {key} is still held by another process ({run_lock.holder_text()}); "
            f"waiting for it to end ({run_lock.path})"
        )
        poll = self.poll_s or min(5.0, float(self.coordinator.heartbeat_s))
        while not run_lock.try_acquire():
            time.sleep(poll)

    def _train(
        self, study: Any, storage: Any, retry: Callable, trial: Any, by_key: Dict, bar: Any
    ) -> None:
        key = trial.user_attrs[RUN_ATTR]
        config, seed = by_key[key]
        run_dir = self.results_dir / key
        trial.set_user_attr("worker", self.name)
        started = time.monotonic()
        with HeldTrial(study, storage, retry, trial, self.coordinator.heartbeat_s) as held:
            with RunLock(run_dir, self.name) as run_lock:
                if not run_lock.acquired:
                    self._wait_for(run_lock, key, bar)
                if self.changed is not None:
                    changed = is_complete(run_dir) and self.changed(config, seed)
                    self.set_retrain({run_dir} if changed else set())
                self.train(config, seed, bar, run_lock.fd)
        status = (read_json(run_dir / RUN_INFO_NAME) or {}).get("status", "unknown")
        if not held.tell(round(time.monotonic() - started, 3), status=status):
            # The run folder is what counts (the other worker found it complete, or held off).
            bar.write(f"{self.tool}: {key} was given to another worker while this one trained")
