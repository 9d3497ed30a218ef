"""
The plan of tune-grid and tune-compare: what each cell will cost, before anything trains.

For every cell about to run (a config with at least one seed not complete), `plan_cell`:

1. renders the config as the grid's `allennlp train` child will (`render_config`: the grid's
   ext vars, the first pending seed as `TUNE_SEED`, the environment, `--overrides`);
2. counts the train split's instances, sequences and wordpieces with the config's own reader
   (`data_count`);
3. reads the encoder's layers `L`, width `H` and estimated parameters `P` from its
   `config.json` or ELMo options file only (`encoder_size`);
4. for a feature-extraction cell whose embedder has a `feature_cache`, estimates the cache's
   size with `estimated_cache_bytes` over the train and validation data (the trainer validates
   through the same embedder, so its entries are stored too) and the number of layers the
   config mixes (`"all"`: `L + 1`), and checks it with `check_budget` against the cell's
   `feature_cache` settings in the folder the run will use (its `directory`, else
   `TUNE_FEATURE_CACHE_DIR`, else the grid's shared `RESULTS_DIR/.feature_cache`);
5. estimates the time per epoch and the peak RAM from the cost model (`cost_model`), "n/a"
   where it has no entry for the mode or the encoder's size is unknown. A cached `fe` cell has
   its first epoch (the encoder runs and the features are stored) apart from the later ones
   (read from the cache), where the model has both; an `fe` cell without a cache pays the first
   epoch's cost every epoch. A block mode (`topK` / `bottomK`) is priced from ft's entry, scaled
   by its share of a fine-tuning epoch's work (`block_work_fraction`). With the config's
   `trainer.num_epochs`, `planned_run_seconds` is the whole run's time at most (early stopping
   can end it sooner), and `planned_total_seconds` the sum over a command's pending runs: a
   grid's runs share one cache (`CellPlan.shares_cache`), so only a cached cell's first pending
   run pays the first epoch's encoder pass.

`run_grid` then replaces the cost model's time per epoch by one measured on this machine
(`calibrate.calibrate_plans`; `CellPlan.time_source` says which was used), unless
`--no-calibrate` or `TUNE_PLAN_CALIBRATE=0`; `plan_cell` itself never times anything.

`run_grid` prints the plan (`render.print_plan`; stderr, or stdout with `--plan-only`, which
then stops) and refuses the whole grid, before any run folder is written, when a cell's cache
would not fit its budget (`budget_failures`, naming the setting to change: `feature_cache.disk_mb`,
`feature_cache.min_free_mb`, `feature_cache.directory` / `TUNE_FEATURE_CACHE_DIR`, or no cache:
`TUNE_FEATURE_CACHE=false`); `--plan-only` also fails on a cell whose runs could not train
(`plan_problems`): a split that does not read (validation and test are read whole too, as the
runs and `--test` read them, so a bad row is named by file and line), and an input longer than
the encoder's positions that the embedder would refuse (`_check_positions`, naming its file and
line). `--no-plan` skips the planner altogether. A cell that cannot be planned (a
config without a reader, a missing data file) gets "n/a" and a note; it is not refused (the run
itself will say what is wrong). Each cell is checked on its own:
cells of one grid that share a cache folder and encoder share entries (fe and sf of a task), so
summing them would overstate the need.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from allennlp.common.checks import ConfigurationError

from allennlp_tune.modes import FEATURE_EXTRACTION, block_groups, mode_record
from allennlp_tune.planning.cost_model import COST_MODEL, ModeCost
from allennlp_tune.planning.data_count import DataCount, cached_count, validation_count
from allennlp_tune.planning.encoder_size import (
    EncoderSize,
    elmo_size,
    find_embedder,
    transformer_size,
)
from allennlp_tune.rundir import config_stem, loader_batch_size, parse_run_name


@dataclass
class CellPlan:
    """The planner's estimate for one cell (a config about to run)."""

    config: Path
    stem: str
    mode: Optional[str] = None
    data: Optional[DataCount] = None
    validation: Optional[DataCount] = None  # read as training will (`_read_other_splits`)
    test: Optional[DataCount] = None  # read as --test will; training does not read it
    encoder: Optional[EncoderSize] = None
    cache_layers: Optional[int] = None
    cache_config: Optional[Dict[str, Any]] = None
    cache_directory: Optional[Path] = None
    cache_bytes: Optional[int] = None
    # A head that pools first (tune_frozen_head) reads the pooled-feature cache: per sequence
    # its poolings of each layer, not each wordpiece's states.
    cache_pooled: bool = False
    budget_error: Optional[str] = None
    head: Optional[str] = None  # the model's registered type
    cost_key: Optional[str] = None  # the COST_MODEL entry the estimates came from
    epoch_seconds: Optional[float] = None  # every epoch, or those after the first one below
    first_epoch_seconds: Optional[float] = None  # a cached fe cell's first epoch
    epochs: Optional[int] = None  # the config's trainer.num_epochs
    peak_rss_mb: Optional[float] = None
    # Where the times came from: "cost model", "calibrated" (a few batches timed on this
    # machine, `calibrate.calibrate_cell`) or "measured" (this machine's finished runs of the
    # cell, `calibrate.measured_cell`).
    time_source: str = "cost model"
    # The runs of this cell still to do (its pending seeds), for the command's total.
    pending_runs: int = 1
    # Whether those runs share one feature cache that lives until the last of them (a grid's
    # `DIR/.feature_cache`, or the user's own): the first fills it, the others read it from
    # their first epoch, so the total charges a cached cell's first epoch once.
    shares_cache: bool = False
    # Its finished runs (run folders), whose epochs the calibration reads before timing batches.
    finished_runs: List[Path] = field(default_factory=list)
    # The config as rendered for the run (None where it did not render), for the calibration.
    rendered: Optional[Dict[str, Any]] = field(default=None, repr=False)
    notes: List[str] = field(default_factory=list)
    # The notes that mean a run of this cell cannot train (no config, encoder or train data, a
    # bad validation row, an input longer than the encoder's positions), or that --test could
    # not score it (a bad test row).
    problems: List[str] = field(default_factory=list)

    def problem(self, text: str) -> None:
        """A note that a run of this cell would fail on (shown among the notes too)."""
        self.notes.append(text)
        self.problems.append(text)


