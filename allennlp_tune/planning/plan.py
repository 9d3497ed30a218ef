"""
The planner of tune-grid and tune-compare: what each cell will cost, before anything trains.

For every cell about to run (a config with at least one seed not complete), `plan_cell`:

1. renders the config as the grid's `allennlp train` child will (the grid's ext vars, the
   first pending seed as `TUNE_SEED`, the environment, `--overrides`);
2. reads the train split lazily with the config's own `dataset_reader` (so `max_instances`,
   pair encoding and the task's filters are honoured) and counts instances, the sequences the
   encoder sees (text fields with a transformer or ELMo indexer: one cache entry each) and
   their wordpieces: a `pretrained_transformer` field's tokens are its wordpieces (special
   tokens included); a `pretrained_transformer_mismatched` field (the tagger) is split into
   wordpieces by its indexer's own tokenizer (`intra_word_tokenize`, specials included); an
   ELMo field counts words. Nothing is indexed or embedded, but the reader tokenizes every
   text: SST-2's 67,349 sentences take 4 s on an idle core (MiniLM tokenizer; 9 s while a
   training run holds both cores), CoNLL-2003's 14,041 sentences 9 s, and 392,702 MNLI-sized
   pairs 224 s while a training run held both cores (two tokenizer calls per pair). Every file
   is read whole: the counts are exact, not sampled;
3. reads the encoder's size from its `config.json` only (`transformers.AutoConfig`: never a
   weight; a folder holding `config.json` and the tokenizer files is enough): hidden layers
   `L`, width `H` and an estimate of its parameters (the BERT layout: embeddings plus `L` x
   (attention, feed-forward, layer norms); exact for BERT and MiniLM, within a few percent
   for the other families). ELMo's layers and width come from its options file when it is a
   local file;
4. for a feature-extraction (`fe`) cell whose embedder has a `feature_cache`: the cache's size,
   `estimated_cache_bytes(wordpieces, mixed layers, H, sequences)` =
   `2 * wordpieces * layers * H` bytes of float16 plus about 2.2 KB per entry (header and block
   rounding), with `layers` the number the config mixes (`"all"`: `L + 1`), and the wordpieces
   and sequences of the train split and of the validation data (`validation_data_path`, read
   with `validation_dataset_reader` when there is one): the trainer's validation runs through
   the same embedder, so its entries are stored too (on SST-2 with the first 48 sentences of
   each split, the validation entries held 65% of the payload); and
   `check_budget` of that against the cell's `feature_cache` settings in the folder the run
   will use (its `directory`, else `TUNE_FEATURE_CACHE_DIR`, else the grid's shared
   `RESULTS_DIR/.feature_cache`);
5. the expected time per epoch and peak RAM from `COST_MODEL` (below); "n/a" where the table
   has no measurement for the mode, or the encoder's size is unknown. A cached `fe` cell shows
   its first epoch (the encoder runs and the features are stored) apart from the later ones
   (read from the cache), where the model has both; an `fe` cell without a cache pays the
   first epoch's cost every epoch. With the config's `trainer.num_epochs`, the whole run's
   time at most (early stopping can end it sooner).

`run_grid` prints the plan (stderr; stdout with `--plan-only`, which then stops) and refuses
the whole grid, before any run folder is written, when a cell's cache would not fit its budget,
with `check_budget`'s message naming the setting to change (`feature_cache.disk_mb`,
`feature_cache.min_free_mb`, `feature_cache.directory` / `TUNE_FEATURE_CACHE_DIR`, or no cache:
`TUNE_FEATURE_CACHE=false`). `--no-plan` skips the planner altogether. A cell that cannot be
planned (a config without a reader, a missing data file) gets "n/a" and a note; it is not
refused (the run itself will say what is wrong). Each cell is checked on its own: cells of one
grid that share a cache folder and encoder share entries (fe and sf of a task), so summing them
would overstate the need.

# The cost model

Per mode, with `W` the train split's wordpieces, `L` x `H`^2 the encoder's FLOP scale and `P`
the encoder's parameters:

    seconds per epoch ~ a + b * W * L * H^2        peak RSS (MB) ~ c + d * P + g * N

with `N` the train split's instances (the loaded dataset grows the process: 8 to 29 KB per
SST-2 sentence on the growth bench, by mode; bench/README.md)

and, for a cached `fe` run, its first epoch apart: `first_a + first_b * W * L * H^2`, with `a`
and `b` then the epochs after it (on the full CoNLL-2003 split the first took 2.5x a later one).

`fit_cost_model(run_dirs)` fits `a`, `b`, `c` and `d` per mode from finished or running runs
(their `cost.json`: `mean_epoch_seconds`, `peak_rss_mb`; for runs from before `cost.json`, the
`training_duration` over the epochs and `peak_worker_0_memory_MB` of `metrics.json`), `W`
counted as above from each run's `config.json` and `L`, `H`, `P` from its encoder's
`config.json`. Where a mode's runs have more than one task head (the model's `type`), each
head also gets an entry of its own, `"MODE/HEAD"` (`"fe/tune_bcn"`), which the planner prefers
to the mode's pooled one: a cached fe epoch is mostly the head's work (SST-2's BCN holds 21 M
trainable parameters, the CoNLL-2003 tagger 1.9 M), which `W * L * H^2` does not see. A cached
`fe` run with its `epoch_seconds` gives its first epoch to
`first_a`/`first_b` and the mean of the rest (if any) to `a`/`b`; fit on runs whose cache
started empty (a grid's first seed, or a cache folder of its own), since a later seed of a grid
finds the features stored and its first epoch is a cached one. Least squares where the runs of
a mode differ in `W * L * H^2` (or `P`) by more than 10%; otherwise only the slope can be told
from them: `a = 0` (time proportional to the work) and `c = BASE_RSS_MB`, the measured peak RSS
of a process that has imported torch, AllenNLP and this plugin and built nothing, with `d` the
mean of `(rss - c) / P`. `g` is fitted (least squares beside `P`) where the runs differ in `N` by
more than 10% and the slope is positive, else it is None (no per-instance term). Runs on a GPU
(`cost.json`'s `peak_gpu_mb` set) are skipped: they say nothing about CPU time.

It is a 2-core CPU estimate (`torch` with 2 threads, `cuda_device: -1`), and a rough one: the
model knows the encoder's work but not the task head's (a cached fe epoch is mostly the head:
the BiLSTM tagger of CoNLL-2003, SST-2's classifier), nor the validation data's, and the runs
are all MiniLM (`P` never varies, so `c` is the assumed base and `d` extrapolates MiniLM's
memory per parameter to other encoders). Treat the numbers as "minutes or hours, GB or tens of
GB"; `COST_MODEL` below says what each mode was fitted on, and docs/RESULTS.md section 12
compares the estimates with full-size runs.
"""

