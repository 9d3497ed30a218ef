"""What the adaptation callbacks share: applying a trainable set, masking, logging, recovery.

Not registered itself. A subclass says, for each epoch, how many encoder groups train
(`groups_for_epoch`), counted from the top; this base applies that to every layer-group provider
in the model (see `allennlp_tune.modules.layer_groups`), writes one line per epoch to
`adaptation.jsonl` in the serialization directory, logs the number of trainable groups and each
group's learning rate to TensorBoard (when the `tensorboard` callback is configured), and keeps
its state in the trainer checkpoint so `allennlp train --recover` resumes with the same set.

How a group is frozen (`freeze_by`):
- `"requires_grad"`: the embedder's own `freeze()` / `unfreeze(k)`: frozen layers build no
  autograd graph and run in eval mode. Fast; the default in single-process training.
- `"masking"`: every parameter keeps `requires_grad`, and once a batch's backward passes are
  done (all accumulated micro-batches), before the gradient norm is measured and clipped, the
  gradients of frozen groups are set to `None`, so the optimizer neither updates them nor
  touches their state (the effect of a zero learning rate, without fighting the schedulers over
  `lr`). Frozen groups still run in eval mode, and while the whole encoder is frozen it runs
  without autograd and from the feature cache, as with `"requires_grad"`. This is what
  distributed training needs: toggling `requires_grad` after DDP has wrapped the model breaks
  gradient synchronisation (AllenNLP #5088). So every encoder parameter must require gradients
  when training starts: an embedder in `mode: "fine_tuning"`, or, for one that starts frozen
  (stack-then-finetune), the `tune_torch` DDP accelerator, which prepares it before wrapping.
  The default under distributed training.

Embedders in `mode: "bitfit"` or `mode: "lora"` train only part of each group (its biases, its
LoRA matrices: `mode_parameters()`, see `layer_groups.named_mode_groups`), with either way of
freezing: a group this callback unfreezes trains those parameters only, the others never get
gradients, and only those need to be in the optimizer (and, for masking, require gradients).
Both modes start with every group trainable, so the optimizer AllenNLP builds holds them all.
"""

import json
import logging
import os
from typing import Any, Dict, List, Optional, Tuple

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import dump_metrics
from allennlp.training.callbacks import TrainerCallback
from allennlp.training.callbacks.tensorboard import TensorBoardCallback

from allennlp_tune.modules.layer_groups import (
    group_label,
    named_groups,
    named_mode_groups,
    providers_in,
)
from allennlp_tune.training import trainer_access

logger = logging.getLogger(__name__)
FREEZE_BY = ("auto", "requires_grad", "masking")