def counted(number: int, noun: str, plural: Optional[str] = None) -> str:
    """`1 epoch`, `5 epochs`, `1 train batch`, `3 train batches` (`plural`, else the noun with
    an s): a count with its noun, plural but for one."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def render_config(
    config: Path, ext_vars: Optional[Mapping[str, str]] = None, overrides: Optional[str] = None
) -> Dict[str, Any]:
    """The config as the grid's child renders it (environment + ext vars, overrides)."""
    from allennlp.common import Params

    variables = {**os.environ, **(ext_vars or {})}
    params = Params.from_file(str(config), params_overrides=overrides or "", ext_vars=variables)
    return params.as_dict(quiet=True)


def plan_cell(
    config: Path,
    ext_vars: Optional[Mapping[str, str]] = None,
    overrides: Optional[str] = None,
    cache_directory: Optional[Path] = None,
    cost_model: Optional[Mapping[str, ModeCost]] = None,
    rendered: Optional[Dict[str, Any]] = None,
) -> CellPlan:
    """
    The estimate for one cell (module docstring). Never raises for a cell it cannot plan: the
    reason goes into the plan's `notes` (and `problems`, when a run would fail on it).

    # Parameters

    config : `Path`
        The training config; its stem names the cell (and, when it is a run name, its mode).
    ext_vars : `Mapping[str, str]`, optional
        The ext vars the run will get, over the environment.
    overrides : `str`, optional
        The run's `--overrides`.
    cache_directory : `Path`, optional
        Where the run's feature cache goes when its `feature_cache` names no `directory`
        (tune-grid's shared folder or the user's `TUNE_FEATURE_CACHE_DIR`).
    cost_model : `Mapping[str, ModeCost]`, optional (default = `COST_MODEL`)
        The cost model to estimate time and memory from; `{}` for none.
    rendered : `Dict[str, Any]`, optional
        The config already rendered (else it is rendered here).
    """
    config = Path(config)
    cost_model = COST_MODEL if cost_model is None else cost_model
    plan = CellPlan(config=config, stem=config_stem(config))
    name, _ = parse_run_name(plan.stem)
    try:
        if rendered is None:
            rendered = render_config(config, ext_vars, overrides)
    except Exception as error:  # Jsonnet's RuntimeError, a bad override
        plan.problem(f"does not render: {str(error).strip().splitlines()[0][:200]}")
        return plan
    plan.rendered = rendered

    model_config = rendered.get("model")
    if isinstance(model_config, dict) and isinstance(model_config.get("type"), str):
        plan.head = model_config["type"]
    embedder = find_embedder(model_config)
    embedder_mode = (embedder or {}).get("mode")
    plan.mode = name.mode if name else None
    if plan.mode is None and embedder_mode == FEATURE_EXTRACTION:
        plan.mode = "fe"

    _size_encoder(plan, embedder)
    _count_train_data(plan, rendered)
    cache = (embedder or {}).get("feature_cache")
    # A topK block with a cache stores the output of its frozen layers: one layer.
    cached_block = plan.mode is not None and (block_groups(plan.mode) or "").startswith("top:")
    if (
        (embedder_mode == FEATURE_EXTRACTION or cached_block)
        and isinstance(cache, dict)
        and plan.encoder is not None
    ):
        _estimate_cache(plan, embedder, cache, rendered, cache_directory)
    _read_other_splits(plan, rendered)
    _check_positions(plan, embedder, rendered)
    _estimate_cost(plan, rendered, cost_model)
    return plan


