"""
What a training run cost: parameters trained and stored, time per epoch, peak memory.

The `tune_cost` callback writes `cost.json` into the serialization directory after every epoch
(so a run that is stopped still has one) and when training ends:

```json
{
  "trainable_params": 1181954,          // the most that required grad at any epoch start
  "encoder_trainable_params": 13,       // the same, counting only the encoder's parameters
  "total_params": 110664194,
  "encoder_params": 109482240,
  "encoder_dense_params": 85054464,     // those outside embedding tables: what runs per token
  "head_runs_per": "token",             // "token", or "instance" for a head that pools first
  "stored_params": 110664194,           // model.state_dict() at the end: what the archive keeps
  "epoch_seconds": [41.2, 40.8],        // wall seconds per epoch, validation included
  "mean_epoch_seconds": 41.0,
  "peak_rss_mb": 2310.5,                // of the training process (VmHWM on Linux)
  "peak_gpu_mb": null,                  // torch.cuda.max_memory_allocated on CUDA, else null
  "epochs": 2,
  "epoch_instances": [5000, 5000],      // training instances per epoch (this process's)
  "epoch_encoder_trained": [false, false],  // whether the encoder trained (beyond its scalar mix)
  "encoder_layers": 12,                 // the encoder's layers (its config's), null if unknown
  "epoch_cache_lookups": [[5400, 0], [0, 5400]],  // feature-cache entries computed, read
  "host": "node-7",                     // the machine that trained (platform.node())
  "finished": true                      // false while training (or when it was stopped)
}
```

`epoch_instances` and `epoch_encoder_trained` give the cost in a unit every machine shares:
encoder passes (instances x epochs), forward and backward in an epoch whose encoder trains,
forward only in one whose encoder is frozen (tune-report: `encoder_passes`; a block mode's
epochs count the share of `encoder_layers` they run forward and backward). Instances are
counted from each training batch's first tensor (its first dimension); under distributed
training each process counts its own share and the primary writes its count.

`epoch_cache_lookups` counts, per epoch (validation included), the feature-cache entries the
encoder computed because the cache lacked them and those it read (`FeatureCache`'s misses and
hits): a cached frozen epoch ran the encoder over the computed share of its instances only, so a
run that read a cache an earlier run filled is not charged its fill (`reporting.costs`), and the
planner knows which run filled it (`planning.calibrate`). Empty without a cache.

`encoder_dense_params` and `head_runs_per` let the budget in compute (`tune-compare
--budget-unit compute`) count the task network's work beside the encoder's: the head (every
parameter outside the encoder) runs once per token (BCN, ESIM, a tagger) or once per instance
(`tune_frozen_head`, which declares `head_runs_per = "instance"`), each parameter costing about
the same per position as a dense encoder parameter (`reporting.costs.head_forward_equivalents`).

Trainable parameters are counted (`requires_grad`) when training starts and at the start of
every epoch (its first training batch), and the maximum is kept: stack-then-finetune and
gradual unfreezing train more of the encoder later. The *encoder* is every token embedder of
the model (its pretrained weights and, where it has one, its scalar mix; adapters or LoRA
matrices inside it count too). Under `freeze_by: "masking"` (distributed training) frozen
parameters keep `requires_grad` and are counted as trainable.

`stored_params` counts the elements of the model's `state_dict()` tensors when training ends:
an embedder whose state dict leaves out what it does not train (bitfit, lora) stores fewer
parameters than the model has.

Registered as a `TrainerCallback` with name "tune_cost":
`"callbacks": [{"type": "tune_cost"}]`. Only the primary process writes.
"""

import logging
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import torch
from allennlp.modules.scalar_mix import ScalarMix
from allennlp.modules.token_embedders import TokenEmbedder
from allennlp.training.callbacks import TrainerCallback

from allennlp_tune.rundir import COST_NAME, write_json

logger = logging.getLogger(__name__)


def encoder_parameters(model: torch.nn.Module) -> List[torch.nn.Parameter]:
    """The parameters of the model's token embedders, each once."""
    seen: Dict[int, torch.nn.Parameter] = {}
    for module in model.modules():
        if isinstance(module, TokenEmbedder):
            for parameter in module.parameters():
                seen.setdefault(id(parameter), parameter)
    return list(seen.values())