class AdaptationCallback(TrainerCallback):
    def __init__(self, serialization_dir: str, freeze_by: str = "auto") -> None:
        super().__init__(serialization_dir)
        if freeze_by not in FREEZE_BY:
            raise ConfigurationError(
                f"callback freeze_by is {freeze_by!r}; expected one of {', '.join(FREEZE_BY)}."
            )
        self._freeze_by = freeze_by
        self._masking = False
        self._trainable: Optional[int] = None  # encoder groups training now, from the top
        self._epoch = 0  # the epoch the current setting applies to
        self._named_providers: List[Tuple[str, torch.nn.Module]] = []  # in module order

    # ---- what subclasses decide -------------------------------------------------------------
    def groups_for_epoch(self, epoch: int, num_groups: int) -> int:
        raise NotImplementedError

    def on_phase_change(self, trainer, epoch: int) -> None:
        """
        Called when the trainable set changes at the start of `epoch` (not on recovery), before
        that epoch's line is logged, so what it changes (learning rates) is in the line.
        """

    # ---- trainer hooks ----------------------------------------------------------------------
    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        super().on_start(trainer, is_primary=is_primary, **kwargs)
        self._named_providers = providers_in(trainer.model)
        if not self._named_providers:
            raise ConfigurationError(
                f"The {type(self).__name__} callback needs an embedder with layer groups "
                "(tune_transformer, tune_transformer_mismatched or tune_elmo); the model has none."
            )
        distributed = trainer_access.is_distributed(trainer)
        self._masking = self._freeze_by == "masking" or (self._freeze_by == "auto" and distributed)
        if distributed and not self._masking:
            raise ConfigurationError(
                "freeze_by 'requires_grad' cannot be used with distributed training: DDP breaks "
                "when requires_grad changes after wrapping. Use freeze_by 'masking' (the default)."
            )
        if self._masking:
            for provider in self._providers:
                if any(not p.requires_grad for _, ps in named_mode_groups(provider) for p in ps):
                    raise ConfigurationError(
                        "With freeze_by 'masking' (the default under distributed training) "
                        "every encoder parameter that its mode trains must require gradients "
                        "when training starts, "
                        "but this embedder starts frozen. Under distributed training use "
                        'ddp_accelerator: {"type": "tune_torch"} in the distributed block '
                        "(it keeps frozen embedders ready for masking before DDP wraps the "
                        "model); otherwise set its mode to 'fine_tuning', 'bitfit' or 'lora'."
                    )
                if callable(getattr(provider, "freeze_by_masking", None)):
                    provider.freeze_by_masking()  # frozen groups in eval mode, cache when frozen
            self._mask_before_rescaling(trainer)
        in_optimizer = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
        missing = [
            name
            for provider in self._providers
            for name, params in named_mode_groups(provider)
            if any(id(p) not in in_optimizer for p in params)
        ]
        if missing:
            raise ConfigurationError(
                f"The {type(self).__name__} callback would unfreeze encoder groups {missing}, but "
                "their parameters are not in the optimizer (AllenNLP gives it only the parameters "
                "that are trainable when it is built). Use the 'discriminative' optimizer, which "
                "includes frozen encoder layers ('decay: 1.0' for one rate), or start the "
                "embedder in mode 'fine_tuning' (or 'bitfit' / 'lora')."
            )
        # After --recover, the trainer resumes at this epoch; the state was loaded already.
        epoch = trainer_access.epochs_completed_at_start(trainer)
        self._apply(trainer, epoch)
        self._log(trainer, epoch)

    def on_epoch(self, trainer, metrics: Dict[str, Any], epoch: int, is_primary=True, **kwargs):
        # What trained in this epoch, and at which rates (the last batch's), in the epoch's
        # metrics: the trainer wrote metrics_epoch_<epoch>.json just before, so add them there.
        metrics["adaptation_trainable_groups"] = self._trainable
        for name, rate in self._group_rates(trainer).items():
            metrics[f"adaptation_lr_{name}"] = rate
        epoch_file = os.path.join(self.serialization_dir or "", f"metrics_epoch_{epoch}.json")
        if is_primary and self.serialization_dir and os.path.exists(epoch_file):
            dump_metrics(epoch_file, metrics)
        before = self._trainable
        self._apply(trainer, epoch + 1)
        if self._trainable != before:
            self.on_phase_change(trainer, epoch + 1)
        self._log(trainer, epoch + 1)

    def _mask_before_rescaling(self, trainer) -> None:
        """
        Discards the frozen groups' gradients once the batch's backward passes are all done
        (every accumulated micro-batch, AllenNLP's own loss scaling and mixed precision), right
        before the trainer measures and clips the gradient norm and steps the optimizer: the
        trainer's `rescale_gradients()` is the first thing it calls then.
        """
        trainer_access.run_before_rescaling(trainer, self, self._mask_frozen_gradients)

    def _mask_frozen_gradients(self) -> None:
        # Parameters that never get gradients (outside a bitfit / lora mode's) have grad None.
        for provider in self._providers:
            groups = named_mode_groups(provider)
            for _, params in groups[: len(groups) - self._trainable]:
                for param in params:
                    param.grad = None

    def state_dict(self) -> Dict[str, Any]:
        return {"trainable": self._trainable, "epoch": self._epoch}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self._trainable = state_dict["trainable"]
        self._epoch = state_dict["epoch"]

    # ---- applying and logging ---------------------------------------------------------------
    def num_groups(self) -> int:
        return min(len(named_groups(provider)) for provider in self._providers)

    def _apply(self, trainer, epoch: int) -> None:
        num_groups = self.num_groups()
        trainable = max(0, min(num_groups, self.groups_for_epoch(epoch, num_groups)))
        self._trainable, self._epoch = trainable, epoch
        for provider in self._providers:
            # Under masking only a provider that freezes by masking may change its state:
            # toggling requires_grad under DDP breaks gradient synchronisation.
            if not self._masking or callable(getattr(provider, "freeze_by_masking", None)):
                provider.freeze()
                if trainable:
                    provider.unfreeze(trainable)

    @property
    def _providers(self) -> List[torch.nn.Module]:
        return [provider for _, provider in self._named_providers]

    def trainable_group_names(self) -> List[str]:
        """The groups training now, named as in the `discriminative` optimizer's groups."""
        result = []
        for path, provider in self._named_providers:
            names = [name for name, _ in named_groups(provider)]
            trainable = names[len(names) - self._trainable :] if self._trainable else []
            result += [group_label(path, n, len(self._named_providers)) for n in trainable]
        return result

    def _group_rates(self, trainer) -> Dict[str, float]:
        rates: Dict[str, float] = {}
        for index, group in enumerate(trainer.optimizer.param_groups):
            rates[group.get("layer_group_name", f"param_group_{index}")] = group["lr"]
        return rates

    def _log(self, trainer, epoch: int) -> None:
        names = self.trainable_group_names()
        rates = self._group_rates(trainer)
        logger.info(
            "%s: epoch %d trains %d encoder group(s) %s (freeze_by %s); learning rates %s",
            type(self).__name__, epoch, self._trainable, names,
            "masking" if self._masking else "requires_grad", rates,
        )  # fmt: skip
        if not trainer_access.is_primary(trainer):
            return
        if self.serialization_dir:
            record = {
                "epoch": epoch,
                "callback": type(self).__name__,
                "trainable_groups": self._trainable,
                "trainable_group_names": names,
                "freeze_by": "masking" if self._masking else "requires_grad",
                "learning_rates": rates,
            }
            with open(os.path.join(self.serialization_dir, "adaptation.jsonl"), "a") as log:
                log.write(json.dumps(record) + "\n")
        for callback in trainer_access.callbacks_of(trainer):
            if isinstance(callback, TensorBoardCallback) and callback.trainer is not None:
                scalars = {"trainable_groups": self._trainable}
                scalars.update({f"lr/{k}": v for k, v in rates.items()})
                callback.log_scalars(scalars, log_prefix="adaptation", epoch=epoch)
