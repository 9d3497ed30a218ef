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

Resuming, after a crash, a kill or Ctrl-C:

- a *complete* run (`model.tar.gz`, `metrics.json` and `tune_run.json` with status "ok") is
  skipped;
- a *partial* run directory (no `tune_run.json`: the run that was in progress) is renamed to
  `seed_<k>.incomplete-<timestamp>` together with the log of that attempt, and the run starts
  again. Nothing is deleted and `--force` is never used, so a directory a user made by hand is
  never lost; the report ignores these renamed attempts;
- a *failed* run is renamed to `seed_<k>.failed-<timestamp>` and retried, unless `keep_failed`.

The runs of a grid share one cache of frozen-encoder features, `DIR/.feature_cache`
(`TUNE_FEATURE_CACHE_DIR` in their environment; entries are keyed by encoder weights, layers and
input ids, so sharing is safe): the fe and sf runs of one task and encoder compute the features
once instead of once per seed. A `TUNE_FEATURE_CACHE_DIR` of your own (environment or
`--ext-var`) wins. The cache is deleted when the grid has gone through every run, unless
`keep_checkpoints`; an interrupted grid keeps it for the rerun.

A run that succeeded is tidied (`tidy.tidy_run_dir`, unless `keep_checkpoints`): its epoch
checkpoints, `best.th` and its own `feature_cache/` are deleted, as `model.tar.gz` has the
weights; `tune_run.json` lists what went and how many MB it freed. A failed run keeps everything.

A run that fails (non-zero exit, or no archive or metrics) is recorded as failed in its
`tune_run.json` with its exit code, the last line of its log and the log's path
(`tune_train.log` in the run directory), and the grid goes on. While a run is in progress its
log is `DIR/<config_stem>/seed_<k>.log`.