def dense_encoder_parameters(model: torch.nn.Module) -> List[torch.nn.Parameter]:
    """The encoder's parameters outside its embedding tables (`torch.nn.Embedding`): those a
    forward pass multiplies with every token, about 2 flops each (Kaplan et al., 2020)."""
    tables = {
        id(parameter)
        for module in model.modules()
        if isinstance(module, torch.nn.Embedding)
        for parameter in module.parameters()
    }
    return [p for p in encoder_parameters(model) if id(p) not in tables]


def count(parameters, trainable_only: bool = False) -> int:
    return sum(p.numel() for p in parameters if p.requires_grad or not trainable_only)


def encoder_trains(model: torch.nn.Module) -> bool:
    """
    Whether training runs backward through the encoder: some parameter of its token embedders
    other than their scalar mixes trains (all of it, its biases, adapters inside it). A frozen
    encoder's scalar mix trains on the encoder's outputs, with no backward pass through it.
    """
    mixes = {
        id(parameter)
        for module in model.modules()
        if isinstance(module, ScalarMix)
        for parameter in module.parameters()
    }
    return any(p.requires_grad and id(p) not in mixes for p in encoder_parameters(model))


def encoder_layers(model: torch.nn.Module) -> Optional[int]:
    """The layers of the model's transformer encoder: `num_hidden_layers` of the first token
    embedder with a Hugging Face `config` (every family's config maps that name, DistilBERT's
    `n_layers` too); `None` without one (ELMo, a toy embedder)."""
    for module in model.modules():
        config = getattr(module, "config", None) if isinstance(module, TokenEmbedder) else None
        layers = getattr(config, "num_hidden_layers", None)
        if isinstance(layers, int) and not isinstance(layers, bool) and layers > 0:
            return layers
    return None


def cache_lookups(model: torch.nn.Module) -> Tuple[int, int]:
    """(computed, read) entries of every feature cache of the model's embedders so far: their
    `FeatureCache` misses and hits, each cache once."""
    from allennlp_tune.modules.feature_cache.store import FeatureCache

    caches = {
        id(cache): cache
        for module in model.modules()
        for cache in (getattr(module, "_feature_cache", None),)
        if isinstance(cache, FeatureCache)
    }
    return (
        sum(cache.misses for cache in caches.values()),
        sum(cache.hits for cache in caches.values()),
    )


def batch_instances(batch: Any) -> int:
    """The instances in a batch (a `TensorDict`, nested): its first tensor's first dimension;
    0 when it has no tensor."""
    if isinstance(batch, torch.Tensor):
        return int(batch.size(0)) if batch.dim() else 0
    if isinstance(batch, dict):
        for value in batch.values():
            found = batch_instances(value)
            if found:
                return found
    return 0


def stored_parameters(model: torch.nn.Module) -> int:
    """Elements of the tensors in `model.state_dict()` (what `best.th` and the archive keep)."""
    return sum(
        value.numel() for value in model.state_dict().values() if isinstance(value, torch.Tensor)
    )


def peak_rss_mb() -> float:
    """
    This process's peak resident set size in MB. On Linux it is `VmHWM` from /proc/self/status,
    the high-water mark of this program's own memory. Not `ru_maxrss` there: Linux carries it
    over fork and exec, so `allennlp train` started by a bigger parent (`tune-grid`, a test
    worker) would report the parent's size as its own peak. Elsewhere `ru_maxrss` (KB, bytes
    on macOS).
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    # "VmHWM:    13628 kB"
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    divisor = 1024 * 1024 if sys.platform == "darwin" else 1024
    return round(peak / divisor, 1)


def peak_gpu_mb(model: torch.nn.Module) -> Optional[float]:
    """`torch.cuda.max_memory_allocated` of the model's device in MB; `None` off CUDA."""
    devices = {p.device for p in model.parameters() if p.device.type == "cuda"}
    if not devices or not torch.cuda.is_available():
        return None
    return round(max(torch.cuda.max_memory_allocated(d) for d in devices) / 2**20, 1)