def _size_encoder(plan: CellPlan, embedder: Optional[Dict[str, Any]]) -> None:
    """`plan.encoder` from the embedder's `model_name` or ELMo `options_file`, else a note."""
    if embedder is None:
        plan.notes.append("no transformer or ELMo embedder found")
        return
    try:
        if "model_name" in embedder:
            plan.encoder = transformer_size(embedder["model_name"])
        else:
            plan.encoder = elmo_size(embedder.get("options_file", ""))
            if plan.encoder is None:
                plan.notes.append("ELMo options file is not a local file: size unknown")
    except Exception as error:
        plan.problem(f"encoder config not readable: {type(error).__name__}: {error}")


def _count_train_data(plan: CellPlan, rendered: Mapping[str, Any]) -> None:
    """`plan.data` from the train split, else a note (a problem when the file is missing)."""
    reader_config = rendered.get("dataset_reader")
    train_path = rendered.get("train_data_path")
    if not isinstance(reader_config, dict) or not isinstance(train_path, str):
        plan.notes.append("no dataset_reader or train_data_path")
    elif "://" not in train_path and not os.path.exists(train_path):
        plan.problem(f"train data {train_path} does not exist")
    else:
        try:
            plan.data = cached_count(reader_config, train_path)
        except Exception as error:
            plan.problem(f"train data not readable: {type(error).__name__}: {error}"[:300])


def _read_problem(split: str, path: str, error: Exception) -> str:
    """What stops a split's reading: a reader's own error (it names the file, the line and the
    fix) as its first line, another as its type and text."""
    if isinstance(error, ConfigurationError):
        return f"{split} data: {str(error).strip().splitlines()[0]}"
    return f"{split} data {path} not readable: {type(error).__name__}: {error}"[:300]


def _read_other_splits(plan: CellPlan, rendered: Mapping[str, Any]) -> None:
    """
    The validation split (which every run reads) and the test split (which `--test` and
    `tune-test` read, training does not), each read whole with the config's validation reader
    (else its reader), as AllenNLP builds their loaders: a bad row, a missing file, is a
    problem naming them (`--plan-only` refuses on it).
    """
    reader = rendered.get("validation_dataset_reader") or rendered.get("dataset_reader")
    if plan.data is None or not isinstance(reader, dict):
        return  # no train data read: the config's own problem is noted already
    for split, key in (("validation", "validation_data_path"), ("test", "test_data_path")):
        path = rendered.get(key)
        if not isinstance(path, str) or (split == "validation" and plan.validation is not None):
            continue
        later = (
            " (read by --test and tune-test; training does not read it)" if split == "test" else ""
        )
        if "://" not in path and not os.path.exists(path):
            plan.problem(f"{split} data {path} does not exist{later}")
            continue
        try:
            setattr(plan, split, cached_count(reader, path))
        except Exception as error:  # the reader's ConfigurationError names file and line
            plan.problem(_read_problem(split, path, error) + later)


