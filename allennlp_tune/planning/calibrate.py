"""
Calibration: the plan's time per epoch measured on this machine instead of read from the cost
model, which was fitted on one 2-core machine and can be off by a factor on another.

For a cell whose train data the planner counted, `calibrate_cell` builds the cell's model from
its rendered config (`Model.from_params`, with a vocabulary from the instances it reads), reads
the first few batches of the train split with the config's own reader and batch size (grouped
by length as the config's bucket sampler groups them, `batches_as_loaded`), and times
what the trainer does per batch: forward, backward and the config's optimizer step
(`time_batches`). One warm-up batch is not timed (lazy allocations, the tokenizer's first call),
then up to `batches` batches are timed, within `cap_seconds` of wall time in all. The epoch's
estimate is

    seconds per batch x ceil(train instances / batch size)
    + forward seconds per batch x ceil(validation instances / batch size)

(validation counted with the config's reader when it has a `validation_data_path`; its batches
are timed forward-only under `no_grad`, as the trainer validates).

A cell with a feature cache (fe, or a `topK` block that caches its frozen layers) is built with
its cache in a temporary folder, so nothing the user's runs read is written: the timed batches'
first pass runs the encoder and stores the features (the first epoch's cost), a second pass over
the same batches reads them back (every later epoch's cost). Its validation batch is one more
batch of the train split, held out of training, timed twice the same way: the first epoch's
validation runs the encoder over the dev split too, a large share of that epoch where the dev
split is large beside the train split (bench/README.md, "A cached cell's first epoch"). An fe
cell without a cache pays the first pass every epoch. A stack-then-finetune (`sf`) cell is not
calibrated: its epochs change cost when its encoder is unfrozen, and the model as built is the
frozen phase alone; it keeps the cost model's numbers, with a note. Cells that differ only by
seed are one cell (the planner plans the first pending seed of each config).

A cell with finished runs trained on this machine (their `cost.json` names this host, and their
`config.json` is the cell's but for seeds, epochs, patience, schedule and rate: `timing_key`) takes
its times from them instead (`measured_cell`): the median of their first epochs and of their later
ones (for a cached cell, of the first epochs that filled the cache: a grid's later seeds read the
cache its first run filled, and their first epochs count as later ones). A few timed batches are a
small sample, and a moment of other work on the machine (a test suite, another job) can multiply
them: on CoLA, three fe batches timed beside a short test run gave 1.3 s each against 0.35 s idle,
and a plan of 5.2 hours for what took one. Whole epochs of this cell on this machine are the better
estimate wherever there are some: a rerun with other seeds, the later rounds of `--sequential`, the
seeds after a budget search (whose trials are other cells), and they cost no timing. Runs of another
host (a results folder shared by workers on several machines, or copied from one) are not used.

Calibration is on by default before tune-grid and tune-compare train; `--no-calibrate` or
`TUNE_PLAN_CALIBRATE=0` in the environment gives the cost model's numbers alone (the test suite
sets it, so the grid tests do not time models). A cell whose calibration fails (its model does
not build, its data does not read) keeps the cost model's numbers and a note saying why.
"""

import contextlib
import copy
import gc
import io
import json
import logging
import math
import os
import platform
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from allennlp_tune.host_access import forget_cached_transformers
from allennlp_tune.planning.data_count import validation_count
from allennlp_tune.planning.encoder_size import find_embedder
from allennlp_tune.planning.plan import CellPlan, counted
from allennlp_tune.rundir import COST_NAME, loader_batch_size, read_json

# The environment variable that turns calibration off ("0", "false", "no").
CALIBRATE_ENV = "TUNE_PLAN_CALIBRATE"
# Wall seconds one cell's calibration may take (its warm-up batch excluded), and its batches.
DEFAULT_CAP_SECONDS = 20.0
DEFAULT_BATCHES = 3