import json
import logging
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, TextIO, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_tune.quiet import QUIET_READER_LOGGERS, quiet_loggers
from allennlp_tune.rundir import (
    CONFIG_NAME,
    COST_NAME,
    METRICS_NAME,
    config_stem,
    parse_run_name,
    read_json,
)

logger = logging.getLogger(__name__)


TRANSFORMER_EMBEDDERS = (
    "tune_transformer",
    "tune_transformer_mismatched",
    "pretrained_transformer",
    "pretrained_transformer_mismatched",
)
ELMO_EMBEDDERS = ("tune_elmo", "elmo_token_embedder")
FE_MODE = "feature_extraction"
# Peak RSS (MB) of `python -c "import torch, allennlp.commands, allennlp_tune"` on the
# development machine (Python 3.11, torch CPU): what a run holds before it builds anything.
BASE_RSS_MB = 890.0
# Below this relative spread of x, a mode's runs cannot separate the intercept from the slope.
MIN_SPREAD = 0.10


@dataclass(frozen=True)
class ModeCost:
    """
    One mode's coefficients: seconds per epoch `a + b * W * L * H^2`, peak RSS MB `c + d * P`
    (see the module docstring); `runs` and `fitted_on` say what they come from.
    """

    a: Optional[float]
    b: Optional[float]
    c: Optional[float]
    d: Optional[float]
    runs: int = 0
    fitted_on: str = ""
    # A cached fe run's first epoch (encoder run, features stored); a and b are then the later
    # epochs. None for every other mode.
    first_a: Optional[float] = None
    first_b: Optional[float] = None
    # Peak RSS MB per train instance; None where the runs did not tell it.
    g: Optional[float] = None

    def epoch_seconds(self, work: Optional[float]) -> Optional[float]:
        if self.b is None or work is None:
            return None
        return (self.a or 0.0) + self.b * work

    def first_epoch_seconds(self, work: Optional[float]) -> Optional[float]:
        if self.first_b is None or work is None:
            return None
        return (self.first_a or 0.0) + self.first_b * work

    def peak_rss_mb(
        self, params: Optional[int], instances: Optional[int] = None
    ) -> Optional[float]:
        if self.d is None or params is None:
            return None
        per_instance = (self.g or 0.0) * instances if instances is not None else 0.0
        return (self.c or 0.0) + self.d * params + per_instance


