"""
Every reach of allennlp-tune's callbacks into `GradientDescentTrainer` beyond its public
attributes, each with the reason AllenNLP 2.10.1 gives no public way. When AllenNLP changes
its trainer, this module is the one to read.

One reach lives elsewhere because it can only be made by a subclass: `TuneGradientDescentTrainer`
overrides the `_pytorch_model` property (`training/tune_trainer.py`), which the trainer's batch
loop reads, to hand it the compiled model.
"""

from typing import Any, Callable, List, Optional, Tuple


def is_distributed(trainer) -> bool:
    # DDP is chosen by the trainer's constructor; only `_distributed` records it.
    return bool(getattr(trainer, "_distributed", False))


def is_primary(trainer) -> bool:
    # Callbacks' `on_start` gets no `is_primary` in every release; `_primary` is the rank check.
    return bool(getattr(trainer, "_primary", True))


def epochs_completed_at_start(trainer) -> int:
    # After --recover the trainer resumes after this epoch; it is set before `on_start`.
    return getattr(trainer, "_start_after_epochs_completed", 0)


def callbacks_of(trainer) -> List[Any]:
    # The trainer's callbacks, to find its TensorBoard writer (no public list).
    return list(getattr(trainer, "_callbacks", []))


def learning_rate_scheduler(trainer) -> Optional[Any]:
    # The scheduler the trainer steps; the public constructor argument is not kept.
    return getattr(trainer, "_learning_rate_scheduler", None)


def replace_learning_rate_scheduler(trainer, scheduler: Any) -> None:
    # stack-then-finetune restarts the schedule at its phase change: the trainer must step the
    # restarted one, and only this attribute is what it steps.
    trainer._learning_rate_scheduler = scheduler


def batches_completed(trainer) -> int:
    # Where a restarted schedule starts counting; the trainer keeps no public batch count.
    return trainer._total_batches_completed


def num_epochs(trainer) -> int:
    # The planned epochs, for a restarted schedule's horizon (`num_epochs` is not public here).
    return trainer._num_epochs


def ends_after(trainer, epoch: int) -> bool:
    # Whether `epoch` is the run's last: its planned last, or patience ran out (the trainer's
    # metric tracker has this epoch's metric when callbacks' `on_epoch` runs, and stops after).
    if epoch >= trainer._num_epochs - 1:
        return True
    tracker = getattr(trainer, "_metric_tracker", None)
    return bool(tracker is not None and tracker.should_stop_early())


def tracked_metrics(trainer) -> List[Tuple[int, str]]:
    # The validation metric(s) as (sign, name); the metric tracker is the trainer's own.
    return getattr(trainer._metric_tracker, "tracked_metrics", None)


def run_before_rescaling(trainer, owner: object, action: Callable[[], None]) -> None:
    """
    Makes the trainer call `action()` right before its `rescale_gradients()`, which is the first
    thing it calls once a batch's backward passes are all done (every accumulated micro-batch,
    loss scaling, mixed precision) and before it measures and clips the gradient norm and steps
    the optimizer: the one point where gradients can be changed and there is no hook for it.
    Replaced on this trainer instance only; once per `owner`.
    """
    rescale = trainer.rescale_gradients
    if getattr(rescale, "_masks_for", None) is owner:
        return

    def act_then_rescale():
        action()
        return rescale()

    act_then_rescale._masks_for = owner  # type: ignore[attr-defined]
    trainer.rescale_gradients = act_then_rescale


def validation_data_loader(trainer) -> Optional[Any]:
    # The loader the trainer validates with; the public constructor argument is not kept.
    return getattr(trainer, "_validation_data_loader", None)


def replace_validation_data_loader(trainer, loader: Any) -> None:
    # `tune_frozen_features` validates from one tensor of frozen features: the trainer's
    # validation loop reads only this attribute.
    trainer._validation_data_loader = loader