One writer per results directory. tune-grid holds an exclusive `flock` on `DIR/.tune_grid.lock`
while it runs, and every training child inherits that lock, so it is free only once both are
gone. A second tune-grid on the same directory, or a rerun while the child of a killed grid
still trains, is refused with the pids holding the lock (nothing is moved aside). Ctrl-C and
SIGTERM stop the training child too; on Linux the child also gets SIGKILL when tune-grid dies
any other way (`kill -9`, a crash), so no orphan keeps writing checkpoints by path into the
directory the next grid trains in. And since every grid run starts fresh, its trainer refuses
to restore any checkpoint it finds when it starts (it has written none yet: a checkpoint there
came from another process; `refuse_foreign_checkpoints`, which the plugin applies in a
process started with `TUNE_GRID_FRESH_RUN=1`).
"""

import ctypes
import fcntl
import functools
import glob
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence

from allennlp.common.checks import ConfigurationError

from allennlp_tune.results.runs import (
    ARCHIVE_NAME,
    CONFIG_NAME,
    FAILED,
    METRICS_NAME,
    OK,
    RUN_INFO_NAME,
    RUN_LOG_NAME,
    config_stem,
    is_complete,
    metric_of_config,
    move_aside,
    parse_run_name,
    read_json,
    timestamp,
    write_json,
)
from allennlp_tune.results.tidy import tidy_run_dir

logger = logging.getLogger(__name__)

SEED_EXT_VAR = "TUNE_SEED"
SHARED_CACHE_NAME = ".feature_cache"
LOCK_NAME = ".tune_grid.lock"
# The inherited descriptor of the lock, in the environment of a training child (as systemd's
# LISTEN_FDS names passed sockets): `train_subprocess` keeps it open in the child.
LOCK_FD_ENV = "TUNE_GRID_LOCK_FD"
# Set for a grid's training child: the plugin then makes its trainer, in every process of the
# run, refuse checkpoints it did not write (`refuse_foreign_checkpoints`).
FRESH_RUN_ENV = "TUNE_GRID_FRESH_RUN"
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>

# runner(command, environment, log_path) -> exit code. Tests replace `train_subprocess`.
Runner = Callable[[List[str], Dict[str, str], Path], int]


def expand_configs(patterns: Iterable[str]) -> List[Path]:
    """Config paths from paths and globs, in the order given, each once; stems must be unique."""
    configs: List[Path] = []
    for pattern in patterns:
        if glob.has_magic(pattern):
            matches = sorted(Path(match) for match in glob.glob(pattern, recursive=True))
            if not matches:
                raise ConfigurationError(f"The config pattern {pattern!r} matches no file.")
        else:
            matches = [Path(pattern)]
            if not matches[0].is_file():
                raise ConfigurationError(f"Config file {pattern!r} does not exist.")
        for match in matches:
            if match.resolve() not in {config.resolve() for config in configs}:
                configs.append(match)
    by_stem: Dict[str, Path] = {}
    for config in configs:
        stem = config_stem(config)
        if stem in by_stem:
            raise ConfigurationError(
                f"{by_stem[stem]} and {config} would both write to <results-dir>/{stem}: "
                "run them into different results directories."
            )
        by_stem[stem] = config
    return configs


def parse_ext_vars(assignments: Iterable[str]) -> Dict[str, str]:
    """`["TUNE_LR=1e-3"]` -> `{"TUNE_LR": "1e-3"}`, with an error naming a malformed one."""
    ext_vars = {}
    for assignment in assignments:
        key, equals, value = assignment.partition("=")
        if not equals or not key.isidentifier():
            raise ConfigurationError(
                f"--ext-var {assignment!r}: expected KEY=VALUE with KEY a variable name, "
                "e.g. --ext-var TUNE_LR=2e-5"
            )
        if key == SEED_EXT_VAR:
            raise ConfigurationError(f"--ext-var {key}: the seed is set by --seeds (--seed).")
        ext_vars[key] = value
    return ext_vars


def train_command(config: Path, run_dir: Path, overrides: Optional[str] = None) -> List[str]:
    command = [sys.executable, "-m", "allennlp", "train", str(config.resolve())]
    command += ["-s", str(run_dir), "--include-package", "allennlp_tune"]
    command += ["--file-friendly-logging"]
    if overrides:
        command += ["--overrides", overrides]
    return command


def _stop(process: subprocess.Popen) -> None:
    # Interrupt the child as Ctrl-C would (after a Ctrl-C it has had SIGINT already; after a
    # SIGTERM to tune-grid it has not), then ask it to terminate, then insist.
    interrupt = functools.partial(process.send_signal, signal.SIGINT)
    for send, wait in ((interrupt, 10.0), (process.terminate, 10.0), (process.kill, None)):
        if process.poll() is not None:
            return
        send()
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _refuse_foreign_checkpoint(checkpointer) -> None:
    """
    Replaces `Checkpointer.load_checkpoint` in a grid's training run. A grid run starts fresh
    (no `--recover`), and the trainer loads a checkpoint only when it starts, before it has
    saved one: so any checkpoint found then was written by another process (the orphan of a
    killed grid writing by path into this directory, say), and resuming from it would silently
    mix two trainings.
    """
    latest = checkpointer.find_latest_checkpoint()
    if latest is not None:
        raise ConfigurationError(
            f"{latest[0]} is in the serialization directory of a fresh tune-grid run before the "
            "run saved any checkpoint: another process is writing into this directory. This run "
            "does not resume from a checkpoint it did not write; stop that process and run "
            "tune-grid again."
        )
    return None


def refuse_foreign_checkpoints(environ: Mapping[str, str] = os.environ) -> None:
    """
    Makes every trainer of this process refuse checkpoints it did not write when `environ` says
    this is a grid's training run (`FRESH_RUN_ENV`). Called when the plugin is imported, so it
    holds in each process of a distributed run too (their workers import the plugin afresh).
    """
    if environ.get(FRESH_RUN_ENV) == "1":
        from allennlp.training.checkpointer import Checkpointer

        Checkpointer.load_checkpoint = _refuse_foreign_checkpoint


def _die_with_this_process() -> Optional[Callable[[], None]]:
    """
    A `preexec_fn` that makes the child get SIGKILL when this process dies, however it dies
    (Linux `prctl(PR_SET_PDEATHSIG)`; it survives `exec`). `None` where there is no prctl.
    A process group would not help: `kill -9` of tune-grid signals tune-grid alone.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        # Resolved here, not in the child: between fork and exec only the call itself runs.
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent, kill = os.getpid(), int(signal.SIGKILL)

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: no signal will come
            os._exit(1)

    return preexec


