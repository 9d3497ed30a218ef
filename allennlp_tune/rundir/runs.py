"""
Run directories: how a training run is found, identified and judged finished.

A *run directory* is an AllenNLP serialization directory (it holds `config.json`) or a directory
that tune-grid / tune-search wrote a `tune_run.json` into (a run that failed before AllenNLP
created its files has only that and its log).

A run is identified as (task, encoder, mode, variant, seed):

1. from `tune_run.json` when present (tune-grid and tune-search write it);
2. else from the name of the run directory or of its parent, which follows the config names
   `<task>_<encoder>_<mode>[_<variant>]` (`sick_e_bert_ft`, `conll2003_elmo_fe_crf`), so both
   `runs/sick_e_bert_ft/seed_1` (tune-grid's layout) and `runs/sick_e_bert_ft_seed1` work.
   The seed comes from `random_seed` in `config.json`, else from a `seed_<k>` / `seed<k>` name.

What a name may be is in `names.py`. A run whose name does not follow the pattern is still
reported, under its path.

The score of a run is `best_validation_<metric>` in its `metrics.json` (`test_<metric>` with
`split="test"`: written by `allennlp train` with `evaluate_on_test`, or after training by
`tune-compare --test`, `experiments.test_split`), where `<metric>` is the trainer's
`validation_metric` in `config.json` without its sign (the first one when it is a list;
AllenNLP's default is `-loss`). Only a finite JSON number within +-1e300 is a score: a string
(`"0.9"`) or another JSON type gets the status "metric not a number", an infinity or a number so
large that the report's arithmetic (x100, sums, differences) would overflow gets "metric not
finite", and NaN (what AllenNLP writes for an undefined metric, e.g. Pearson of constant
predictions) "missing metric"; each with the value in its detail, and none of them goes into a
mean or a difference.

A run whose `config.json`, `metrics.json` or `tune_run.json` cannot be used (not JSON, not an
object, a `trainer` that is not an object) gets the status "unreadable", with the file and what
is wrong with it; the report still lists every other run.

A run whose `tune_run.json` says it finished ("ok") but whose files are not what it left gets the
status "damaged", with what failed: a file that differs from the digest its record holds (size,
then sha256: `digests`), a `metrics.json` or `config.json` that is missing or cannot be read.
A damaged run is never complete (`is_complete`), never in a score or a verdict, and the grid
moves it aside (`<run>.damaged-<timestamp>`) and trains it again. The score recomputed from its
predictions is the other check, one room up (`allennlp_tune.reporting.verify`), which also marks
runs damaged.
"""

import datetime
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_tune.rundir.digests import OUTPUTS_KEY, digest_problems
from allennlp_tune.rundir.jsonio import describe_value, read_json, read_json_object
from allennlp_tune.rundir.names import (
    ARCHIVE_NAME,
    BUDGET_NAME,
    BUDGET_SEARCH_DIR,
    CONFIG_NAME,
    COST_NAME,
    METRICS_NAME,
    PREDICTIONS_NAME,
    RUN_INFO_NAME,
    SUPERSEDED_PATTERN,
    TEST_PREDICTIONS_NAME,
    TEST_RECORD_KEY,
    RunName,
    parse_run_name,
)

# Statuses of a run, in the order a report lists them.
OK = "ok"
MISSING_METRIC = "missing metric"
FAILED = "failed"
PRUNED = "pruned"
INCOMPLETE = "incomplete"
UNREADABLE = "unreadable"  # a run file that is not what AllenNLP or tune-grid writes
NOT_A_NUMBER = "metric not a number"  # the metric's key holds a string, a list, ...
NOT_FINITE = "metric not finite"  # infinite, or beyond LARGEST_METRIC
# Finished ("ok" in tune_run.json) but its files are not what it left (module docstring).
DAMAGED = "damaged"
STATUSES = (
    OK,
    MISSING_METRIC,
    NOT_A_NUMBER,
    NOT_FINITE,
    FAILED,
    PRUNED,
    INCOMPLETE,
    UNREADABLE,
    DAMAGED,
)
# The largest magnitude a score may have: the report multiplies by 100, sums and subtracts
# scores, which overflows to inf not far above this.
LARGEST_METRIC = 1e300