# Fitted with `fit_cost_model` on this machine (2 CPU cores, no GPU) to MiniLM
# (all-MiniLM-L6-v2: L = 6, H = 384, P = 22,565,376) runs, then pasted from
# `format_cost_model(...)`; `P` never varies, so `c` is BASE_RSS_MB and `d` scales MiniLM's
# memory to other encoders.
# - "ft", "sf", "bitfit", "lora" and "fe/tune_bcn": the growth bench (bench/bench_growth.py,
#   bench/README.md): `sst2_bert_<mode>` on the first 1k, 4k, 16k and all 67,349 SST-2 sentences,
#   each alone on the idle machine, with its own feature cache (REFIT:
#   `fit_cost_model(sorted(Path("runs/growth").glob("n_*/<mode>/*/seed_1")))`; ft also with the
#   4k point run again, runs/growth_repeat). Every mode has all four sizes.
#   The lines through ft's, lora's and fe's cached epochs had negative intercepts, so a = 0
#   (the mean cost per unit of work). Out of sample, the ft entry says 232 s per epoch and
#   2.1 GB for STS-B ft (5,749 pairs), which took 181 s and 2.9 GB (docs/RESULTS.md section 12).
# - "fe" (pooled, for heads without an entry: the pair tasks' ESIM): tune-compare's SICK-E and
#   STS-B fe cells, 2 epochs each, on a loaded machine (a = 0, c = BASE_RSS_MB).
# - "fe/tune_tagger", "ft/tune_tagger": the full CoNLL-2003 runs of docs/RESULTS.md section 12
#   (one run each: they reproduce those cells, scaled by W x L x H^2).
COST_MODEL: Dict[str, ModeCost] = {
    # tune-compare's sick_e / sts_b fe cells (runs/real/compare)
    "fe": ModeCost(a=0.0, b=8.55011e-10, c=890.0, d=4.63155e-05, runs=4),
    # the growth bench: sst2_bert_fe at 1k, 4k, 16k and 67,349 sentences (the BCN: 21.0 M
    # trainable parameters)
    "fe/tune_bcn": ModeCost(
        a=0.0,
        b=1.54958e-09,
        c=890.0,
        d=5.32217e-05,
        first_a=8.5384,
        first_b=1.77302e-09,
        g=0.00942093,
        runs=4,
    ),
    # conll2003_bert_fe/seed_1 (the BiLSTM tagger: 1.9 M trainable parameters)
    "fe/tune_tagger": ModeCost(
        a=0.0, b=4.60917e-10, c=890.0, d=5.19734e-05, runs=1, first_a=0.0, first_b=1.08621e-09
    ),
    # the growth bench: sst2_bert_ft at 1k, 4k (twice), 16k and 67,349 sentences
    "ft": ModeCost(a=0.0, b=1.63793e-09, c=890.0, d=5.33123e-05, g=0.00787388, runs=5),
    # conll2003_bert_ft/seed_1
    "ft/tune_tagger": ModeCost(a=0.0, b=1.86579e-09, c=890.0, d=0.000114259, runs=1),
    # the growth bench at 1k, 4k, 16k and 67,349 sentences (3 epochs, the first frozen: their
    # mean)
    "sf": ModeCost(a=0.243967, b=1.28005e-09, c=890.0, d=6.74168e-05, g=0.0107354, runs=4),
    # the growth bench at 1k, 4k, 16k and 67,349 sentences (lr 3e-3)
    "bitfit": ModeCost(a=5.58552, b=8.47648e-10, c=890.0, d=3.51345e-05, g=0.00809187, runs=4),
    # the growth bench at 1k, 4k, 16k and 67,349 sentences (r 8, query / value, lr 5e-4)
    "lora": ModeCost(a=0.0, b=1.05158e-09, c=890.0, d=4.31752e-05, g=0.00897627, runs=4),
}


@dataclass
class EncoderSize:
    """What the planner knows of an encoder, from its config.json (or ELMo options) alone."""

    name: str
    family: str  # "transformer" or "elmo"
    num_layers: int  # hidden layers (transformer) or biLSTM layers (ELMo)
    hidden_size: int  # the width of one layer's features
    params: Optional[int] = None  # estimated from the config; None where unknown

    @property
    def work_scale(self) -> Optional[float]:
        """L x H^2, the FLOP scale of one wordpiece through the encoder (transformers only)."""
        if self.family != "transformer":
            return None
        return float(self.num_layers * self.hidden_size**2)


@dataclass
class DataCount:
    instances: int = 0
    sequences: int = 0
    wordpieces: int = 0
    seconds: float = 0.0


@dataclass
class CellPlan:
    """The planner's estimate for one cell (a config about to run)."""

    config: Path
    stem: str
    mode: Optional[str] = None
    data: Optional[DataCount] = None
    validation: Optional[DataCount] = None  # counted for the cache estimate only
    encoder: Optional[EncoderSize] = None
    cache_layers: Optional[int] = None
    cache_config: Optional[Dict[str, Any]] = None
    cache_directory: Optional[Path] = None
    cache_bytes: Optional[int] = None
    budget_error: Optional[str] = None
    head: Optional[str] = None  # the model's registered type
    cost_key: Optional[str] = None  # the COST_MODEL entry the estimates came from
    epoch_seconds: Optional[float] = None  # every epoch, or those after the first one below
    first_epoch_seconds: Optional[float] = None  # a cached fe cell's first epoch
    epochs: Optional[int] = None  # the config's trainer.num_epochs
    peak_rss_mb: Optional[float] = None
    notes: List[str] = field(default_factory=list)
    # The notes that mean a run of this cell cannot train (no config, encoder or train data).
    problems: List[str] = field(default_factory=list)

    def problem(self, text: str) -> None:
        """A note that a run of this cell would fail on (shown among the notes too)."""
        self.notes.append(text)
        self.problems.append(text)


