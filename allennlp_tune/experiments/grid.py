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
`plan_only`: print the plan and train nothing).

Resuming, after a crash, a kill or Ctrl-C:

- a *complete* run (`metrics.json` and `tune_run.json` with status "ok") is skipped, also
  when its `model.tar.gz` was deleted to free disk (the grid says so once per run: delete the
  run's folder to train it again);
- a *partial* run directory (no `tune_run.json`: the run that was in progress) is renamed to
  `seed_<k>.incomplete-<timestamp>` together with the log of that attempt, and the run starts
  again. Nothing is deleted and `--force` is never used, so a directory a user made by hand is
  never lost; the report ignores these renamed attempts;
- a *failed* run is renamed to `seed_<k>.failed-<timestamp>` and retried, unless `keep_failed`.

An attempt moved aside keeps its logs and loses its checkpoints, `best.th` and own feature
cache (`tidy.tidy_run_dir`), unless `keep_checkpoints`: an interrupted fine-tuning run otherwise
leaves hundreds of MB behind that nothing ever reads.

A complete run is reused only while it is the run the command would train now
(`allennlp_tune.experiments.fingerprint`): its `config.json` equals the config rendered now (every
ext var and override), every local file or folder the config names (data, label files, the
encoder) has the content it had, and the packages that compute the result have the versions
they had. Before anything is trained, a complete run that differs refuses the whole grid with
what changed, per run (`TUNE_LR (unset) -> 1e-3`, `dev.csv changed`), unless `retrain_changed`:
then those runs are moved aside to `seed_<k>.changed-<timestamp>` (all their files kept) and
trained again. Every run records its fingerprint in `tune_run.json` (`fingerprint`).

The runs of a grid share one cache of frozen-encoder features, `DIR/.feature_cache`
(`TUNE_FEATURE_CACHE_DIR` in their environment; entries are keyed by encoder weights, layers and
input ids, so sharing is safe): the fe and sf runs of one task and encoder compute the features
once instead of once per seed. A `TUNE_FEATURE_CACHE_DIR` of your own (environment or
`--ext-var`) wins. The cache is deleted when the grid has gone through every run, unless
`keep_checkpoints`; an interrupted grid keeps it for the rerun.

A run that succeeded leaves what it cost and what it predicted: tune-grid adds `archive_bytes`
(the size of `model.tar.gz`) to its `cost.json` (which the `tune_cost` trainer callback writes;
created if the config has no such callback) and writes `dev_predictions.jsonl`, the archived
(best) model's predictions on the validation data, one `{"index": i, "gold": G, "prediction":
P}` line per example in input order (`write_dev_predictions`; in a subprocess, log
`tune_predict.log`). A prediction that fails is noted in `tune_run.json` (`predictions_error`)
and on the terminal; the run still counts as complete.

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

import contextlib
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
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

from allennlp.common.checks import ConfigurationError

from allennlp_tune.experiments.fingerprint import (
    FINGERPRINT_KEY,
    differences,
    fingerprint,
    predates_fingerprints,
)
from allennlp_tune.rundir import (
    ARCHIVE_NAME,
    CONFIG_NAME,
    COST_NAME,
    FAILED,
    METRICS_NAME,
    OK,
    PREDICTIONS_NAME,
    RUN_INFO_NAME,
    RUN_LOG_NAME,
    SEED_EXT_VAR,
    config_stem,
    is_complete,
    metric_of_config,
    move_aside,
    parse_run_name,
    read_json,
    timestamp,
    write_json,
)
from allennlp_tune.rundir.tidy import tidy_run_dir
from allennlp_tune.training.fresh_run import FRESH_RUN_ENV

logger = logging.getLogger(__name__)

SHARED_CACHE_NAME = ".feature_cache"
LOCK_NAME = ".tune_grid.lock"
# The inherited descriptor of the lock, in the environment of a training child (as systemd's
# LISTEN_FDS names passed sockets): `train_subprocess` keeps it open in the child.
LOCK_FD_ENV = "TUNE_GRID_LOCK_FD"
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>

PREDICT_LOG_NAME = "tune_predict.log"
DEFAULT_PREDICTION_BATCH_SIZE = 32

# runner(command, environment, log_path) -> exit code. Tests replace `train_subprocess`.
Runner = Callable[[List[str], Dict[str, str], Path], int]
# predictor(run_dir, environment, log_path) -> None, or what went wrong.
Predictor = Callable[[Path, Dict[str, str], Path], Optional[str]]


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
        # SIGINT is how the child is stopped cleanly (`_stop`). A tune-grid started in the
        # background of a non-interactive shell (`nohup ... &`, CI scripts) inherits SIGINT
        # ignored, and an ignored signal stays ignored across exec: the child would then ignore
        # it too, and be stopped only by SIGTERM 10 s later.
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    return preexec


_TOKENIZERS_PARALLELISM = "TOKENIZERS_PARALLELISM"


@contextlib.contextmanager
def _quiet_tokenizers_fork() -> Iterator[None]:
    """
    Once a fast tokenizer has run in this process (the planner counts wordpieces), `tokenizers`
    prints a four-line "the current process just got forked" warning to this process's stderr
    at every fork, unless TOKENIZERS_PARALLELISM is set. The child here execs at once, so there
    is nothing for the warning to protect: the variable is set for the fork alone. The child's
    own environment is the `env` it is given, so its tokenizers behave as before.
    """
    if _TOKENIZERS_PARALLELISM in os.environ:
        yield
        return
    os.environ[_TOKENIZERS_PARALLELISM] = "true"  # this process's own setting when unset
    try:
        yield
    finally:
        os.environ.pop(_TOKENIZERS_PARALLELISM, None)


def train_subprocess(command: List[str], environment: Dict[str, str], log_path: Path) -> int:
    """
    Runs one training with stdout and stderr into `log_path`; stops the child on interrupt. The
    child dies with this process (Linux) and keeps the grid's lock (`LOCK_FD_ENV`) for its life.
    """
    lock_fd = environment.get(LOCK_FD_ENV)
    pass_fds = (int(lock_fd),) if lock_fd else ()
    with open(log_path, "w", encoding="utf-8") as log:
        with _quiet_tokenizers_fork():
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


# ---- what a finished run leaves besides its score: archive size and dev predictions ---------


def record_archive_size(run_dir: Path) -> Optional[int]:
    """
    Adds `archive_bytes` (the size of `model.tar.gz`) to the run's `cost.json`, creating it
    when the config had no `tune_cost` callback. Returns the size; `None` without an archive.
    """
    archive = Path(run_dir) / ARCHIVE_NAME
    if not archive.is_file():
        return None
    size = archive.stat().st_size
    cost = read_json(Path(run_dir) / COST_NAME) or {}
    cost["archive_bytes"] = size
    write_json(Path(run_dir) / COST_NAME, cost)
    return size


def prediction_device(config: Mapping[str, Any]) -> int:
    """The GPU a run trained on (`trainer.cuda_device`, else the first of `distributed`'s
    `cuda_devices`) when this machine has CUDA, else -1 (CPU)."""
    trainer = config.get("trainer") if isinstance(config.get("trainer"), dict) else {}
    device = trainer.get("cuda_device")
    distributed = config.get("distributed")
    if isinstance(distributed, dict) and distributed.get("cuda_devices"):
        device = distributed["cuda_devices"][0]
    if not isinstance(device, int) or isinstance(device, bool) or device < 0:
        return -1
    import torch

    return device if torch.cuda.is_available() else -1


def _batch_size(config: Mapping[str, Any]) -> int:
    for key in ("validation_data_loader", "data_loader"):
        loader = config.get(key)
        if not isinstance(loader, dict):
            continue
        sampler = loader.get("batch_sampler")
        for where in (loader, sampler if isinstance(sampler, dict) else {}):
            size = where.get("batch_size")
            if isinstance(size, int) and not isinstance(size, bool) and size > 0:
                return size
    return DEFAULT_PREDICTION_BATCH_SIZE


def _gold(instance) -> Any:
    """The instance's gold answer: tag strings, a label string, a float score; `None` if none."""
    from allennlp.data.fields import LabelField, SequenceLabelField, TensorField

    tags = instance.fields.get("tags")
    if isinstance(tags, SequenceLabelField):
        return [str(tag) for tag in tags.labels]
    label = instance.fields.get("label")
    if isinstance(label, LabelField):
        return str(label.label)
    if isinstance(label, TensorField):
        return float(label.tensor.reshape(-1)[0])
    return None


# Where the shipped models (and AllenNLP's) put a regression score.
SCORE_KEYS = ("score", "predicted_score", "prediction")


def _prediction(output: Mapping[str, Any], gold: Any) -> Any:
    """The model's answer in the form of `gold`: tags, label or score (from its outputs)."""
    if "tags" in output and (gold is None or isinstance(gold, list)):
        return [str(tag) for tag in output["tags"]]
    if "label" in output and not isinstance(gold, float):
        return str(output["label"])
    for key in SCORE_KEYS:
        if key in output:
            value = output[key]
            return float(value[0] if isinstance(value, list) else value)
    raise ConfigurationError(
        f"The model's outputs ({', '.join(sorted(output))}) have no 'tags', 'label' or "
        f"{', '.join(repr(key) for key in SCORE_KEYS)} to write as its prediction."
    )


def write_dev_predictions(
    run_dir: Path, cuda_device: Optional[int] = None, batch_size: Optional[int] = None
) -> int:
    """
    Writes `dev_predictions.jsonl` into `run_dir`: the archived (best) model's predictions on
    the run's validation data, one line per instance the validation reader yields, in its
    order: `{"index": i, "gold": G, "prediction": P}`, with G and P label strings
    (classification), floats (regression) or lists of tag strings, one per word in the task's
    coding scheme (tagging). Uses AllenNLP's own machinery: `load_archive`, the archive's
    validation reader and the model's default predictor (`forward_on_instances` and
    `make_output_human_readable`). Returns the number of lines; written atomically.
    `cuda_device`: `None` for the device the run trained on (`prediction_device`).
    """
    from allennlp.models.archival import load_archive
    from allennlp.predictors import Predictor

    from allennlp_tune.modules.feature_cache import FeatureCache

    run_dir = Path(run_dir)
    archive_path = run_dir / ARCHIVE_NAME
    if not tarfile.is_tarfile(archive_path):
        raise ConfigurationError(f"{archive_path} is not a model archive")
    config = read_json(run_dir / CONFIG_NAME) or {}
    if cuda_device is None:
        cuda_device = prediction_device(config)
    archive = load_archive(str(archive_path), cuda_device=cuda_device)
    # The pass reads the feature cache but does not grow it. An archive whose encoder was
    # fine-tuned (sf, or any schedule that starts frozen) loads in its frozen first stage, so
    # the cache applies, keyed by the tuned weights: writing would store the whole dev set once
    # more per run, for features no other run can read.
    for module in archive.model.modules():
        cache = getattr(module, "feature_cache", None)
        if isinstance(cache, FeatureCache):
            cache.read_only("dev predictions of a finished run")
    data_path = archive.config.get("validation_data_path", None)
    if not data_path:
        raise ConfigurationError(f"{archive_path}: its config has no validation_data_path")
    try:
        predictor = Predictor.from_archive(archive)
    except Exception as error:  # e.g. a default predictor that needs a spaCy model
        logger.info("Predicting with the base Predictor: %s", error)
        archive.model.eval()
        predictor = Predictor(archive.model, archive.validation_dataset_reader)
    reader = archive.validation_dataset_reader
    size = batch_size or _batch_size(config)
    target = run_dir / PREDICTIONS_NAME
    temporary = target.with_name(target.name + ".tmp")
    index = 0
    with open(temporary, "w", encoding="utf-8") as out:
        batch: List[Any] = []

        def flush() -> None:
            nonlocal index
            golds = [_gold(instance) for instance in batch]
            outputs = predictor.predict_batch_instance(batch)
            for gold, output in zip(golds, outputs):
                line = {"index": index, "gold": gold, "prediction": _prediction(output, gold)}
                out.write(json.dumps(line) + "\n")
                index += 1
            batch.clear()

        for instance in reader.read(data_path):
            batch.append(instance)
            if len(batch) == size:
                flush()
        if batch:
            flush()
    os.replace(temporary, target)
    return index


_PREDICT_SCRIPT = (
    "import sys, allennlp_tune; from allennlp_tune.experiments.grid import write_dev_predictions; "
    "print(write_dev_predictions(sys.argv[1]), 'dev predictions')"
)


def predict_command(run_dir: Path) -> List[str]:
    return [sys.executable, "-c", _PREDICT_SCRIPT, str(Path(run_dir).resolve())]


def predict_subprocess(run_dir: Path, environment: Dict[str, str], log_path: Path) -> Optional[str]:
    """
    `write_dev_predictions` for a finished grid run, in a subprocess (`train_subprocess`: it
    dies with the grid and keeps its lock), so the grid's process never holds a model or a GPU.
    `None` when it wrote them, else what went wrong.
    """
    archive = Path(run_dir) / ARCHIVE_NAME
    if not tarfile.is_tarfile(archive):
        return f"{ARCHIVE_NAME} is not a model archive"
    returncode = train_subprocess(predict_command(run_dir), environment, log_path)
    if returncode != 0 or not (Path(run_dir) / PREDICTIONS_NAME).is_file():
        last = _last_line(log_path)
        return f"exit code {returncode}" + (f": {last}" if last else "")
    return None


def predict_in_process(run_dir: Path, environment: Dict[str, str], log_path: Path) -> Optional[str]:
    """`write_dev_predictions` in this process (tune-search trains in-process too)."""
    try:
        write_dev_predictions(run_dir)
    except Exception as error:
        return f"{type(error).__name__}: {error}"[:300]
    return None


def record_run_outputs(
    run_dir: Path, environment: Dict[str, str], predict: Optional[Predictor]
) -> Dict[str, Any]:
    """
    After a run succeeded: `archive_bytes` into its `cost.json` and, with `predict`, its dev
    predictions (log: `tune_predict.log`). Returns what to add to its `tune_run.json`:
    `predictions` (the file's name) or `predictions_error`. Never raises for a failed
    prediction: the run itself is fine.
    """
    record_archive_size(run_dir)
    if predict is None:
        return {}
    error = predict(Path(run_dir), environment, Path(run_dir) / PREDICT_LOG_NAME)
    if error is None:
        return {"predictions": PREDICTIONS_NAME}
    return {"predictions_error": error}


@dataclass
class GridResult:
    """What a grid did: run directories it trained, skipped (complete) and that failed."""

    trained: List[Path] = field(default_factory=list)
    skipped: List[Path] = field(default_factory=list)
    failed: List[Path] = field(default_factory=list)
    moved_aside: List[Path] = field(default_factory=list)
    # Complete runs that no longer matched the command, moved aside and trained again.
    retrained: List[Path] = field(default_factory=list)


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


# ---- which complete runs still match the command (fingerprint) -----------------------------

# How many differences the refusal names per run.
MAX_NAMED_DIFFERENCES = 6


def check_results_dir(results_dir: Path) -> None:
    """Refuses a results folder that is a file, or lies under one, before anything is written."""
    results_dir = Path(results_dir)
    for path in (results_dir, *results_dir.parents):
        if path.exists() or path.is_symlink():
            if not path.is_dir():
                where = "is" if path == results_dir else f"lies under {path}, which is"
                raise ConfigurationError(
                    f"--results-dir {results_dir} {where} a file, not a folder; give the path "
                    "of a folder (it is created if missing)."
                )
            return


def render_run_config(
    config: Path,
    run_ext_vars: Mapping[str, str],
    overrides: Optional[str],
    shared_cache: Optional[Path] = None,
) -> Dict[str, Any]:
    """The config as this grid's training child of the run renders it (environment, ext vars,
    the shared feature cache, overrides); a `ConfigurationError` naming the config otherwise."""
    from allennlp_tune.modules.feature_cache import CACHE_DIR_ENV
    from allennlp_tune.planning.plan import render_config

    variables = dict(run_ext_vars)
    if shared_cache is not None:
        variables.setdefault(CACHE_DIR_ENV, str(shared_cache))
    try:
        return render_config(config, variables, overrides)
    except Exception as error:  # Jsonnet's RuntimeError, a malformed --overrides
        lines = str(error).strip().splitlines()
        first = lines[0][:300] if lines else type(error).__name__
        raise ConfigurationError(
            f"{config} does not render with these ext vars and overrides: {first}"
        ) from None


@dataclass
class ChangedRun:
    """A complete run that the command would now train differently, and what differs."""

    run_dir: Path
    differences: List[str]


def find_changed_runs(
    configs: Sequence[Path],
    seeds: Sequence[int],
    results_dir: Path,
    ext_vars: Optional[Dict[str, str]],
    overrides: Optional[str],
    shared_cache: Optional[Path],
) -> Tuple[List[ChangedRun], List[Path]]:
    """
    The complete runs of `configs` x `seeds` whose config, files or packages differ from what
    the command would use now (`fingerprint.differences`), and the complete runs that match on
    their config but carry no fingerprint to check their files against.
    """
    changed: List[ChangedRun] = []
    unverified: List[Path] = []
    for config in configs:
        for seed in seeds:
            run_dir = Path(results_dir) / config_stem(config) / f"seed_{seed}"
            if not is_complete(run_dir):
                continue
            trained = read_json(run_dir / CONFIG_NAME)
            info = read_json(run_dir / RUN_INFO_NAME) or {}
            run_ext_vars = {**(ext_vars or {}), SEED_EXT_VAR: str(seed)}
            now = render_run_config(config, run_ext_vars, overrides, shared_cache)
            if trained is None:
                changed.append(ChangedRun(run_dir, [f"it has no readable {CONFIG_NAME}"]))
                continue
            old = predates_fingerprints(info)
            now_fingerprint = {} if old else fingerprint(now)
            found = differences(trained, info, now, now_fingerprint, run_ext_vars)
            if found:
                changed.append(ChangedRun(run_dir, found))
            elif old:
                unverified.append(run_dir)
    return changed, unverified


def changed_runs_message(changed: Sequence[ChangedRun], results_dir: Path) -> str:
    """The refusal: each changed run and what differs, then the two ways on."""
    lines = [
        f"nothing was trained: {len(changed)} complete run(s) in {results_dir} were trained "
        "with something other than what this command uses now, and reusing them would mix two "
        "experiments in one verdict:"
    ]
    for run in changed:
        shown = run.differences[:MAX_NAMED_DIFFERENCES]
        more = len(run.differences) - len(shown)
        named = "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
        lines.append(f"  {run.run_dir.relative_to(results_dir)}: {named}")
    lines.append(
        "Give another --results-dir to keep the old runs apart, or add --retrain-changed to "
        "move these runs aside (to seed_<k>.changed-<time>, nothing deleted) and train them "
        "again."
    )
    return "\n".join(lines)


def _plan_before_training(
    configs: Sequence[Path],
    seeds: Sequence[int],
    results_dir: Path,
    ext_vars: Optional[Dict[str, str]],
    overrides: Optional[str],
    shared_cache: Optional[Path],
    plan_only: bool,
    tool: str,
    retrain: Iterable[Path] = (),
) -> None:
    """The planner's table for the configs with a run to do (`retrain`: complete runs that will
    train again); raises when a cache won't fit."""
    from allennlp_tune.modules.feature_cache import user_cache_directory
    from allennlp_tune.planning.plan import budget_failures, plan_cell, plan_problems
    from allennlp_tune.planning.render import print_plan

    retrain = set(retrain)
    plans = []
    for config in configs:
        pending = [
            seed
            for seed in seeds
            if not is_complete(results_dir / config_stem(config) / f"seed_{seed}")
            or results_dir / config_stem(config) / f"seed_{seed}" in retrain
        ]
        if not pending:
            continue
        run_ext_vars = {**(ext_vars or {}), SEED_EXT_VAR: str(pending[0])}
        cache_directory = shared_cache or user_cache_directory(ext_vars)
        plans.append(
            plan_cell(
                config, run_ext_vars, overrides, Path(cache_directory) if cache_directory else None
            )
        )
    if not plans:
        return
    stream = sys.stdout if plan_only else sys.stderr
    stream.write(f"{tool}: plan of the {len(plans)} cell(s) with runs to do\n")
    print_plan(plans, stream)
    message = budget_failures(plans)
    if message:
        raise ConfigurationError(f"nothing was trained: {message}")
    problems = plan_problems(plans)
    if plan_only and problems:
        raise ConfigurationError(f"the plan found runs that cannot train: {problems}")


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
) -> GridResult:
    """
    Trains every config with every seed into `results_dir` (see the module docstring for the
    layout and for what is skipped, moved aside and rerun). `KeyboardInterrupt` propagates after
    the run in progress is stopped; that run is the only one lost. `tool` names the command
    that runs the grid in its progress bar, its messages and each run's `tune_run.json`.
    After a run succeeds, before it is tidied, `archive_bytes` goes into its `cost.json` and
    `predict` (`None`: no predictions) writes its `dev_predictions.jsonl`; a prediction that
    fails is noted in `tune_run.json` (`predictions_error`) and the run still counts as done.

    `plan` (default): before anything is written, the planner (`allennlp_tune.planning.plan`)
    prints its estimate for every config with a run to do (stderr) and refuses the grid with a
    `ConfigurationError` naming the setting to change when a cell's feature cache would not fit
    its budget. `plan_only`: print the plan (stdout), refuse the same way, train nothing and
    return an empty result.

    Before either, every complete run is checked against what the command would train now
    (`find_changed_runs`): one that differs raises a `ConfigurationError` naming what changed,
    unless `retrain_changed`, which moves it aside and trains it again (module docstring).
    """
    from tqdm import tqdm

    from allennlp_tune.modules.feature_cache import (
        CACHE_DIR_ENV,
        user_cache_directory,
    )

    results_dir = Path(results_dir)
    check_results_dir(results_dir)
    shared_cache = None
    if user_cache_directory(ext_vars) is None:
        shared_cache = (results_dir / SHARED_CACHE_NAME).resolve()
    changed, unverified = find_changed_runs(
        configs, seeds, results_dir, ext_vars, overrides, shared_cache
    )
    if changed and not retrain_changed:
        raise ConfigurationError(changed_runs_message(changed, results_dir))
    if unverified:
        print(
            f"{tool}: {len(unverified)} complete run(s) predate run fingerprints: their config "
            "matches this command, their data and encoder files could not be checked.",
            file=sys.stderr,
        )
    retrain = {run.run_dir for run in changed}
    if plan or plan_only:
        _plan_before_training(
            configs,
            seeds,
            results_dir,
            ext_vars,
            overrides,
            shared_cache,
            plan_only,
            tool,
            retrain,
        )
        if plan_only:
            return GridResult()
    results_dir.mkdir(parents=True, exist_ok=True)
    result = GridResult()
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
                if run_dir in retrain:
                    aside = move_aside(run_dir, "changed")
                    result.moved_aside.append(aside)
                    result.retrained.append(run_dir)
                    bar.write(f"{tool}: moved the changed {run_dir} aside to {aside.name}")
                elif is_complete(run_dir):
                    if not (run_dir / ARCHIVE_NAME).is_file():
                        bar.write(
                            f"{tool}: {run_dir} finished earlier but has no {ARCHIVE_NAME} any "
                            "more; kept as it is (delete that folder to train it again)"
                        )
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
                    freed = ""
                    if not keep_checkpoints:
                        tidied = tidy_run_dir(aside, drop_weights=True)
                        if tidied["removed"]:
                            freed = f" (its checkpoints deleted, {tidied['freed_mb']} MB)"
                    bar.write(
                        f"{tool}: moved the unfinished {run_dir} aside to {aside.name}{freed}"
                    )
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
                    info[FINGERPRINT_KEY] = fingerprint(read_json(run_dir / CONFIG_NAME) or {})
                    bar.set_postfix_str(f"{stem} seed {seed}, dev predictions")
                    info.update(record_run_outputs(run_dir, environment, predict))
                    if "predictions_error" in info:
                        bar.write(
                            f"{tool}: {stem} seed {seed}: no dev predictions "
                            f"({info['predictions_error']}); log: {run_dir / PREDICT_LOG_NAME}"
                        )
                    if not keep_checkpoints:
                        info["tidied"] = tidy_run_dir(run_dir)
                write_json(run_dir / RUN_INFO_NAME, info)
                bar.update()
        if shared_cache is not None and shared_cache.is_dir() and not keep_checkpoints:
            shutil.rmtree(shared_cache)
    return result