def metric_of_config(config: Dict[str, Any]) -> Tuple[str, bool]:
    """
    The primary metric's name and whether higher is better, from a config's trainer. Raises a
    `ConfigurationError` saying what is wrong when `trainer` or its `validation_metric` is not
    what AllenNLP accepts (an object; a string or a list of strings).
    """
    trainer = config.get("trainer")
    if trainer is None:
        trainer = {}
    if not isinstance(trainer, dict):
        raise ConfigurationError(
            f"trainer is {describe_value(trainer)}; expected an object such as "
            '{"validation_metric": "+accuracy", ...}'
        )
    metric = trainer.get("validation_metric", "-loss")
    if isinstance(metric, list):
        metric = metric[0] if metric else "-loss"
    if not isinstance(metric, str):
        raise ConfigurationError(
            f"trainer.validation_metric is {describe_value(metric)}; expected a string such as "
            '"+accuracy" or a list of them'
        )
    if metric[:1] not in "+-" or len(metric) < 2:
        # AllenNLP itself rejects this; a hand-made config.json might still have it.
        return metric, True
    return metric[1:], metric[0] == "+"


def loader_batch_size(
    config: Mapping[str, Any], loaders: Sequence[str] = ("data_loader",)
) -> Optional[int]:
    """
    The batch size of the first of `loaders` (a rendered config's data-loader keys, e.g.
    `("validation_data_loader", "data_loader")`) that sets one, on the loader itself or on its
    `batch_sampler`; `None` when none sets a positive integer. The planner's calibration, the
    prediction writers and the layer signal all read a run's batch size here.
    """
    for key in loaders:
        loader = config.get(key)
        if not isinstance(loader, dict):
            continue
        sampler = loader.get("batch_sampler")
        for where in (loader, sampler if isinstance(sampler, dict) else {}):
            size = where.get("batch_size")
            if isinstance(size, int) and not isinstance(size, bool) and size > 0:
                return size
    return None


@dataclass
class Run:
    """One training run, as the report sees it. `value` is the raw metric (0.918, not 91.8)."""

    path: Path
    name: Optional[RunName]
    seed: Optional[int]
    status: str
    metric: Optional[str] = None
    higher_is_better: bool = True
    value: Optional[float] = None
    log: Optional[str] = None
    detail: Optional[str] = None
    info: Dict[str, Any] = field(default_factory=dict)
    # What was trained: `config_settings(config.json)`; `None` without a config.json.
    settings: Optional[Dict[str, str]] = None
    # What it cost (`cost.json`, see `allennlp_tune.training.callbacks.cost`); `None` when the
    # run has none (older runs, configs without the `tune_cost` callback) or it is not an object.
    cost: Optional[Dict[str, Any]] = None
    # Whether it has `dev_predictions.jsonl`.
    predictions: bool = False
    # Whether it has `test_predictions.jsonl` of its current archive (`current_test_record`),
    # and its `test_<metric>` in metrics.json (a finite number, else `None`) whatever the split.
    test_predictions: bool = False
    test_value: Optional[float] = None
    # Whether `tune_run.json` holds digests of the outputs (`digests`), all of which matched;
    # `False` for a run recorded before digests (or not by tune-grid / tune-search).
    digested: bool = False
    # Why the score was not recomputed from the predictions (`reporting.verify`); `None` when
    # it was, or before that check ran.
    unchecked: Optional[str] = None
    # Files already read and checked, by name (`reporting.verify` keeps the predictions it
    # scored here, so that the intervals do not read them again).
    loaded: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def scored(self) -> bool:
        """Status ok: it finished with its metric. Only these count in scores, costs, intervals."""
        return self.status == OK


def is_complete(run_dir: Path) -> bool:
    """
    A tune-grid run is complete when it has its metrics and status "ok" and is not damaged
    (`run_damage`). Its archive is not required: tune_run.json is written after training has
    archived the model, so a finished run without `model.tar.gz` is one whose archive was
    deleted (to free disk) and is not trained again (the grid says so; delete the run's folder
    to train it again). The score recomputed from the predictions is checked one room up
    (`reporting.verify.run_damage`), where the grid asks.
    """
    info = read_json(run_dir / RUN_INFO_NAME) or {}
    if info.get("status") != OK or not (run_dir / METRICS_NAME).is_file():
        return False
    return not run_damage(run_dir, info)