# Reading the data ----------------------------------------------------------------------------


def _field_wordpieces(text_field) -> Optional[Tuple[str, int]]:
    """(kind, count) of a text field the encoder sees, or None for another field."""
    from allennlp.data.token_indexers import (
        ELMoTokenCharactersIndexer,
        PretrainedTransformerIndexer,
        PretrainedTransformerMismatchedIndexer,
    )

    indexers = list((getattr(text_field, "_token_indexers", None) or {}).values())
    for indexer in indexers:
        if isinstance(indexer, PretrainedTransformerMismatchedIndexer):
            words = [token.text for token in text_field.tokens]
            wordpieces, _ = indexer._allennlp_tokenizer.intra_word_tokenize(words)
            return "transformer", len(wordpieces)
        if isinstance(indexer, PretrainedTransformerIndexer):
            return "transformer", len(text_field.tokens)
    for indexer in indexers:
        if isinstance(indexer, ELMoTokenCharactersIndexer):
            return "elmo", len(text_field.tokens)
    return None


def count_wordpieces(reader_config: Mapping[str, Any], data_path: str) -> DataCount:
    """
    Instances, encoder sequences and wordpieces of `data_path` as the reader built from
    `reader_config` (a rendered config's `dataset_reader`) yields it; see the module docstring.
    """
    from allennlp.common import Params
    from allennlp.data import DatasetReader
    from allennlp.data.fields import ListField, TextField

    # Quiet: not a line per reader parameter, nor the reader's own INFO lines (the label set),
    # before the command has trained anything; the runs' logs have them.
    quiet = quiet_loggers(*QUIET_READER_LOGGERS)
    with quiet:
        reader = DatasetReader.from_params(Params(json.loads(json.dumps(reader_config))))
    count = DataCount()
    started = time.monotonic()

    def visit(value) -> None:
        if isinstance(value, TextField):
            found = _field_wordpieces(value)
            if found is not None:
                count.sequences += 1
                count.wordpieces += found[1]
        elif isinstance(value, ListField):
            for inner in value.field_list:
                visit(inner)

    with quiet:
        for instance in reader.read(data_path):
            reader.apply_token_indexers(instance)
            count.instances += 1
            for value in instance.fields.values():
                visit(value)
    count.seconds = time.monotonic() - started
    return count


# The encoder ---------------------------------------------------------------------------------


def _bert_layout_params(config) -> int:
    """Parameters of a BERT-layout encoder from its configuration (no pooler)."""
    hidden = int(config.hidden_size)
    layers = int(config.num_hidden_layers)
    inner = int(getattr(config, "intermediate_size", None) or 4 * hidden)
    embedding = int(getattr(config, "embedding_size", None) or hidden)
    vocab = int(getattr(config, "vocab_size", 0) or 0)
    positions = int(getattr(config, "max_position_embeddings", 0) or 0)
    types = int(getattr(config, "type_vocab_size", 0) or 0)
    embeddings = (vocab + positions + types) * embedding + 2 * embedding
    if embedding != hidden:  # ALBERT / ELECTRA-small project the embeddings
        embeddings += embedding * hidden + hidden
    per_layer = 4 * hidden * hidden + 4 * hidden + 2 * hidden * inner + inner + hidden + 4 * hidden
    return embeddings + layers * per_layer


def transformer_size(model_name: str) -> EncoderSize:
    """The encoder's layers, width and (estimated) parameters from its config.json only."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_name)
    return EncoderSize(
        name=model_name,
        family="transformer",
        num_layers=int(config.num_hidden_layers),
        hidden_size=int(config.hidden_size),
        params=_bert_layout_params(config),
    )


def elmo_size(options_file: str) -> Optional[EncoderSize]:
    """ELMo's biLSTM layers and feature width (2 x projection) from a local options file."""
    if not options_file or "://" in options_file or not os.path.isfile(options_file):
        return None
    with open(options_file, encoding="utf-8") as options:
        lstm = json.load(options)["lstm"]
    return EncoderSize(
        name=options_file,
        family="elmo",
        num_layers=int(lstm["n_layers"]),
        hidden_size=2 * int(lstm["projection_dim"]),
    )


def find_embedder(config: Any) -> Optional[Dict[str, Any]]:
    """The first transformer or ELMo token embedder in a rendered model config."""
    if isinstance(config, dict):
        if config.get("type") in TRANSFORMER_EMBEDDERS + ELMO_EMBEDDERS and (
            "model_name" in config or "options_file" in config
        ):
            return config
        values: Iterable[Any] = config.values()
    elif isinstance(config, list):
        values = config
    else:
        return None
    for value in values:
        found = find_embedder(value)
        if found is not None:
            return found
    return None


# One cell ------------------------------------------------------------------------------------


def render_config(
    config: Path, ext_vars: Optional[Mapping[str, str]] = None, overrides: Optional[str] = None
) -> Dict[str, Any]:
    """The config as the grid's child renders it (environment + ext vars, overrides)."""
    from allennlp.common import Params

    variables = {**os.environ, **(ext_vars or {})}
    params = Params.from_file(str(config), params_overrides=overrides or "", ext_vars=variables)
    return params.as_dict(quiet=True)