def _check_positions(
    plan: CellPlan, embedder: Optional[Dict[str, Any]], rendered: Mapping[str, Any]
) -> None:
    """
    A split whose longest input has more wordpieces than the transformer's positions, with no
    `max_length` on the embedder to fold it, is a problem naming the file and line: the
    embedder refuses the batch that holds it (`an input has N wordpieces but the model has M
    positions`), which names neither.
    """
    positions = plan.encoder.max_positions if plan.encoder is not None else None
    if not positions or embedder is None or embedder.get("max_length") is not None:
        return
    splits = (
        ("train", "train_data_path", plan.data, "every run would fail on it"),
        ("validation", "validation_data_path", plan.validation, "every run would fail on it"),
        ("test", "test_data_path", plan.test, "--test and tune-test would fail on it"),
    )
    for split, key, count, outcome in splits:
        if count is None or count.longest_sequence <= positions:
            continue
        plan.problem(
            f"{rendered.get(key)}, {count.longest_at}: an input of {count.longest_sequence} "
            f"wordpieces, but {plan.encoder.name} has {positions} positions ({split} data: "
            f"{outcome}); shorten or remove it, or set max_length (at most {positions}) on "
            "the pretrained_transformer indexer and the embedder, so that long inputs are folded"
        )


def _estimate_cache(
    plan: CellPlan,
    embedder: Dict[str, Any],
    cache: Dict[str, Any],
    rendered: Mapping[str, Any],
    cache_directory: Optional[Path],
) -> None:
    """
    The feature cache of an fe cell whose encoder is known: the layers it stores, its folder,
    its size over the train and validation data, and `check_budget`'s verdict on it.
    """
    from allennlp_tune.modules.feature_cache import (
        check_budget,
        default_cache_directory,
        estimated_cache_bytes,
    )
    from allennlp_tune.modules.feature_cache.pooled import POOLINGS
    from allennlp_tune.modules.token_embedders.freezable import parse_layers

    plan.cache_config = cache
    total_layers = plan.encoder.num_layers + 1  # embeddings / char CNN, then each layer
    try:
        plan.cache_layers = len(
            parse_layers(embedder.get("layers", "all"), total_layers, "embedder")
        )
    except ConfigurationError as error:
        plan.notes.append(str(error))
    directory = cache.get("directory") or cache_directory or default_cache_directory()
    plan.cache_directory = Path(directory)
    if plan.data is not None:
        plan.validation = validation_count(rendered, rendered.get("dataset_reader"), plan.notes)
    model = rendered.get("model") or {}
    plan.cache_pooled = plan.head == "tune_frozen_head" and model.get("features") != "tokens"
    if plan.data is not None and plan.cache_layers is not None:
        validation = plan.validation or DataCount()
        sequences = plan.data.sequences + validation.sequences
        # A pooled entry counts as `len(POOLINGS)` wordpieces (feature_cache/pooled.py).
        plan.cache_bytes = estimated_cache_bytes(
            len(POOLINGS) * sequences
            if plan.cache_pooled
            else plan.data.wordpieces + validation.wordpieces,
            plan.cache_layers,
            plan.encoder.hidden_size,
            sequences,
        )
        try:
            plan.budget_error = check_budget(plan.cache_bytes, cache, plan.cache_directory)
        except ConfigurationError as error:
            plan.notes.append(str(error))