def train_subprocess(command: List[str], environment: Dict[str, str], log_path: Path) -> int:
    """
    Runs one training with stdout and stderr into `log_path`; stops the child on interrupt. The
    child dies with this process (Linux) and keeps the grid's lock (`LOCK_FD_ENV`) for its life.
    """
    lock_fd = environment.get(LOCK_FD_ENV)
    pass_fds = (int(lock_fd),) if lock_fd else ()
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            command,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            pass_fds=pass_fds,
            preexec_fn=_die_with_this_process(),
        )
        if lock_fd:
            _record_lock_holder(int(lock_fd), child_pid=process.pid, child_log=str(log_path))
        try:
            return process.wait()
        except BaseException:
            _stop(process)
            raise


# The line of a traceback that says what went wrong: `ConfigurationError: ...`, `RuntimeError:
# RUNTIME ERROR: ...` (a Jsonnet error, whose message ends in Jsonnet's own stack lines).
_ERROR_LINE = re.compile(r"^([\w.]*(Error|Exception|Interrupt)|RUNTIME ERROR)\b:")


def _last_line(log_path: Path) -> str:
    """The log's last error line, else its last line (for a failed run's `error`)."""
    try:
        with open(log_path, encoding="utf-8", errors="replace") as log:
            lines = [line.strip() for line in log.readlines()[-200:] if line.strip()]
    except OSError:
        return ""
    errors = [line for line in lines if _ERROR_LINE.match(line)]
    return (errors or lines or [""])[-1][:300]


def _is_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie has exited and only waits to be reaped; but a killed process's main thread turns
    # zombie before its other threads (which hold its files) are gone.
    tasks = Path(f"/proc/{pid}/task")
    if not tasks.is_dir():
        return True
    for task in tasks.iterdir():
        try:
            if (task / "stat").read_text().rpartition(")")[2].split()[0] != "Z":
                return True
        except (OSError, IndexError):
            continue
    return False