# Wordpiece counts per (reader config, data path, file size and time): a planner run (or a fit)
# reads each file once however many cells or runs read it.
_COUNTS: Dict[str, DataCount] = {}


def _cached_count(reader_config: Mapping[str, Any], data_path: str) -> DataCount:
    try:
        stat = os.stat(data_path)
        stamp = (stat.st_size, stat.st_mtime_ns)
    except OSError:
        stamp = None
    key = json.dumps([reader_config, os.path.abspath(data_path), stamp], sort_keys=True)
    if key not in _COUNTS:
        _COUNTS[key] = count_wordpieces(reader_config, data_path)
    return _COUNTS[key]


def _validation_count(
    rendered: Mapping[str, Any], reader_config: Mapping[str, Any], notes: List[str]
) -> Optional[DataCount]:
    """The validation data's count (its own reader if the config has one), else None + a note."""
    path = rendered.get("validation_data_path")
    if not isinstance(path, str):
        return None
    reader = rendered.get("validation_dataset_reader") or reader_config
    if "://" not in path and not os.path.exists(path):
        notes.append(f"validation data {path} does not exist: the cache estimate leaves it out")
        return None
    try:
        return _cached_count(reader, path)
    except Exception as error:
        notes.append(f"validation data not readable: {type(error).__name__}: {error}"[:300])
        return None


def plan_cell(
    config: Path,
    ext_vars: Optional[Mapping[str, str]] = None,
    overrides: Optional[str] = None,
    cache_directory: Optional[Path] = None,
    cost_model: Optional[Mapping[str, ModeCost]] = None,
    rendered: Optional[Dict[str, Any]] = None,
) -> CellPlan:
    """
    The estimate for one cell (module docstring). `cache_directory`: where the run's feature
    cache goes when its `feature_cache` names no `directory` (tune-grid's shared folder or the
    user's `TUNE_FEATURE_CACHE_DIR`). `rendered`: the config already rendered (else rendered
    here). Never raises for a cell it cannot plan: the reason goes into `notes`.
    """
    from allennlp_tune.modules.feature_cache import (
        check_budget,
        default_cache_directory,
        estimated_cache_bytes,
    )
    from allennlp_tune.modules.token_embedders.freezable import parse_layers

    config = Path(config)
    cost_model = COST_MODEL if cost_model is None else cost_model
    stem = config_stem(config)
    plan = CellPlan(config=config, stem=stem)
    name, _ = parse_run_name(stem)
    try:
        if rendered is None:
            rendered = render_config(config, ext_vars, overrides)
    except Exception as error:  # Jsonnet's RuntimeError, a bad override
        plan.problem(f"does not render: {str(error).strip().splitlines()[0][:200]}")
        return plan

    model_config = rendered.get("model")
    if isinstance(model_config, dict) and isinstance(model_config.get("type"), str):
        plan.head = model_config["type"]
    embedder = find_embedder(model_config)
    embedder_mode = (embedder or {}).get("mode")
    plan.mode = name.mode if name else None
    if plan.mode is None and embedder_mode == FE_MODE:
        plan.mode = "fe"

    if embedder is not None:
        try:
            if "model_name" in embedder:
                plan.encoder = transformer_size(embedder["model_name"])
            else:
                plan.encoder = elmo_size(embedder.get("options_file", ""))
                if plan.encoder is None:
                    plan.notes.append("ELMo options file is not a local file: size unknown")
        except Exception as error:
            plan.problem(f"encoder config not readable: {type(error).__name__}: {error}")
    else:
        plan.notes.append("no transformer or ELMo embedder found")

    reader_config = rendered.get("dataset_reader")
    train_path = rendered.get("train_data_path")
    if not isinstance(reader_config, dict) or not isinstance(train_path, str):
        plan.notes.append("no dataset_reader or train_data_path")
    elif "://" not in train_path and not os.path.exists(train_path):
        plan.problem(f"train data {train_path} does not exist")
    else:
        try:
            plan.data = _cached_count(reader_config, train_path)
        except Exception as error:
            plan.problem(f"train data not readable: {type(error).__name__}: {error}"[:300])

    cache = (embedder or {}).get("feature_cache")
    if embedder_mode == FE_MODE and isinstance(cache, dict) and plan.encoder is not None:
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
            plan.validation = _validation_count(rendered, reader_config, plan.notes)
        if plan.data is not None and plan.cache_layers is not None:
            validation = plan.validation or DataCount()
            plan.cache_bytes = estimated_cache_bytes(
                plan.data.wordpieces + validation.wordpieces,
                plan.cache_layers,
                plan.encoder.hidden_size,
                plan.data.sequences + validation.sequences,
            )
            try:
                plan.budget_error = check_budget(plan.cache_bytes, cache, plan.cache_directory)
            except ConfigurationError as error:
                plan.notes.append(str(error))

    trainer = rendered.get("trainer")
    epochs = trainer.get("num_epochs") if isinstance(trainer, dict) else None
    if isinstance(epochs, int) and not isinstance(epochs, bool) and epochs > 0:
        plan.epochs = epochs
    for key in (f"{plan.mode}/{plan.head}", plan.mode) if plan.mode else ():
        if key in cost_model:
            plan.cost_key = key
            break
    mode_cost = cost_model[plan.cost_key] if plan.cost_key else None
    if mode_cost is not None and plan.encoder is not None:
        work = plan.encoder.work_scale
        if plan.data is not None and work is not None:
            work = plan.data.wordpieces * work
            plan.epoch_seconds = mode_cost.epoch_seconds(work)
            first = mode_cost.first_epoch_seconds(work)
            if first is not None and plan.cache_config is not None:
                plan.first_epoch_seconds = first
            elif first is not None:  # no cache: every epoch runs the encoder
                plan.epoch_seconds = first
        instances = plan.data.instances if plan.data is not None else None
        plan.peak_rss_mb = mode_cost.peak_rss_mb(plan.encoder.params, instances)
    return plan