def run_damage(run_dir: Path, info: Mapping[str, Any]) -> List[str]:
    """
    What is damaged in a run that `info` (its `tune_run.json`) records as finished ("ok"): its
    `config.json` or `metrics.json` missing or unreadable, and each file that differs from its
    recorded digest (`digests.digest_problems`). `[]` for an intact run, and for one whose
    record does not say "ok" (failed, pruned or unfinished runs are not damaged, only unfinished).
    """
    if info.get("status") != OK:
        return []
    damage = []
    for name in (CONFIG_NAME, METRICS_NAME):
        loaded, problem = read_json_object(run_dir / name)
        if problem is not None:
            damage.append(f"{name}: {problem}")
        elif loaded is None:
            damage.append(f"{name}: missing, but {RUN_INFO_NAME} says the run finished")
    return damage + (digest_problems(run_dir, info) or [])


def timestamp() -> str:
    return datetime.datetime.now().strftime("%Y%m%dT%H%M%S")


def move_aside(run_dir: Path, reason: str) -> Path:
    """
    Renames `run_dir` to `<run_dir>.<reason>-<timestamp>` (reason "incomplete", "failed",
    "changed" or "damaged") so it can be rerun without deleting anything a user might want to
    look at.
    """
    target = run_dir.with_name(f"{run_dir.name}.{reason}-{timestamp()}")
    suffix = 1
    while target.exists():
        suffix += 1
        target = run_dir.with_name(f"{run_dir.name}.{reason}-{timestamp()}-{suffix}")
    os.replace(run_dir, target)
    return target