def _read_lock_holder(fd: int) -> Dict[str, object]:
    try:
        loaded = json.loads(os.pread(fd, 1 << 16, 0).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _record_lock_holder(fd: int, **holder: object) -> None:
    """Who holds the lock, for the message of a refused grid (the flock itself is the lock)."""
    text = json.dumps({**_read_lock_holder(fd), **holder}, sort_keys=True).encode("utf-8")
    os.ftruncate(fd, 0)
    os.pwrite(fd, text + b"\n", 0)


class _ResultsDirLock:
    """
    An exclusive, non-blocking `flock` on `RESULTS_DIR/.tune_grid.lock`. The training children
    inherit the locked descriptor, and a flock lasts until every process holding it has closed
    it or died: so it also stays taken while an orphaned child trains on, and needs no stale-pid
    guessing once everyone is gone.
    """

    def __init__(self, results_dir: Path) -> None:
        self.path = results_dir / LOCK_NAME
        self.fd: Optional[int] = None

    def __enter__(self) -> "_ResultsDirLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_lock_holder(fd)
            os.close(fd)
            raise ConfigurationError(self._refusal(holder)) from None
        self.fd = fd
        _record_lock_holder(fd, tune_grid_pid=os.getpid(), started=timestamp())
        return self

    def __exit__(self, *exc_info) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _refusal(self, holder: Dict[str, object]) -> str:
        who = []
        for key, label in (("tune_grid_pid", "tune-grid"), ("child_pid", "its training child")):
            if key in holder:
                state = "running" if _is_alive(holder[key]) else "exited"
                who.append(f"{label} pid {holder[key]} ({state})")
        if holder.get("child_log"):
            who.append(f"last log {holder['child_log']}")
        held_by = f" ({', '.join(who)})" if who else ""
        return (
            f"{self.path.parent} is in use: {self.path} is locked by a live process{held_by}. "
            "Another tune-grid runs there, or the training child of a killed one still writes "
            f"into it (`fuser -v {self.path}` lists every process holding it). Wait for it "
            "to finish or stop it (kill PID), then run this command again."
        )


def epoch_status(run_dir: Path) -> Optional[str]:
    """
    `epoch 2/3, dev accuracy 0.8125`: the last epoch a training run in `run_dir` finished (its
    `metrics_epoch_<n>.json`) and that epoch's primary dev metric (the trainer's
    `validation_metric` in `config.json`); `None` before the first epoch ends.
    """
    epochs = sorted(
        int(path.stem.rpartition("_")[2])
        for path in run_dir.glob("metrics_epoch_*.json")
        if path.stem.rpartition("_")[2].isdigit()
    )
    if not epochs:
        return None
    config = read_json(run_dir / CONFIG_NAME) or {}
    trainer = config.get("trainer") if isinstance(config.get("trainer"), dict) else {}
    total = trainer.get("num_epochs")
    text = f"epoch {epochs[-1] + 1}" + (f"/{total}" if isinstance(total, int) else "")
    try:
        metric, _ = metric_of_config(config)
    except ConfigurationError:
        return text
    value = (read_json(run_dir / f"metrics_epoch_{epochs[-1]}.json") or {}).get(
        f"validation_{metric}"
    )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text += f", dev {metric} {value:.4f}"
    return text


class _EpochProgress:
    """
    While a run trains, a thread shows `epoch_status` of its directory after the bar's label
    (polled every `interval` seconds; AllenNLP writes a metrics file at the end of each epoch).
    """

    def __init__(
        self, bar, label: str, run_dir: Path, enabled: bool = True, interval: float = 2.0
    ) -> None:
        self.bar, self.label, self.run_dir = bar, label, run_dir
        self.interval = interval
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True) if enabled else None

    def _poll(self) -> None:
        shown = None
        while not self.stopped.wait(self.interval):
            status = epoch_status(self.run_dir)
            if status is not None and status != shown:
                self.bar.set_postfix_str(f"{self.label}, {status}")
                shown = status

    def __enter__(self) -> "_EpochProgress":
        if self.thread is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stopped.set()
        if self.thread is not None:
            self.thread.join()


@dataclass
class GridResult:
    """What a grid did: run directories it trained, skipped (complete) and that failed."""

    trained: List[Path] = field(default_factory=list)
    skipped: List[Path] = field(default_factory=list)
    failed: List[Path] = field(default_factory=list)
    moved_aside: List[Path] = field(default_factory=list)


