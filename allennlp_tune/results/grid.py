"""
tune-grid: train configs x seeds into one results directory, resumably.

Every run is `allennlp train CONFIG -s DIR/<config_stem>/seed_<k> --include-package
allennlp_tune` in a subprocess whose environment is tune-grid's own plus `TUNE_SEED=<k>` and each
`--ext-var KEY=VALUE` (AllenNLP reads environment variables as Jsonnet ext vars; `allennlp train`
has no flag for them). So `source best_params.env` before tune-grid passes tune-search's best
hyperparameters on. Runs go seed by seed (every config with seed 1 first), so an interrupted
grid already has one seed of every cell.

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
log is `DIR/<config_stem>/seed_<k>.log`. Run one grid at a time per results directory: a second
one would take the first one's run in progress for a partial run. Ctrl-C and SIGTERM stop the
training child too; after SIGKILL the child may train on, and the next grid moves its directory
aside as partial.
"""

import functools
import glob
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence

from allennlp.common.checks import ConfigurationError

from allennlp_tune.results.runs import (
    ARCHIVE_NAME,
    FAILED,
    METRICS_NAME,
    OK,
    RUN_INFO_NAME,
    RUN_LOG_NAME,
    config_stem,
    is_complete,
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


def train_subprocess(command: List[str], environment: Dict[str, str], log_path: Path) -> int:
    """Runs one training with stdout and stderr into `log_path`; stops the child on interrupt."""
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            command, env=environment, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        try:
            return process.wait()
        except BaseException:
            _stop(process)
            raise


def _last_line(log_path: Path) -> str:
    try:
        with open(log_path, encoding="utf-8", errors="replace") as log:
            lines = [line.strip() for line in log.readlines()[-200:] if line.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


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
) -> GridResult:
    """
    Trains every config with every seed into `results_dir` (see the module docstring for the
    layout and for what is skipped, moved aside and rerun). `KeyboardInterrupt` propagates after
    the run in progress is stopped; that run is the only one lost.
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
    bar = tqdm(total=len(jobs), unit="run", desc="tune-grid", disable=not progress, file=sys.stderr)
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
                bar.write(f"tune-grid: moved the unfinished {run_dir} aside to {aside.name}")
            run_dir.parent.mkdir(parents=True, exist_ok=True)

            environment = dict(os.environ)
            run_ext_vars = {**(ext_vars or {}), SEED_EXT_VAR: str(seed)}
            environment.update(run_ext_vars)
            if shared_cache is not None:
                environment[CACHE_DIR_ENV] = str(shared_cache)
            command = train_command(config, run_dir, overrides)
            name, _ = parse_run_name(stem)
            info = {
                "tool": "tune-grid",
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
                    f"tune-grid: {stem} seed {seed} failed ({info['error']}); "
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
