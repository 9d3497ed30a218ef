"""
Restarting a step-based learning-rate schedule at the start of a later epoch (used by
`stack_then_finetune` for its phase 2). Not registered itself.

AllenNLP's trainer calls `scheduler.step_batch(batches_completed_since_the_start)`. A restarted
schedule sees the count since the restart instead, and its length is the epochs that remain, so
phase 2 gets the whole schedule as configured: warmup, then decay to the end of training.

The trainer checkpoints `scheduler.state_dict()`: the wrapper hands over the inner scheduler's
state (with its shortened length), and the callback keeps the offset in its own state, so
`allennlp train --recover` rebuilds exactly the same schedule.
"""

from typing import Any, Dict, Optional

from allennlp.common.checks import ConfigurationError
from allennlp.training.learning_rate_schedulers import (
    NoamLR,
    PolynomialDecay,
    SlantedTriangular,
)

RESTARTABLE = "slanted_triangular, linear_with_warmup, polynomial_decay, noam"


class RestartedSchedule:
    """`inner`, counting batches from `offset` on; everything else is passed through."""

    def __init__(self, inner, offset: int) -> None:
        self.inner = inner
        self.offset = offset

    def step_batch(self, batch_num_total: Optional[int] = None) -> None:
        if batch_num_total is not None:
            batch_num_total -= self.offset
        self.inner.step_batch(batch_num_total)

    def step(self, metric: Optional[float] = None) -> None:
        self.inner.step(metric)

    def state_dict(self) -> Dict[str, Any]:
        return self.inner.state_dict()

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self.inner.load_state_dict(state_dict)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def check_restartable(scheduler) -> None:
    if scheduler is not None and not isinstance(
        scheduler, (PolynomialDecay, SlantedTriangular, NoamLR)
    ):
        raise ConfigurationError(
            f"stack_then_finetune.restart_schedule cannot restart a {type(scheduler).__name__} "
            f"(it can restart: {RESTARTABLE}). Set restart_schedule: false to let the schedule "
            "continue across the switch."
        )
    if isinstance(scheduler, SlantedTriangular) and scheduler.gradual_unfreezing:
        raise ConfigurationError(
            "stack_then_finetune.restart_schedule: slanted_triangular's own gradual_unfreezing "
            "cannot be combined with stack_then_finetune; remove it from the scheduler."
        )


def restart(scheduler, batches_done: int, epochs_done: int, num_epochs: int) -> None:
    """Shortens `scheduler` to the `num_epochs - epochs_done` epochs that remain, from step 0."""
    remaining = max(1, num_epochs - epochs_done)
    steps_per_epoch = max(1, batches_done // max(1, epochs_done))
    if isinstance(scheduler, PolynomialDecay):
        scheduler.total_steps = remaining * steps_per_epoch
    elif isinstance(scheduler, SlantedTriangular):
        scheduler.num_epochs = remaining
        scheduler.num_steps_per_epoch = steps_per_epoch
        scheduler.batch_num_total_epoch_end = [0]
    # Step 0 of the new schedule (resets the step counters), before phase 2's first batch.
    scheduler.step_batch(0)
