import logging
from typing import Any, Dict, Optional, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.training.callbacks import TrainerCallback

from allennlp_tune.training import trainer_access
from allennlp_tune.training.callbacks.adaptation import AdaptationCallback
from allennlp_tune.training.callbacks.schedule_restart import (
    RestartedSchedule,
    check_restartable,
    restart,
)

logger = logging.getLogger(__name__)
# Metric names (their last "_" part) for which lower is better, when `metric` has no sign.
LOWER_IS_BETTER = ("loss", "mse", "mae", "rmse", "error", "perplexity")


@TrainerCallback.register("stack_then_finetune")
class StackThenFinetune(AdaptationCallback):
    """
    Stack-then-finetune ("stack-and-finetune", 2019): phase 1 trains only the task head and the
    scalar mix on the frozen encoder; phase 2 unfreezes every encoder group and fine-tunes all.
    Phase 1 lasts `frozen_epochs` epochs, or ends early after an epoch whose gap between the
    training and validation metric exceeds `max_gap` (the paper's rule: stop stacking while the
    two are still close, before the head overfits the frozen features).

    Phase 2 may give the encoder its own learning rate (`encoder_lr`, the top group's rate;
    lower groups keep their ratio to it, as the `discriminative` optimizer set them) and lower
    the head's (`head_lr_factor`). The encoder's parameters must be in the optimizer from the
    start, which the `discriminative` optimizer ensures (use `decay: 1.0` for one rate
    everywhere). By default the learning-rate schedule restarts at the switch, over the epochs
    that remain (warmup, then decay: phase 2 is a fine-tuning run of its own);
    `restart_schedule: false` lets it continue instead.

    Over an embedder in `mode: "bitfit"` or `mode: "lora"`, phase 1 is the same (the encoder is
    frozen: head and scalar mix only) and phase 2 trains what the mode trains: the encoder's
    biases, or its LoRA matrices, never its other weights. `encoder_lr` then sets the rate of the
    top group's biases / LoRA matrices (LoRA usually wants a higher rate than full fine-tuning).

    Registered as a `TrainerCallback` with name "stack_then_finetune".

    ```jsonnet
    "trainer": {
        "optimizer": {"type": "discriminative", "decay": 1.0,
                      "optimizer": {"type": "adam", "lr": 1e-3}},
        "learning_rate_scheduler": {"type": "slanted_triangular", "cut_frac": 0.1},
        "callbacks": [{"type": "stack_then_finetune", "frozen_epochs": 3, "max_gap": 0.05,
                       "encoder_lr": 2e-5, "head_lr_factor": 0.5}],
    }
    ```

    # Parameters

    frozen_epochs : `int`, optional (default = `1`)
        The most epochs phase 1 lasts.
    max_gap : `float`, optional (default = `None`)
        End phase 1 after an epoch where `training_<metric> - validation_<metric>` exceeds this
        (in the metric's own units, e.g. 0.05 for 5 points of accuracy; for a metric where lower
        is better, such as loss, the sign is flipped). `None`: epochs only.
    metric : `str`, optional (default = `None`)
        The metric for the gap; `None` uses the trainer's `validation_metric`. Signed like
        `validation_metric` (`"-loss"`, `"+accuracy"`); without a sign, the trainer's sign for
        that metric if it is the validation metric, else lower-is-better for names ending in
        `loss`, `mse`, `mae`, `rmse`, `error` or `perplexity` and higher-is-better otherwise.
    encoder_lr : `float`, optional (default = `None`)
        The top encoder group's learning rate in phase 2.
    head_lr_factor : `float`, optional (default = `1.0`)
        Multiplies the head's learning rate (every non-encoder group, the scalar mix included)
        at the switch, so the head, trained already, moves less while the encoder fine-tunes:
        0.5 halves it (fastai's `fine_tune`); 1.0 keeps it. With a scheduler, the scheduler
        scales from the new rate. Needs the `discriminative` optimizer.
    restart_schedule : `bool`, optional (default = `True`)
        Restart the trainer's `learning_rate_scheduler` at the switch, stretched over the
        remaining epochs (`slanted_triangular`, `linear_with_warmup`, `polynomial_decay`,
        `noam`); `false` continues it. No effect without a scheduler.
    freeze_by : `str`, optional (default = `"auto"`)
        See `allennlp_tune.training.callbacks.adaptation`.
    """

    def __init__(
        self,
        serialization_dir: str,
        frozen_epochs: int = 1,
        max_gap: Optional[float] = None,
        metric: Optional[str] = None,
        encoder_lr: Optional[float] = None,
        head_lr_factor: float = 1.0,
        restart_schedule: bool = True,
        freeze_by: str = "auto",
    ) -> None:
        super().__init__(serialization_dir, freeze_by=freeze_by)
        if frozen_epochs < 0:
            raise ConfigurationError(f"stack_then_finetune frozen_epochs is {frozen_epochs}; >= 0")
        self._frozen_epochs = frozen_epochs
        self._max_gap = max_gap
        self._metric = metric
        self._encoder_lr = encoder_lr
        if not head_lr_factor > 0:
            raise ConfigurationError(
                f"stack_then_finetune.head_lr_factor is {head_lr_factor}; it must be > 0 "
                "(1.0 keeps the head's rate, 0.5 halves it)."
            )
        self._head_lr_factor = head_lr_factor
        self._switch_epoch: Optional[int] = None  # first epoch of phase 2, once decided
        self._restart_schedule = restart_schedule
        self._restart_offset: Optional[int] = None  # batches before phase 2, once restarted

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        scheduler = trainer_access.learning_rate_scheduler(trainer)
        if self._restart_schedule:
            check_restartable(scheduler)
        if self._restart_offset is not None and scheduler is not None:
            # --recover after the switch: the scheduler's own state is already restored.
            trainer_access.replace_learning_rate_scheduler(
                trainer, RestartedSchedule(scheduler, self._restart_offset)
            )
        super().on_start(trainer, is_primary=is_primary, **kwargs)

    def groups_for_epoch(self, epoch: int, num_groups: int) -> int:
        switch = self._switch_epoch if self._switch_epoch is not None else self._frozen_epochs
        return num_groups if epoch >= switch else 0

    def on_epoch(self, trainer, metrics: Dict[str, Any], epoch: int, is_primary=True, **kwargs):
        if self._switch_epoch is None and self._max_gap is not None:
            gap = self._gap(trainer, metrics)
            metrics["adaptation_train_validation_gap"] = gap
            if gap is not None and gap > self._max_gap:
                logger.info("stack_then_finetune: gap %.4f > max_gap %s after epoch %d: phase 2",
                            gap, self._max_gap, epoch)  # fmt: skip
                self._switch_epoch = epoch + 1
        if self._switch_epoch is None and epoch + 1 >= self._frozen_epochs:
            self._switch_epoch = epoch + 1
        super().on_epoch(trainer, metrics, epoch, is_primary=is_primary, **kwargs)

    def on_phase_change(self, trainer, epoch: int) -> None:
        self._set_phase_two_rates(trainer)
        scheduler = trainer_access.learning_rate_scheduler(trainer)
        if self._restart_schedule and scheduler is not None and self._restart_offset is None:
            self._restart_offset = trainer_access.batches_completed(trainer)
            restart(scheduler, self._restart_offset, epoch, trainer_access.num_epochs(trainer))
            trainer_access.replace_learning_rate_scheduler(
                trainer, RestartedSchedule(scheduler, self._restart_offset)
            )
            logger.info("stack_then_finetune: the learning-rate schedule restarts at epoch %d "
                        "(batch %d)", epoch, self._restart_offset)  # fmt: skip

    def _set_phase_two_rates(self, trainer) -> None:
        """`encoder_lr` for the top encoder group (the others keep their ratio), the head's
        rates times `head_lr_factor`; the schedule then scales from these."""
        groups = trainer.optimizer.param_groups
        head = [g for g in groups if g.get("layer_group_name", "head").split("/")[0] == "head"]
        encoder = [g for g in groups if all(g is not h for h in head)]
        needs = [
            option
            for option, wanted in (
                ("encoder_lr", self._encoder_lr is not None),
                ("head_lr_factor", self._head_lr_factor != 1.0),
            )
            if wanted
        ]
        if needs and not encoder:
            raise ConfigurationError(
                f"stack_then_finetune.{needs[0]} needs the 'discriminative' optimizer, which puts "
                "the encoder's layers and the head in parameter groups of their own."
            )
        if self._encoder_lr is not None:
            self._scale(encoder, self._encoder_lr / max(group["lr"] for group in encoder))
        if self._head_lr_factor != 1.0:
            self._scale(head, self._head_lr_factor)
        scheduler = trainer_access.learning_rate_scheduler(trainer)
        if needs and scheduler is not None:
            if hasattr(scheduler, "base_values"):
                scheduler.base_values = [g.get("initial_lr", g["lr"]) for g in groups]
            torch_scheduler = getattr(scheduler, "lr_scheduler", None)
            if torch_scheduler is not None and hasattr(torch_scheduler, "base_lrs"):
                torch_scheduler.base_lrs = [g.get("initial_lr", g["lr"]) for g in groups]

    @staticmethod
    def _scale(groups, scale: float) -> None:
        for group in groups:
            group["lr"] *= scale
            for key in ("initial_lr", "initial_learning_rate"):
                if key in group:
                    group[key] *= scale

    def _gap(self, trainer, metrics: Dict[str, Any]) -> Optional[float]:
        sign, name = self._signed_metric(trainer)
        train, validation = metrics.get("training_" + name), metrics.get("validation_" + name)
        if train is None or validation is None:
            raise ConfigurationError(
                f"stack_then_finetune.max_gap needs training_{name} and validation_{name} in the "
                f"epoch metrics; found {sorted(metrics)}. Set stack_then_finetune.metric."
            )
        return sign * (train - validation)

    def _signed_metric(self, trainer) -> Tuple[int, str]:
        """(+1 if higher is better else -1, the metric's name) for the gap."""
        tracked = trainer_access.tracked_metrics(trainer) or [(-1, "loss")]
        if self._metric is None:
            return tracked[0]
        name = self._metric
        if name[0] in "+-":
            return (1 if name[0] == "+" else -1), name[1:]
        for sign, tracked_name in tracked:
            if tracked_name == name:
                return sign, name
        lower_is_better = name.lower().split("_")[-1] in LOWER_IS_BETTER
        return (-1 if lower_is_better or name.lower().endswith("loss") else 1), name

    def state_dict(self) -> Dict[str, Any]:
        return dict(
            super().state_dict(),
            switch_epoch=self._switch_epoch,
            restart_offset=self._restart_offset,
        )

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self._switch_epoch = state_dict["switch_epoch"]
        self._restart_offset = state_dict.get("restart_offset")