def run_seconds(plan: CellPlan) -> Optional[float]:
    """The whole run at most (`trainer.num_epochs` epochs), None where unknown."""
    if plan.epochs is None or plan.epoch_seconds is None:
        return None
    if plan.first_epoch_seconds is None:
        return plan.epochs * plan.epoch_seconds
    return plan.first_epoch_seconds + (plan.epochs - 1) * plan.epoch_seconds


def plan_grid(
    configs: Sequence[Path],
    ext_vars: Optional[Mapping[str, str]] = None,
    overrides: Optional[str] = None,
    cache_directory: Optional[Path] = None,
    cost_model: Optional[Mapping[str, ModeCost]] = None,
) -> List[CellPlan]:
    return [
        plan_cell(config, ext_vars, overrides, cache_directory, cost_model) for config in configs
    ]


# Output --------------------------------------------------------------------------------------


def _size(num_bytes: Optional[float]) -> str:
    if num_bytes is None:
        return "n/a"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:.1f} {unit}"
    return f"{int(num_bytes)} B"


def _duration(seconds: Optional[float]) -> str:
    if seconds is None:
        return "n/a"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def render_plan(plans: Sequence[CellPlan]) -> str:
    """The plan as a Markdown table, then the formula, notes and budget problems per cell."""
    lines = [
        "| cell | instances | wordpieces | encoder (L x H, params) | feature cache | "
        "peak RAM | time / epoch | whole run, at most |",
        "|---|---|---|---|---|---|---|---|",
    ]
    details: List[str] = []
    for plan in plans:
        data = plan.data
        encoder = plan.encoder
        if encoder is None:
            encoder_text = "n/a"
        else:
            params = f", {encoder.params / 1e6:.1f} M" if encoder.params else ""
            encoder_text = f"{encoder.num_layers} x {encoder.hidden_size}{params}"
        if plan.cache_config is None:
            cache_text = "none"
        elif plan.cache_bytes is None:
            cache_text = "n/a"
        else:
            cache_text = _size(plan.cache_bytes) + (" (over budget)" if plan.budget_error else "")
        rss = None if plan.peak_rss_mb is None else plan.peak_rss_mb * 2**20
        epoch_text = _duration(plan.epoch_seconds)
        if plan.first_epoch_seconds is not None and plan.epoch_seconds is not None:
            epoch_text = f"{_duration(plan.first_epoch_seconds)} first, then {epoch_text}"
        total = run_seconds(plan)
        total_text = "n/a" if total is None else f"{_duration(total)} ({plan.epochs} epochs)"
        lines.append(
            f"| {plan.stem} | {f'{data.instances:,}' if data else 'n/a'} | "
            f"{f'{data.wordpieces:,}' if data else 'n/a'} | {encoder_text} | {cache_text} | "
            f"{_size(rss)} | {epoch_text} | {total_text} |"
        )
        if data is not None:
            per = data.wordpieces / data.instances if data.instances else 0.0
            details.append(
                f"{plan.stem}: {data.instances:,} instances, {data.sequences:,} sequences, "
                f"{data.wordpieces:,} wordpieces ({per:.1f} per instance), counted in "
                f"{data.seconds:.1f} s"
            )
        if plan.cache_bytes is not None and data is not None and encoder is not None:
            validation = plan.validation or DataCount()
            wordpieces = f"{data.wordpieces + validation.wordpieces:,} wordpieces"
            entries = f"{data.sequences + validation.sequences:,} entries"
            if plan.validation is not None:
                wordpieces += f" ({data.wordpieces:,} train + {validation.wordpieces:,} validation)"
                entries += f" ({data.sequences:,} + {validation.sequences:,})"
            details.append(
                f"{plan.stem}: cache = 2 B x {wordpieces} x {plan.cache_layers} layers x "
                f"{encoder.hidden_size} + {entries} x 2.2 KB = {_size(plan.cache_bytes)} in "
                f"{plan.cache_directory}"
            )
        if plan.cost_key is not None:
            details.append(f"{plan.stem}: time and RAM from COST_MODEL[{plan.cost_key!r}]")
        for note in plan.notes:
            details.append(f"{plan.stem}: {note}")
        if plan.budget_error:
            details.append(f"{plan.stem}: OVER BUDGET: {plan.budget_error}")
    modes = sorted({plan.mode for plan in plans if plan.mode and plan.mode in COST_MODEL})
    footer = (
        "Peak RAM and time per epoch: 2-core CPU cost model fitted on MiniLM runs "
        f"(allennlp_tune/planning/plan.py; modes with measurements: {', '.join(modes) or 'none'}"
        "); n/a where no measurement exists."
    )
    return "\n".join(lines + [""] + details + ([""] if details else []) + [footer]) + "\n"


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