def calibration_enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment leaves calibration on (`TUNE_PLAN_CALIBRATE` unset or true)."""
    value = environ.get(CALIBRATE_ENV, "").strip().lower()
    return value not in ("0", "false", "no", "off")


@dataclass
class BatchTiming:
    """
    Seconds per batch measured on this machine (`time_batches`).

    # Parameters

    train_seconds : `float`
        One training batch: forward, backward and optimizer step (a cached cell: the first
        pass, which runs the encoder and stores the features).
    cached_seconds : `Optional[float]`
        A cached cell's training batch read from its cache (the epochs after the first).
    forward_seconds : `Optional[float]`
        One validation batch: forward only, without gradients (a cached cell: read from the
        cache, as every validation after the first).
    batch_size : `int`
        Instances per batch (the config's).
    batches : `int`
        How many batches were timed per pass (0: only the warm-up batch, which was then used).
    first_forward_seconds : `Optional[float]`
        A cached cell's validation batch seen for the first time: forward through the encoder,
        features stored (the first epoch's validation). `None` for an uncached cell, or when
        the train split had no batch left to hold out.
    """

    train_seconds: float
    cached_seconds: Optional[float]
    forward_seconds: Optional[float]
    batch_size: int
    batches: int
    first_forward_seconds: Optional[float] = None


# What `calibrate_cell` calls to time a cell: (rendered config, cached?, batches, cap) -> timing.
Timer = Callable[[Dict[str, Any], bool, int, float], BatchTiming]


def batch_size_of(rendered: Mapping[str, Any]) -> Optional[int]:
    """The config's training batch size: `data_loader.batch_size` or its batch sampler's."""
    return loader_batch_size(rendered, ("data_loader",))


def _without_user_cache(rendered: Dict[str, Any], directory: str) -> Dict[str, Any]:
    """A copy of the config whose feature cache, if any, lives in `directory`."""
    rendered = copy.deepcopy(rendered)
    embedder = find_embedder(rendered.get("model"))
    if embedder is not None and isinstance(embedder.get("feature_cache"), dict):
        embedder["feature_cache"]["directory"] = directory
        for budget in ("disk_mb", "min_free_mb"):  # a few entries: no budget to keep
            embedder["feature_cache"].pop(budget, None)
    return rendered


def batches_as_loaded(
    instances: List[Any], loader: Any, vocabulary: Any, batch_size: int
) -> List[List[Any]]:
    """
    The timed batches: the first `batch_size` instances (the warm-up batch), then the rest in
    batches as the config's data loader makes them. With a `bucket` batch sampler (the shipped
    configs'), AllenNLP's `BucketBatchSampler` built from the config groups them by length, so
    a timed batch is padded like a training batch; in file order, each batch would pad to its
    longest of 32 unsorted instances, and a SICK-E epoch of MPNet was planned 33% over what it
    took (bench/README.md, "MPNet").
    """
    from allennlp.common import Params
    from allennlp.data.samplers import BatchSampler

    warm, rest = instances[:batch_size], instances[batch_size:]
    sampler = loader.get("batch_sampler") if isinstance(loader, dict) else None
    if rest and isinstance(sampler, dict) and sampler.get("type") == "bucket":
        for instance in rest:
            instance.index_fields(vocabulary)
        bucket = BatchSampler.from_params(
            Params({**copy.deepcopy(sampler), "batch_size": batch_size})
        )
        return [warm] + [[rest[i] for i in batch] for batch in bucket.get_batch_indices(rest)]
    return [warm] + [rest[i : i + batch_size] for i in range(0, len(rest), batch_size)]


def time_batches(
    rendered: Dict[str, Any],
    cached: bool,
    batches: int = DEFAULT_BATCHES,
    cap_seconds: float = DEFAULT_CAP_SECONDS,
) -> BatchTiming:
    """
    Builds the config's model and times `batches` training batches after one warm-up batch
    (module docstring), within `cap_seconds`; then, for a `cached` cell, the same batches again
    (read from the cache), and the forward pass alone. Raises when the model or data cannot be
    built: `calibrate_cell` turns that into a note.
    """
    import torch

    batch_size = batch_size_of(rendered) or 32
    with tempfile.TemporaryDirectory(prefix="tune_calibrate_") as folder:
        config = _without_user_cache(rendered, folder)
        # A cached cell reads one batch more, held out of training: the features of a
        # validation batch seen for the first time are not in the cache yet.
        wanted = (batches + 1 + int(cached)) * batch_size
        instances, vocabulary, model = _built(config, wanted)
        trainer = config.get("trainer") or {}
        device = trainer.get("cuda_device", -1)
        device = device if isinstance(device, int) and torch.cuda.is_available() else -1
        timer = _Timer(model, trainer, vocabulary, device)
        groups = timer.batches(instances, config.get("data_loader"), batch_size)
        # The held-out batch is one of the length-grouped ones, as the validation's are: a batch
        # of unsorted sentences pads to its longest and times slower than they run.
        held_out: List[Any] = []
        if cached and len(instances) == wanted and len(groups) > 2:  # a short split spares none
            held_out = groups.pop()
        timer.model.train()
        warm_up = timer.step(groups[0])
        deadline = time.perf_counter() + cap_seconds
        timed: List[float] = []
        # Train data of one batch: that batch again (not for a cached cell, whose features the
        # warm-up stored: its first pass would read them).
        to_time = groups[1:] or ([] if cached else groups[:1] * batches)
        for group in to_time:
            if time.perf_counter() > deadline:
                break
            timed.append(timer.step(group))
        train_seconds = sum(timed) / len(timed) if timed else warm_up
        cached_seconds = None
        if cached:
            again = [timer.step(group) for group in to_time[: len(timed)]]
            again = again or [timer.step(groups[0])]
            cached_seconds = sum(again) / len(again)
        forward_seconds = first_forward_seconds = None
        if time.perf_counter() <= deadline:
            timer.model.eval()
            if held_out:
                # Its first pass runs the encoder and stores the features; the second reads them.
                first_forward_seconds = timer.forward(held_out)
                forward_seconds = timer.forward(held_out)
            else:
                forward_seconds = timer.forward(groups[-1])
    return BatchTiming(
        train_seconds,
        cached_seconds,
        forward_seconds,
        batch_size,
        len(timed),
        first_forward_seconds=first_forward_seconds,
    )


def _built(config: Dict[str, Any], wanted: int) -> Tuple[List[Any], Any, Any]:
    """The first `wanted` train instances of `config`, their vocabulary and the model."""
    import itertools

    from allennlp.common import Params
    from allennlp.data import DatasetReader, Vocabulary
    from allennlp.models import Model

    # The plugin's readers, embedders, models and optimizers, registered (a command has them
    # already; a library caller may not).
    import allennlp_tune.data  # noqa: F401
    import allennlp_tune.models  # noqa: F401
    import allennlp_tune.modules  # noqa: F401
    import allennlp_tune.training  # noqa: F401
    from allennlp_tune.quiet import QUIET_READER_LOGGERS, quiet_loggers

    # The components' INFO lines (every parameter they read, the embedder's layer groups and
    # LoRA targets) are the run's log, not the plan's.
    with quiet_loggers(*QUIET_READER_LOGGERS, "allennlp", "allennlp_tune.modules"):
        reader = DatasetReader.from_params(Params(copy.deepcopy(config["dataset_reader"])))
        instances = list(itertools.islice(reader.read(config["train_data_path"]), wanted))
        if not instances:
            raise ValueError("the train split gave no instances")
        # AllenNLP's "building vocab" progress bar (stderr) is the run's, not the plan's.
        with contextlib.redirect_stderr(io.StringIO()):
            vocabulary = Vocabulary.from_params(
                Params(copy.deepcopy(config.get("vocabulary", {}))), instances=instances
            )
        model = Model.from_params(vocab=vocabulary, params=Params(copy.deepcopy(config["model"])))
    return instances, vocabulary, model


class _Timer:
    """The model on its device with the config's optimizer: times one training step or one
    forward pass of a batch of instances."""

    def __init__(self, model: Any, trainer: Dict[str, Any], vocabulary: Any, device: int):
        from allennlp.common import Params
        from allennlp.training.optimizers import Optimizer

        from allennlp_tune.quiet import quiet_loggers

        self.model = model.cuda(device) if device >= 0 else model
        self.vocabulary = vocabulary
        self.device = device
        parameters = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        # The optimizer's warnings (a parameter-group regex that matches no trainable parameter,
        # as LoRA's frozen LayerNorms give) reach the run's log when it builds the same optimizer.
        with quiet_loggers("allennlp", level=logging.ERROR):
            self.optimizer = Optimizer.from_params(
                model_parameters=parameters,
                params=Params(copy.deepcopy(trainer.get("optimizer") or {"type": "adamw"})),
            )

    def batches(self, instances: List[Any], loader: Any, batch_size: int) -> List[Any]:
        from allennlp_tune.quiet import quiet_loggers

        # The sampler's parameters and its guessed sorting keys (INFO) are the run's log too.
        with quiet_loggers("allennlp"):
            return batches_as_loaded(instances, loader, self.vocabulary, batch_size)

    def _tensors(self, group: List[Any]) -> Dict[str, Any]:
        from allennlp.data import Batch
        from allennlp.nn import util as nn_util

        batch = Batch(group)
        batch.index_instances(self.vocabulary)
        return nn_util.move_to_device(batch.as_tensor_dict(), self.device)

    def _synchronize(self) -> None:
        if self.device >= 0:  # CUDA runs asynchronously: wait for the batch's kernels
            import torch

            torch.cuda.synchronize(self.device)

    def step(self, group: List[Any]) -> float:
        started = time.perf_counter()
        self.optimizer.zero_grad()
        loss = self.model(**self._tensors(group))["loss"]
        loss.backward()
        self.optimizer.step()
        self._synchronize()
        return time.perf_counter() - started

    def forward(self, group: List[Any]) -> float:
        import torch

        started = time.perf_counter()
        with torch.no_grad():
            self.model(**self._tensors(group))
        self._synchronize()
        return time.perf_counter() - started


def _release_accelerator_memory() -> None:
    """Hands the timing's CUDA memory back, so the training child that follows can have it."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def release_host_memory() -> None:
    """
    Gives back to the system what the timings held, before the training children start: the
    planner's process lives on beside them (tune-compare and tune-grid wait for their runs),
    and a timed model stays in its memory otherwise. AllenNLP's `cached_transformers` keeps
    every transformer it loaded (the embedder trains a copy), and glibc's allocator keeps the
    freed heap: after timing MPNet's ft batches the planner still held 4.8 GB beside a 6.7 GB
    run (bench/README.md, "The planner's own memory"). `malloc_trim` is glibc's; elsewhere the
    allocator keeps what it keeps.
    """
    import ctypes

    forget_cached_transformers()  # the weights; the tokenizers stay, they are small
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl)
        pass


def calibrate_cell(
    plan: CellPlan,
    rendered: Dict[str, Any],
    timer: Timer = time_batches,
    batches: int = DEFAULT_BATCHES,
    cap_seconds: float = DEFAULT_CAP_SECONDS,
) -> bool:
    """
    Replaces `plan`'s time per epoch (and a cached cell's first epoch) by the one measured on
    this machine (module docstring) and sets `plan.time_source` to "calibrated"; returns whether
    it did. A cell it cannot time keeps the cost model's numbers, with a note saying why.
    """
    if plan.data is None or plan.data.instances <= 0:
        plan.notes.append(
            "not calibrated: its train data was not counted; time from the cost model"
        )
        return False
    if plan.mode == "sf":
        plan.notes.append(
            "not calibrated: sf's frozen and fine-tuning epochs differ in cost and the model as "
            "built is the frozen phase; time from the cost model"
        )
        return False
    cached = plan.cache_config is not None
    try:
        timing = timer(rendered, cached, batches, cap_seconds)
    except Exception as error:  # a model that does not build, data that does not read
        text = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
        plan.notes.append(
            f"not calibrated ({type(error).__name__}: {text}); time from the cost model"
        )
        return False
    finally:
        gc.collect()  # the model built for the timing
        _release_accelerator_memory()
    train_batches = math.ceil(plan.data.instances / timing.batch_size)
    validation = plan.validation
    if validation is None and timing.forward_seconds is not None:
        validation = validation_count(rendered, rendered.get("dataset_reader"), [])
    validation_seconds = 0.0
    validation_batches = 0
    if validation is not None and timing.forward_seconds is not None:
        validation_batches = math.ceil(validation.instances / timing.batch_size)
        validation_seconds = validation_batches * timing.forward_seconds
    first = train_batches * timing.train_seconds + validation_seconds
    if cached and timing.cached_seconds is not None:
        if timing.first_forward_seconds is not None:
            # The first validation runs the encoder over the dev split and fills its cache.
            first += validation_batches * (timing.first_forward_seconds - timing.forward_seconds)
        plan.first_epoch_seconds = first
        plan.epoch_seconds = train_batches * timing.cached_seconds + validation_seconds
        passes = (
            f"{timing.train_seconds:.3f} s (first epoch, features stored), "
            f"{timing.cached_seconds:.3f} s (later, read from the cache)"
        )
    else:
        plan.first_epoch_seconds = None
        plan.epoch_seconds = first
        passes = f"{timing.train_seconds:.3f} s"
    timed = (
        counted(timing.batches, "batch", "batches") if timing.batches else "the warm-up batch only"
    )
    timed += f", batches of {timing.batch_size}"
    forward = ""
    if validation is not None and timing.forward_seconds is not None:
        forward = (
            f" + {counted(validation_batches, 'validation batch', 'validation batches')} x "
            f"{timing.forward_seconds:.3f} s"
        )
        if cached and timing.first_forward_seconds is not None:
            forward += f" ({timing.first_forward_seconds:.3f} s in the first epoch)"
    trained = counted(train_batches, "train batch", "train batches")
    plan.time_source = "calibrated"
    plan.notes.append(
        f"time calibrated on this machine ({timed}): {trained} x {passes} per batch{forward}"
        + load_note()
    )
    return True


# The 1-minute load average above this share of the CPUs, beyond the calibration itself (about
# one busy process), means another job ran beside it: the batches timed slower than they will
# run alone.
LOADED_SHARE = 0.5


def load_note(load: Optional[float] = None, cpus: Optional[int] = None) -> str:
    """`; timed while the machine was loaded (...)`, or `""`: whether the calibration shared the
    machine with other work, from the 1-minute load average against the CPUs (`os.getloadavg`;
    `""` where the platform has none). The runs' own epochs later replace these times
    (`measured_cell`), so a plan made under load corrects itself as runs finish."""
    try:
        load = os.getloadavg()[0] if load is None else load
    except (AttributeError, OSError):
        return ""
    cpus = cpus or os.cpu_count() or 1
    if load - 1.0 <= LOADED_SHARE * cpus:
        return ""
    return (
        f"; timed while the machine was loaded (load average {load:.1f} on {cpus} CPUs: other "
        "work shared it, so these times may be high; the runs' own epochs replace them as they "
        "finish)"
    )


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


# A cached run's first epoch filled the cache where it took this many times its later epochs'
# median (MPNet SICK-E fe: 4.6, MiniLM CoNLL-2003 fe: 2.5); else it read a cache an earlier run
# of the grid had filled (0.9-1.0 of a later epoch, bench/README.md, "A cache filled once").
FILLED_RATIO = 1.5


def _filled_cache(seconds: List[float], lookups: Any = None) -> bool:
    """Whether a cached run whose epochs took `seconds` filled the cache in its first: the
    encoder computed at least half of that epoch's entries, where the run recorded its cache's
    lookups (cost.json's `epoch_cache_lookups`); else its first epoch took `FILLED_RATIO` times
    its later ones (a light head reading a filled pooled cache also takes several times its
    later epochs, which then hold the features in memory: the lookups tell them apart)."""
    if len(seconds) < 2:
        return False
    first = lookups[0] if isinstance(lookups, list) and lookups else None
    if isinstance(first, list) and len(first) == 2 and all(map(_number_or_zero, first)):
        return sum(first) > 0 and first[0] >= 0.5 * sum(first)
    return seconds[0] > FILLED_RATIO * statistics.median(seconds[1:])


def _number_or_zero(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def measured_cell(plan: CellPlan, rendered: Mapping[str, Any], host: Optional[str] = None) -> bool:
    """
    Sets `plan`'s time per epoch (and a cached cell's first epoch) from its finished runs
    (`plan.finished_runs`) that trained on `host` (default this machine) with the cell's config
    as far as it sets the time of a batch (`timing_key`), with `plan.time_source` "measured"
    and a note; returns whether it did (module docstring). A cached cell needs runs with a
    later epoch too, as its first epoch fills the cache and costs more, and a run whose first
    epoch did fill it: the grid's later seeds read the cache its first run filled, and their
    first epochs are priced as later ones (`_filled_cache`).
    """
    host = host or platform.node()
    key = timing_key(rendered)
    cached = plan.cache_config is not None
    firsts: List[float] = []
    laters: List[float] = []
    used = 0
    for run_dir in plan.finished_runs:
        cost = read_json(Path(run_dir) / COST_NAME) or {}
        seconds = cost.get("epoch_seconds")
        if cost.get("finished") is not True or cost.get("host") != host:
            continue
        if not isinstance(seconds, list) or not seconds or not all(map(_number, seconds)):
            continue
        config = read_json(Path(run_dir) / "config.json")
        if not isinstance(config, dict) or timing_key(config) != key:
            continue
        used += 1
        if cached and not _filled_cache(seconds, cost.get("epoch_cache_lookups")):
            laters.extend(float(second) for second in seconds)  # read a cache filled before
            continue
        firsts.append(float(seconds[0]))
        laters.extend(float(second) for second in seconds[1:])
    if not used:
        return False
    if cached and not (firsts and laters):
        return False  # no run shows what filling the cache costs: time batches instead
    epochs = len(firsts) + len(laters)
    runs = counted(used, "finished run")
    if cached:
        plan.first_epoch_seconds = statistics.median(firsts)
        plan.epoch_seconds = statistics.median(laters)
        how = (
            f"median first epoch {plan.first_epoch_seconds:.1f} s, later {plan.epoch_seconds:.1f} s"
        )
    else:
        plan.first_epoch_seconds = None
        plan.epoch_seconds = statistics.median(firsts + laters)
        how = f"median epoch {plan.epoch_seconds:.1f} s"
    plan.time_source = "measured"
    plan.notes.append(
        f"time measured on this machine: {runs} of this cell ({counted(epochs, 'epoch')}), "
        f"{how}; no batches timed"
    )
    return True


def calibrate_plans(
    plans: List[CellPlan],
    timer: Optional[Timer] = None,
    cap_seconds: float = DEFAULT_CAP_SECONDS,
    host: Optional[str] = None,
    announce: Optional[Callable[[], None]] = None,
) -> None:
    """Each plan that rendered and has no problem a run would fail on: `measured_cell` where
    the cell has finished runs of this machine (`host`, default this one), else `calibrate_cell`
    timed with `timer` (default `time_batches`). A config timed before in this process (the
    same rendered config but for its seeds, epochs and rate, `timing_key`: tune-compare's later
    rounds, the seeds after a `--budget` search) is not timed again. `announce` is called once,
    before the first batch is timed, and not at all when nothing is (the plan's "timing a few
    training batches" line, which would otherwise precede a plan that timed nothing)."""
    timer = _remembered(timer or time_batches, _once(announce))
    timed = False
    for plan in plans:
        if plan.rendered is not None and not plan.problems:
            if measured_cell(plan, plan.rendered, host):
                continue
            timed = calibrate_cell(plan, plan.rendered, timer, cap_seconds=cap_seconds) or timed
    if timed:
        release_host_memory()


def _once(announce: Optional[Callable[[], None]]) -> Callable[[], None]:
    """`announce` on the first call only (nothing when it is None)."""
    called: List[bool] = []

    def once() -> None:
        if announce is not None and not called:
            called.append(True)
            announce()

    return once


# (timer, the rendered config as far as it sets the time of a batch) -> what it measured.
_TIMINGS: Dict[Any, BatchTiming] = {}
_SEED_KEYS = ("random_seed", "numpy_seed", "pytorch_seed")
# Trainer settings that change how many batches run or how large a step is, not what a batch
# costs: the searched epochs and rate of a `--budget` trial, its seeds' best setting.
_UNTIMED_TRAINER_KEYS = ("num_epochs", "patience", "learning_rate_scheduler", "callbacks")


def timing_key(rendered: Mapping[str, Any]) -> str:
    """The parts of a rendered config that set the time of a training batch: all of it but
    its seeds, its trainer's epochs, patience and schedule, and its optimizer's rate."""
    unseeded = {key: value for key, value in rendered.items() if key not in _SEED_KEYS}
    trainer = unseeded.get("trainer")
    if isinstance(trainer, dict):
        trainer = {k: v for k, v in trainer.items() if k not in _UNTIMED_TRAINER_KEYS}
        optimizer = trainer.get("optimizer")
        if isinstance(optimizer, dict):
            trainer["optimizer"] = {k: v for k, v in optimizer.items() if k != "lr"}
        unseeded["trainer"] = trainer
    return json.dumps(unseeded, sort_keys=True, default=str)


def _remembered(timer: Timer, before: Callable[[], None] = lambda: None) -> Timer:
    """`timer`, measuring each config (`timing_key`) once per process; `before` is called
    before each measurement."""

    def remembered(rendered, cached, batches, cap_seconds):
        key = (timer, timing_key(rendered), cached, batches)
        if key not in _TIMINGS:
            before()
            _TIMINGS[key] = timer(rendered, cached, batches, cap_seconds)
        return _TIMINGS[key]

    return remembered


__all__ = [
    "BatchTiming",
    "batches_as_loaded",
    "CALIBRATE_ENV",
    "calibrate_cell",
    "calibrate_plans",
    "release_host_memory",
    "calibration_enabled",
    "measured_cell",
    "time_batches",
]