def archive_stamp(run_dir: Path) -> Optional[str]:
    """`<bytes>:<mtime_ns>` of the run's `model.tar.gz` (`None` without one): which archive a
    record was made from, checked without reading the archive."""
    try:
        stat = (Path(run_dir) / ARCHIVE_NAME).stat()
    except OSError:
        return None
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def current_test_record(run_dir: Path, info: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """
    The run's record of its scoring on the test split (`tune_run.json`'s `test`, written by
    `experiments.test_split`) when it still belongs to the run: its `test_predictions.jsonl`
    exists and the record names the archive the run has now (a run trained again in the same
    folder has another). A run whose archive was deleted after scoring keeps its record.
    `None` otherwise: not scored, failed to score, or stale.
    """
    record = info.get(TEST_RECORD_KEY)
    if not isinstance(record, dict) or "error" in record:
        return None
    if not (Path(run_dir) / TEST_PREDICTIONS_NAME).is_file():
        return None
    stamp = archive_stamp(run_dir)
    if stamp is not None and record.get("archive") != stamp:
        return None
    return record


def is_run_dir(path: Path) -> bool:
    return (path / CONFIG_NAME).is_file() or (path / RUN_INFO_NAME).is_file()


def find_run_dirs(roots: Iterable[Path]) -> Tuple[List[Path], int]:
    """
    Run directories under `roots` (recursively; a run directory's own subfolders are not
    searched, nor the `search/` folder of a `tune-compare --budget` results folder, whose
    trials are not the runs it compares), sorted and without duplicates, and the number of
    superseded attempts skipped.
    Raises `FileNotFoundError` naming a root that does not exist.
    """
    found = set()
    superseded = 0
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            raise FileNotFoundError(f"{root}: no such directory (expected a folder of runs)")
        if is_run_dir(root):
            found.add(root.resolve())
            continue
        for current, subdirs, _ in os.walk(root):
            kept = []
            for name in sorted(subdirs):
                path = Path(current) / name
                if name.startswith("."):
                    continue
                if name == BUDGET_SEARCH_DIR and (Path(current) / BUDGET_NAME).is_file():
                    continue  # the trials of `tune-compare --budget`, not runs of the folder
                if SUPERSEDED_PATTERN.search(name):
                    superseded += 1
                elif is_run_dir(path):
                    found.add(path.resolve())
                else:
                    kept.append(name)
            subdirs[:] = kept
    return sorted(found), superseded


def _identify(run_dir: Path, info: Dict[str, Any]) -> Tuple[Optional[RunName], Optional[int]]:
    if info.get("task") and info.get("encoder") and info.get("mode"):
        name = RunName(info["task"], info["encoder"], info["mode"], info.get("variant"))
        return name, info.get("seed")
    for candidate in (run_dir.name, run_dir.parent.name):
        name, seed = parse_run_name(candidate)
        if name is not None:
            if seed is None:
                _, seed = parse_run_name(run_dir.name)
            return name, seed
    return None, parse_run_name(run_dir.name)[1]


SEED_KEYS = ("random_seed", "numpy_seed", "pytorch_seed")
# Where a run trained, not what: a cell may hold seeds run on a GPU beside seeds run on the CPU.
PLACEMENT_KEYS = ("trainer.cuda_device", "distributed.cuda_devices")


def _is_data_file(key: str) -> bool:
    """`train_data_path`, or a file a dataset reader reads (`dataset_reader.ids_file`)."""
    parts = key.split(".")
    if parts[-1].endswith("_data_path"):
        return True
    return parts[0] in ("dataset_reader", "validation_dataset_reader") and parts[-1].endswith(
        "_file"
    )


def config_settings(config: Dict[str, Any]) -> Dict[str, str]:
    """
    A run's `config.json` flattened to `{"trainer.optimizer.lr": "0.0001", ...}` (list items by
    index, values as JSON), without the seeds, which are what tells the seeds of a cell apart,
    and without the devices it ran on (`PLACEMENT_KEYS`). Data paths (`*_data_path`, and a
    dataset reader's `*_file`, such as MRPC's `ids_file`) count by file name only, so one data
    folder reached by two paths (a GPU machine's copy and this one's) is no difference.
    The report compares these between the runs of a cell, to flag cells that average runs trained
    with different settings (two learning rates, say).
    """
    flat: Dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if prefix in PLACEMENT_KEYS:
            return
        if isinstance(value, dict) and value:
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), item)
        elif isinstance(value, list) and value:
            for index, item in enumerate(value):
                walk(f"{prefix}.{index}", item)
        elif _is_data_file(prefix) and isinstance(value, str):
            flat[prefix] = json.dumps(os.path.basename(value.rstrip("/")))
        else:
            flat[prefix] = json.dumps(value, sort_keys=True)

    walk("", {key: value for key, value in config.items() if key not in SEED_KEYS})
    return flat


def fingerprint_settings(config: Dict[str, Any], info: Dict[str, Any]) -> Dict[str, str]:
    """
    What a run's fingerprint (`tune_run.json`, `allennlp_tune.experiments.fingerprint`) adds to its
    settings: the content digest of each file its config names (`train_data_path (content)`)
    and the version of each package that computed it (`package torch`). Two runs of a cell that
    differ here were trained on other data or code, even where their configs are equal.
    """
    recorded = info.get("fingerprint")
    if not isinstance(recorded, dict):
        return {}
    files = recorded.get("files") if isinstance(recorded.get("files"), dict) else {}
    packages = recorded.get("packages") if isinstance(recorded.get("packages"), dict) else {}
    settings = {f"package {name}": json.dumps(version) for name, version in packages.items()}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(f"{prefix}.{index}", item)
        elif isinstance(value, str) and value in files and prefix not in PLACEMENT_KEYS:
            settings[f"{prefix} (content)"] = json.dumps(files[value])

    walk("", config)
    return settings