def print_plan(plans: Sequence[CellPlan], stream: Optional[TextIO] = None) -> None:
    stream = stream or sys.stderr
    stream.write(render_plan(plans))
    stream.flush()


# The cost model ------------------------------------------------------------------------------


@dataclass
class CostPoint:
    """One run's measurement, for `fit_cost_model`."""

    run_dir: Path
    mode: str
    work: float  # W x L x H^2
    params: int
    epoch_seconds: Optional[float]
    peak_rss_mb: Optional[float]
    first_epoch_seconds: Optional[float] = None  # a cached fe run's first epoch
    head: Optional[str] = None  # the model's registered type
    instances: int = 0  # the train split's


def _duration_seconds(text: Any) -> Optional[float]:
    """AllenNLP's `training_duration`, "H:MM:SS.ffffff" (maybe "N day(s), ..."), in seconds."""
    if not isinstance(text, str):
        return None
    match = re.fullmatch(r"(?:(\d+) days?, )?(\d+):(\d\d):(\d\d(?:\.\d+)?)", text.strip())
    if not match:
        return None
    days, hours, minutes, seconds = match.groups()
    return int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def measurement(run_dir: Path, cost: Any = None) -> Tuple[Optional[float], Optional[float]]:
    """
    (mean seconds per epoch, peak RSS MB) from cost.json, else metrics.json; None if none.
    `cost`: cost.json's content when the caller has read it already.
    """
    if cost is None:
        cost = read_json(Path(run_dir) / COST_NAME)
    if isinstance(cost, dict) and (cost.get("mean_epoch_seconds") or cost.get("peak_rss_mb")):
        return cost.get("mean_epoch_seconds"), cost.get("peak_rss_mb")
    metrics = read_json(Path(run_dir) / METRICS_NAME)
    if not isinstance(metrics, dict):
        return None, None
    seconds = _duration_seconds(metrics.get("training_duration"))
    epochs = metrics.get("training_epochs", metrics.get("epoch"))
    per_epoch = None
    if seconds is not None and isinstance(epochs, int) and epochs >= 0:
        per_epoch = seconds / (epochs + 1)
    return per_epoch, metrics.get("peak_worker_0_memory_MB")


def cost_point(run_dir: Path) -> Optional[CostPoint]:
    """The measurement and the size of the work of one run directory, None if unusable."""
    run_dir = Path(run_dir)
    config = read_json(run_dir / CONFIG_NAME)
    if not isinstance(config, dict):
        return None
    cost = read_json(run_dir / COST_NAME)
    if isinstance(cost, dict) and cost.get("peak_gpu_mb") is not None:
        return None  # trained on a GPU: nothing to say about CPU time or RAM
    seconds, rss = measurement(run_dir, cost)
    if seconds is None and rss is None:
        return None
    name, _ = parse_run_name(run_dir.parent.name)
    mode = name.mode if name else None
    plan = plan_cell(run_dir / CONFIG_NAME, rendered=config, cost_model={})
    mode = mode or plan.mode
    encoder = plan.encoder
    if mode is None or plan.data is None or encoder is None or encoder.work_scale is None:
        return None
    first = None
    epochs = cost.get("epoch_seconds") if isinstance(cost, dict) else None
    if mode == "fe" and plan.cache_config is not None and isinstance(epochs, list) and epochs:
        # The first epoch runs the encoder and stores the features; the later ones read them.
        first = float(epochs[0])
        seconds = sum(epochs[1:]) / len(epochs[1:]) if len(epochs) > 1 else None
    return CostPoint(
        run_dir=run_dir,
        mode=mode,
        work=plan.data.wordpieces * encoder.work_scale,
        params=int(encoder.params or 0),
        epoch_seconds=seconds,
        peak_rss_mb=rss,
        first_epoch_seconds=first,
        head=plan.head,
        instances=plan.data.instances,
    )