def block_work_fraction(mode: str, num_layers: int, cached: bool = False) -> Optional[float]:
    """
    A block mode's share of a fine-tuning epoch's work (`None` for other modes), counting each
    of the `L` layers' forward pass, activation gradients and weight gradients as one unit each
    (`3L` for ft; the embeddings' share is small). `topK` runs the forward pass through every
    layer and both backward parts through its `K` layers: `(L + 2K) / 3L`. `bottomK` tunes the
    embeddings and `K - 1` layers, so the activation gradients still run through every layer:
    `(2L + K - 1) / 3L`. A block of every group costs what ft does. `cached`: the epochs after
    the first of a `topK` block with a feature cache, which reads the frozen layers' output
    instead of running them (`prefix_cache`): `3K / 3L`.
    """
    groups = block_groups(mode)
    if groups is None or num_layers <= 0:
        return None
    side, count = groups.split(":")
    tuned = min(int(count), num_layers + 1)
    if side == "top":
        layers = min(tuned, num_layers)
        if cached and layers < num_layers:
            return layers / num_layers
        return (num_layers + 2 * layers) / (3 * num_layers)
    return min(1.0, (2 * num_layers + tuned - 1) / (3 * num_layers))


def _estimate_cost(
    plan: CellPlan, rendered: Mapping[str, Any], cost_model: Mapping[str, ModeCost]
) -> None:
    """
    The epochs of the config's trainer, and the time per epoch and peak RAM from the cost
    model's entry for the cell's mode and head (`"MODE/HEAD"` first, then `"MODE"`). A block mode
    (`top2`) without an entry of its own takes ft's, its time scaled by `block_work_fraction`
    (said in a note) and its RAM as ft's: an upper bound, since the frozen layers keep no
    gradients.
    """
    trainer = rendered.get("trainer")
    epochs = trainer.get("num_epochs") if isinstance(trainer, dict) else None
    if isinstance(epochs, int) and not isinstance(epochs, bool) and epochs > 0:
        plan.epochs = epochs
    fraction = None
    if plan.mode is not None and plan.encoder is not None and plan.encoder.family == "transformer":
        fraction = block_work_fraction(plan.mode, plan.encoder.num_layers)
    # A block mode without an entry of its own is priced from ft's (its `Mode`'s `cost_key`),
    # scaled by its share.
    record = mode_record(plan.mode) if plan.mode else None
    fallback = record.cost_key if record is not None and fraction is not None else None
    modes = (plan.mode, fallback) if fallback else (plan.mode,)
    keys = [key for mode in modes for key in (f"{mode}/{plan.head}", mode)] if plan.mode else []
    plan.cost_key = next((key for key in keys if key in cost_model), None)
    mode_cost = cost_model[plan.cost_key] if plan.cost_key else None
    if mode_cost is None or plan.encoder is None:
        return
    # Per wordpiece: L x H^2 and L x H, the cost model's two terms.
    work, linear = plan.encoder.work_scale, plan.encoder.linear_work_scale
    if fraction is not None and plan.cost_key.split("/")[0] == "ft" and work is not None:
        cached = block_work_fraction(
            plan.mode, plan.encoder.num_layers, plan.cache_config is not None
        )
        shares = f"x {fraction:.2f}"
        if plan.data is not None and cached is not None and cached != fraction:
            # The first epoch runs the frozen layers and stores their output; later ones read it.
            plan.first_epoch_seconds = mode_cost.epoch_seconds(
                plan.data.wordpieces * work * fraction,
                plan.data.wordpieces * linear * fraction,
                plan.data.wordpieces,
            )
            shares = f"x {fraction:.2f} (first epoch), x {cached:.2f} (later, from the cache)"
            fraction = cached
        plan.notes.append(
            f"{plan.mode}: time from ft's entry {shares}, the block's share of a fine-tuning "
            "epoch (`block_work_fraction`, not measured); RAM as ft's"
        )
        work, linear = work * fraction, linear * fraction
    if plan.data is not None and work is not None:
        work, linear = plan.data.wordpieces * work, plan.data.wordpieces * linear
        plan.epoch_seconds = mode_cost.epoch_seconds(work, linear, plan.data.wordpieces)
        first = mode_cost.first_epoch_seconds(work, linear, plan.data.wordpieces)
        if first is not None and plan.cache_config is not None:
            plan.first_epoch_seconds = first
        elif first is not None:  # no cache: every epoch runs the encoder
            plan.epoch_seconds = first
    instances = plan.data.instances if plan.data is not None else None
    plan.peak_rss_mb = mode_cost.peak_rss_mb(plan.encoder.params, instances, activation_work(plan))