@TrainerCallback.register("tune_cost")
class CostCallback(TrainerCallback):
    """Writes `cost.json` (see the module docstring). No parameters."""

    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        self._trainable = 0
        self._encoder_trainable = 0
        self._epoch_seconds: List[float] = []
        self._epoch_instances: List[int] = []
        self._epoch_encoder_trained: List[bool] = []
        self._epoch_cache_lookups: List[List[int]] = []
        self._lookups_mark: Optional[Tuple[int, int]] = None
        self._mark: Optional[float] = None

    def _count_trainable(self, trainer) -> None:
        model = trainer.model
        self._trainable = max(self._trainable, count(model.parameters(), trainable_only=True))
        encoder = encoder_parameters(model)
        self._encoder_trainable = max(self._encoder_trainable, count(encoder, trainable_only=True))

    def cost(self, trainer, finished: bool) -> Dict[str, Any]:
        model = trainer.model
        seconds = self._epoch_seconds
        return {
            "trainable_params": self._trainable,
            "encoder_trainable_params": self._encoder_trainable,
            "total_params": count(model.parameters()),
            "encoder_params": count(encoder_parameters(model)),
            "encoder_dense_params": count(dense_encoder_parameters(model)),
            "head_runs_per": getattr(model, "head_runs_per", "token"),
            "stored_params": stored_parameters(model),
            "epoch_seconds": [round(s, 3) for s in seconds],
            "mean_epoch_seconds": round(sum(seconds) / len(seconds), 3) if seconds else None,
            "peak_rss_mb": peak_rss_mb(),
            "peak_gpu_mb": peak_gpu_mb(model),
            "epochs": len(seconds),
            "epoch_instances": list(self._epoch_instances),
            "epoch_encoder_trained": list(self._epoch_encoder_trained),
            "encoder_layers": encoder_layers(model),
            "epoch_cache_lookups": [list(pair) for pair in self._epoch_cache_lookups],
            "host": platform.node(),
            "finished": finished,
        }

    def _write(self, trainer, finished: bool) -> None:
        if not self.serialization_dir:
            return
        try:
            write_json(Path(self.serialization_dir) / COST_NAME, self.cost(trainer, finished))
        except OSError as error:  # a cost record is never worth a failed run
            logger.warning("tune_cost: could not write %s: %s", COST_NAME, error)

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        super().on_start(trainer, is_primary=is_primary, **kwargs)
        self._count_trainable(trainer)
        self._mark = time.monotonic()
        self._lookups_mark = cache_lookups(trainer.model)

    def on_batch(
        self,
        trainer,
        batch_inputs,
        batch_outputs,
        batch_metrics,
        epoch: int,
        batch_number: int,
        is_training: bool,
        is_primary: bool = True,
        batch_grad_norm: Optional[float] = None,
        **kwargs,
    ) -> None:
        if not is_training:
            return
        if batch_number == 1:
            # The epoch's trainable set, whichever order the callbacks changed it in.
            self._count_trainable(trainer)
            self._epoch_encoder_trained.append(encoder_trains(trainer.model))
            self._epoch_instances.append(0)
        if self._epoch_instances:
            self._epoch_instances[-1] += sum(batch_instances(batch) for batch in batch_inputs)

    def on_epoch(self, trainer, metrics: Dict[str, Any], epoch: int, is_primary=True, **kwargs):
        now = time.monotonic()
        if self._mark is not None:
            self._epoch_seconds.append(now - self._mark)
        self._mark = now
        lookups = cache_lookups(trainer.model)
        if self._lookups_mark is not None and any(lookups):
            computed, read = (now_ - before for now_, before in zip(lookups, self._lookups_mark))
            self._epoch_cache_lookups.append([computed, read])
        self._lookups_mark = lookups
        self._count_trainable(trainer)
        if is_primary:
            self._write(trainer, finished=False)

    def on_end(self, trainer, metrics=None, epoch=None, is_primary=True, **kwargs) -> None:
        if is_primary:
            self._write(trainer, finished=metrics is not None)

    def state_dict(self) -> Dict[str, Any]:
        return {
            "trainable": self._trainable,
            "encoder_trainable": self._encoder_trainable,
            "epoch_seconds": list(self._epoch_seconds),
            "epoch_instances": list(self._epoch_instances),
            "epoch_encoder_trained": list(self._epoch_encoder_trained),
            "epoch_cache_lookups": [list(pair) for pair in self._epoch_cache_lookups],
        }

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self._trainable = state_dict.get("trainable", 0)
        self._encoder_trainable = state_dict.get("encoder_trainable", 0)
        self._epoch_seconds = list(state_dict.get("epoch_seconds", []))
        self._epoch_instances = list(state_dict.get("epoch_instances", []))
        self._epoch_encoder_trained = list(state_dict.get("epoch_encoder_trained", []))
        self._epoch_cache_lookups = list(state_dict.get("epoch_cache_lookups", []))