def _line(xs: Sequence[float], ys: Sequence[float], base: float) -> Tuple[float, float]:
    """(intercept, slope) by least squares; through `base` when the x's do not spread."""
    mean_x = sum(xs) / len(xs)
    if len(xs) >= 2 and _spread(xs) > MIN_SPREAD:
        mean_y = sum(ys) / len(ys)
        sxx = sum((x - mean_x) ** 2 for x in xs)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sxx
        intercept = mean_y - slope * mean_x
        if slope > 0 and intercept >= 0:
            return intercept, slope
    return base, sum((y - base) / x for x, y in zip(xs, ys)) / len(xs)


def _spread(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return (max(values) - min(values)) / mean if mean else 0.0


def _memory_fit(points: Sequence[CostPoint]) -> Tuple[float, float, Optional[float]]:
    """
    (c, d, g) of peak RSS `c + d * P + g * N`: `g` by least squares beside `P` (or beside the
    constant alone, when `P` does not spread) where `N` spreads and its slope is positive;
    otherwise None and `c`, `d` as `_line` fits them.
    """
    import numpy

    params = [float(p.params) for p in points]
    instances = [float(p.instances) for p in points]
    rss = [p.peak_rss_mb for p in points]
    if len(points) >= 2 and _spread(instances) > MIN_SPREAD:
        varies = _spread(params) > MIN_SPREAD
        columns = [[1.0] * len(points)] + ([params] if varies else []) + [instances]
        if len(points) >= len(columns):
            solution = numpy.linalg.lstsq(numpy.array(columns).T, numpy.array(rss), rcond=None)
            coefficients = [float(value) for value in solution[0]]
            g = coefficients[-1]
            if g > 0:
                if varies and coefficients[0] >= 0 and coefficients[1] > 0:
                    return coefficients[0], coefficients[1], g
                if not varies and coefficients[0] > BASE_RSS_MB:
                    # One encoder: c is the assumed base and d carries the rest of the constant.
                    mean_params = sum(params) / len(params)
                    return BASE_RSS_MB, (coefficients[0] - BASE_RSS_MB) / mean_params, g
    c, d = _line(params, rss, BASE_RSS_MB)
    return c, d, None


def fit_cost_model(run_dirs: Iterable[Path]) -> Dict[str, ModeCost]:
    """
    Per mode, `a`, `b`, `c`, `d` of the module docstring's cost model from the run directories
    (each holding `config.json` and `cost.json` or `metrics.json`; others are skipped). A mode
    without usable runs is left out (the planner prints "n/a" for it).
    """
    points: Dict[str, List[CostPoint]] = {}
    for run_dir in run_dirs:
        if not Path(run_dir).is_dir():
            continue
        point = cost_point(Path(run_dir))
        if point is not None:
            points.setdefault(point.mode, []).append(point)
    for mode, runs in list(points.items()):
        heads = {point.head for point in runs}
        if len(heads) > 1:  # each head on its own too (module docstring)
            for point in runs:
                if point.head is not None:
                    points.setdefault(f"{mode}/{point.head}", []).append(point)
    model: Dict[str, ModeCost] = {}
    for mode, runs in sorted(points.items()):
        timed = [p for p in runs if p.epoch_seconds and p.work > 0]
        sized = [p for p in runs if p.peak_rss_mb and p.params > 0]
        firsts = [p for p in runs if p.first_epoch_seconds and p.work > 0]
        a = b = c = d = first_a = first_b = None
        if timed:
            a, b = _line([p.work for p in timed], [p.epoch_seconds for p in timed], 0.0)
        if firsts:
            first_a, first_b = _line(
                [p.work for p in firsts], [p.first_epoch_seconds for p in firsts], 0.0
            )
        g = None
        if sized:
            c, d, g = _memory_fit(sized)
        fitted_on = ", ".join(sorted(f"{p.run_dir.parent.name}/{p.run_dir.name}" for p in runs))
        model[mode] = ModeCost(
            a=a,
            b=b,
            c=c,
            d=d,
            runs=len(runs),
            fitted_on=fitted_on,
            first_a=first_a,
            first_b=first_b,
            g=g,
        )
    return model


def format_cost_model(model: Mapping[str, ModeCost]) -> str:
    """`COST_MODEL`'s source text for a fitted model."""
    lines = ["COST_MODEL: Dict[str, ModeCost] = {"]
    for mode, cost in model.items():
        pairs = [("a", cost.a), ("b", cost.b), ("c", cost.c), ("d", cost.d)]
        if cost.first_b is not None:
            pairs += [("first_a", cost.first_a), ("first_b", cost.first_b)]
        if cost.g is not None:
            pairs += [("g", cost.g)]
        values = ", ".join(
            f"{key}={'None' if value is None else f'{value:.6g}'}" for key, value in pairs
        )
        lines.append(f"    # {cost.fitted_on}")
        lines.append(f"    {mode!r}: ModeCost({values}, runs={cost.runs}),")
    lines.append("}")
    return "\n".join(lines)


__all__ = [
    "COST_MODEL",
    "CellPlan",
    "ModeCost",
    "budget_failures",
    "count_wordpieces",
    "fit_cost_model",
    "format_cost_model",
    "plan_cell",
    "plan_grid",
    "print_plan",
    "render_plan",
    "run_seconds",
    "transformer_size",
]