def activation_work(plan: CellPlan) -> Optional[float]:
    """
    `B * T * L * H`, the cost model's memory term for the longest batch (`cost_model`): the
    config's batch size (32 where it sets none, AllenNLP's loaders' usual), the most wordpieces
    one train instance has, and the encoder's layers and width. None where the data or the
    encoder is unknown.
    """
    if plan.data is None or plan.encoder is None or plan.encoder.linear_work_scale is None:
        return None
    batch_size = loader_batch_size(plan.rendered or {}) or 32
    return float(batch_size * plan.data.longest) * plan.encoder.linear_work_scale


def planned_run_seconds(plan: CellPlan, cache_filled: bool = False) -> Optional[float]:
    """
    The planned seconds of the whole run at most (`trainer.num_epochs` epochs, a cached fe
    cell's first epoch apart, unless `cache_filled`: an earlier run of the cell filled the
    cache this one reads), None where unknown. Early stopping can end the run sooner.
    """
    if plan.epochs is None or plan.epoch_seconds is None:
        return None
    if plan.first_epoch_seconds is None or cache_filled:
        return plan.epochs * plan.epoch_seconds
    return plan.first_epoch_seconds + (plan.epochs - 1) * plan.epoch_seconds


def planned_total_seconds(
    plans: Sequence[CellPlan], runs: Optional[Sequence[int]] = None
) -> Optional[float]:
    """The planned seconds of every pending run of `plans` at most (`planned_run_seconds` x
    `pending_runs`, or x `runs`, one count per plan, summed over the cells with an estimate),
    None when no cell has one. A cell whose runs share its cache (`CellPlan.shares_cache`)
    pays the cache's first epoch in its first run only: charging it to every seed planned an
    MPNet fe seed that read the cache at 7:27, and it took 4:43 (bench/README.md, "A cache
    filled once")."""
    counts = [plan.pending_runs for plan in plans] if runs is None else list(runs)
    total = None
    for plan, count in zip(plans, counts):
        first = planned_run_seconds(plan)
        if first is None:
            continue
        later = planned_run_seconds(plan, cache_filled=plan.shares_cache)
        total = (total or 0.0) + (first + (count - 1) * later if count > 0 else 0.0)
    return total


def plan_grid(
    configs: Sequence[Path],
    ext_vars: Optional[Mapping[str, str]] = None,
    overrides: Optional[str] = None,
    cache_directory: Optional[Path] = None,
    cost_model: Optional[Mapping[str, ModeCost]] = None,
) -> List[CellPlan]:
    """`plan_cell` of each config, with the same ext vars, overrides, cache folder and model."""
    return [
        plan_cell(config, ext_vars, overrides, cache_directory, cost_model) for config in configs
    ]


def plan_problems(plans: Sequence[CellPlan]) -> Optional[str]:
    """The cells whose runs would fail (`CellPlan.problems`), one `stem: problem` each, or None."""
    found = [f"{plan.stem}: {problem}" for plan in plans for problem in plan.problems]
    return " | ".join(found) if found else None


def budget_failures(plans: Sequence[CellPlan]) -> Optional[str]:
    """The message refusing a grid whose cells' caches would not fit, or None."""
    over = [plan for plan in plans if plan.budget_error]
    if not over:
        return None
    return " | ".join(
        f"{plan.stem}: {plan.budget_error}; or train it without the cache "
        "(TUNE_FEATURE_CACHE=false, or no feature_cache in its embedder), or rerun with "
        "--no-plan to train anyway (entries past the budget are recomputed every epoch)"
        for plan in over
    )


__all__ = [
    "CellPlan",
    "activation_work",
    "budget_failures",
    "plan_cell",
    "plan_grid",
    "plan_problems",
    "planned_run_seconds",
    "planned_total_seconds",
    "render_config",
]