def load_run(run_dir: Path, split: str = "validation") -> Run:
    """Reads one run directory; never raises for a broken run, it says so in `status`."""
    problems = []  # "<file>: <what is wrong>", for a run whose files cannot be used
    loaded = {}
    for file_name in (RUN_INFO_NAME, CONFIG_NAME, METRICS_NAME):
        loaded[file_name], problem = read_json_object(run_dir / file_name)
        if problem is not None:
            problems.append(f"{file_name}: {problem}")
    info = loaded[RUN_INFO_NAME] or {}
    config = loaded[CONFIG_NAME] or {}
    metrics = loaded[METRICS_NAME]
    name, seed = _identify(run_dir, info)
    if seed is None and isinstance(config.get("random_seed"), int):
        seed = config["random_seed"]
    if info.get("seed") is not None:
        seed = info["seed"]
    log = info.get("log")
    if log is not None and not os.path.isabs(log):
        log = str(run_dir / log)
    elif log is None and (run_dir / "out.log").is_file():
        log = str(run_dir / "out.log")
    run = Run(path=run_dir, name=name, seed=seed, status=INCOMPLETE, log=log, info=info)
    run.cost = read_json(run_dir / COST_NAME)
    run.predictions = (run_dir / PREDICTIONS_NAME).is_file()
    run.test_predictions = current_test_record(run_dir, info) is not None
    # Test scores written for another archive than the run's (trained again in its folder).
    recorded_test = info.get(TEST_RECORD_KEY)
    stale_test = (
        isinstance(recorded_test, dict)
        and "error" not in recorded_test
        and not run.test_predictions
    )
    try:
        if config:
            run.metric, run.higher_is_better = metric_of_config(config)
        elif info.get("metric"):
            run.metric, run.higher_is_better = metric_of_config(
                {"trainer": {"validation_metric": info["metric"]}}
            )
    except ConfigurationError as error:
        problems.append(f"{CONFIG_NAME if config else RUN_INFO_NAME}: {error}")
    if config:
        run.settings = {**config_settings(config), **fingerprint_settings(config, info)}

    recorded = info.get("status")
    if recorded in (FAILED, PRUNED):
        run.status = recorded
        run.detail = info.get("error")
        return run
    damage = run_damage(run_dir, info)
    if damage:
        run.status, run.detail = DAMAGED, "; ".join(damage)
        return run
    run.digested = recorded == OK and isinstance(info.get(OUTPUTS_KEY), dict)
    if problems:
        run.status = UNREADABLE
        run.detail = "; ".join(problems)
        return run
    if metrics is None:
        # No metrics.json: killed, crashed outside tune-grid, or still training.
        run.detail = "no metrics.json (killed, crashed or still running)"
        return run
    key = ("best_validation_" if split == "validation" else "test_") + str(run.metric)
    run.status, run.value, run.detail = _score(metrics, key)
    test_status, test_value, _ = _score(metrics, f"test_{run.metric}")
    run.test_value = test_value if test_status == OK and not stale_test else None
    if split != "validation" and stale_test:
        run.status, run.value = MISSING_METRIC, None
        run.detail = (
            f"its {key} is of an earlier {ARCHIVE_NAME} than the run's: score it on test again "
            "(allennlp tune-test)"
        )
    return run


def _score(metrics: Dict[str, Any], key: str) -> Tuple[str, Optional[float], Optional[str]]:
    """`(status, value, detail)` of the metric `key` of a `metrics.json` (see the docstring)."""
    value = metrics.get(key)
    if value is None:
        missing = (
            f"{key} is null in metrics.json" if key in metrics else f"metrics.json has no {key!r}"
        )
        return MISSING_METRIC, None, missing
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return NOT_A_NUMBER, None, f"{key} is {describe_value(value)} in metrics.json, not a number"
    try:
        number = float(value)
    except OverflowError:  # a JSON integer beyond the float range
        number = math.inf
    if math.isnan(number):
        return MISSING_METRIC, None, f"{key} is {value} in metrics.json (constant predictions?)"
    if math.isinf(number):
        return NOT_FINITE, None, f"{key} is {value} in metrics.json"
    if abs(number) > LARGEST_METRIC:
        return (
            NOT_FINITE,
            None,
            f"{key} is {value!r} in metrics.json: too large to average or compare (beyond "
            f"{LARGEST_METRIC:g}, x100 overflows)",
        )
    return OK, number, None


def load_runs(roots: Iterable[Path], split: str = "validation") -> Tuple[List[Run], int]:
    """All runs under `roots` and the number of superseded attempts that were skipped."""
    run_dirs, superseded = find_run_dirs(roots)
    return [load_run(run_dir, split) for run_dir in run_dirs], superseded