class _SigtermAsInterrupt:
    """Makes `kill <pid>` (SIGTERM) stop a grid like Ctrl-C: the child is stopped too."""

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._raise)
        return self

    @staticmethod
    def _raise(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    def __exit__(self, *exc_info):
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)


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
) -> GridResult:
    """
    Trains every config with every seed into `results_dir` (see the module docstring for the
    layout and for what is skipped, moved aside and rerun). `KeyboardInterrupt` propagates after
    the run in progress is stopped; that run is the only one lost. `tool` names the command
    that runs the grid in its progress bar, its messages and each run's `tune_run.json`.
    """
    from tqdm import tqdm

    from allennlp_tune.modules.token_embedders.feature_cache import (
        CACHE_DIR_ENV,
        user_cache_directory,
    )

    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    result = GridResult()
    shared_cache = None
    if user_cache_directory(ext_vars) is None:
        shared_cache = (results_dir / SHARED_CACHE_NAME).resolve()
    jobs = [(config, seed) for seed in seeds for config in configs]
    # Taken before anything is moved aside, held until the shared cache is gone: the run of a
    # live writer is left alone.
    with _ResultsDirLock(results_dir) as lock:
        bar = tqdm(total=len(jobs), unit="run", desc=tool, disable=not progress, file=sys.stderr)
        with bar, _SigtermAsInterrupt():
            for config, seed in jobs:
                stem = config_stem(config)
                run_dir = results_dir / stem / f"seed_{seed}"
                pending_log = run_dir.with_name(f"seed_{seed}.log")
                bar.set_postfix_str(f"{stem} seed {seed}")
                if is_complete(run_dir):
                    result.skipped.append(run_dir)
                    bar.update()
                    continue
                if run_dir.exists():
                    previous = read_json(run_dir / RUN_INFO_NAME) or {}
                    if previous.get("status") == FAILED and keep_failed:
                        result.skipped.append(run_dir)
                        result.failed.append(run_dir)
                        bar.update()
                        continue
                    aside = move_aside(
                        run_dir, "failed" if previous.get("status") == FAILED else "incomplete"
                    )
                    if pending_log.exists() and not (aside / RUN_LOG_NAME).exists():
                        os.replace(pending_log, aside / RUN_LOG_NAME)
                    result.moved_aside.append(aside)
                    bar.write(f"{tool}: moved the unfinished {run_dir} aside to {aside.name}")
                run_dir.parent.mkdir(parents=True, exist_ok=True)

                environment = dict(os.environ)
                run_ext_vars = {**(ext_vars or {}), SEED_EXT_VAR: str(seed)}
                environment.update(run_ext_vars)
                if shared_cache is not None:
                    environment[CACHE_DIR_ENV] = str(shared_cache)
                environment[LOCK_FD_ENV] = str(lock.fd)
                environment[FRESH_RUN_ENV] = "1"
                command = train_command(config, run_dir, overrides)
                name, _ = parse_run_name(stem)
                info = {
                    "tool": tool,
                    "config": str(config.resolve()),
                    "config_stem": stem,
                    "task": name.task if name else None,
                    "encoder": name.encoder if name else None,
                    "mode": name.mode if name else None,
                    "variant": name.variant if name else None,
                    "seed": seed,
                    "ext_vars": run_ext_vars,
                    "overrides": overrides,
                    "command": command,
                    "started": timestamp(),
                }
                started = time.monotonic()
                # KeyboardInterrupt leaves run_dir without tune_run.json: partial, rerun next time.
                with _EpochProgress(bar, f"{stem} seed {seed}", run_dir, enabled=progress):
                    returncode = runner(command, environment, pending_log)

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
                if info["status"] == FAILED:
                    reason = (
                        f"exit code {returncode}"
                        if returncode != 0
                        else "exit code 0 but no model.tar.gz or metrics.json"
                    )
                    last = _last_line(run_dir / RUN_LOG_NAME)
                    info["error"] = f"{reason}: {last}" if last else reason
                    result.failed.append(run_dir)
                    bar.write(
                        f"{tool}: {stem} seed {seed} failed ({info['error']}); "
                        f"log: {run_dir / RUN_LOG_NAME}"
                    )
                else:
                    result.trained.append(run_dir)
                    if not keep_checkpoints:
                        info["tidied"] = tidy_run_dir(run_dir)
                write_json(run_dir / RUN_INFO_NAME, info)
                bar.update()
        if shared_cache is not None and shared_cache.is_dir() and not keep_checkpoints:
            shutil.rmtree(shared_cache)
    return result
