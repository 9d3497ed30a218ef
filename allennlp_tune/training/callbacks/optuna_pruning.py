"""
The `optuna_pruning` trainer callback: reports each epoch's validation metric to the Optuna trial
that tune-search is training in this process, and stops a trial that the study's pruner gives
up on. tune-search says which trial that is with `reporting_to(trial, metric)` around the
training; outside it (a trial's `config.json` trained again with `allennlp train`) the callback
does nothing.
"""

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional

from allennlp.training.callbacks.callback import TrainerCallback

from allennlp_tune.training.trainer_access import ends_after


@dataclass
class _ActiveTrial:
    trial: Any
    metric: str


# The user attr of a trial the pruner stopped: the epoch it stopped after.
PRUNED_ATTR = "pruned_after_epoch"

# The trial this process is training (`reporting_to`); the trainer builds the callback from a
# config, so it cannot be handed the trial.
_ACTIVE: Optional[_ActiveTrial] = None


@contextlib.contextmanager
def reporting_to(trial: Any, metric: str) -> Iterator[None]:
    """While inside, `optuna_pruning` reports `validation_<metric>` to `trial`."""
    global _ACTIVE
    _ACTIVE = _ActiveTrial(trial, metric)
    try:
        yield
    finally:
        _ACTIVE = None


@TrainerCallback.register("optuna_pruning")
class OptunaPruningCallback(TrainerCallback):
    """
    After every epoch, reports the validation metric to the Optuna trial that tune-search is
    training, and stops the training (raising `optuna.TrialPruned`) when the study's pruner
    says so, except after the run's last epoch (its planned last, or the one after which
    patience runs out): pruning there saves no training and would throw away a finished run
    (no archive, no predictions, its value out of the study's best). tune-search adds it to
    every trial's trainer; anywhere else (a trial's `config.json` trained again with
    `allennlp train`) it does nothing.

    Registered as a `TrainerCallback` with name "optuna_pruning".

    ```jsonnet
    "trainer": {"callbacks": [{"type": "optuna_pruning"}]},
    ```

    # Parameters

    serialization_dir : `str`
        Given by the trainer.
    """

    def on_epoch(
        self,
        trainer: Any,
        metrics: Dict[str, Any],
        epoch: int,
        is_primary: bool = True,
        **kwargs,
    ) -> None:
        active = _ACTIVE
        if active is None or not is_primary:
            return
        value = metrics.get(f"validation_{active.metric}")
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            return  # no validation this epoch, or an undefined metric (constant predictions)
        active.trial.report(float(value), step=epoch)
        if ends_after(trainer, epoch):
            return  # stopping now saves nothing, and the finished trial keeps its result
        if active.trial.should_prune():
            import optuna

            # Before the trial is told: a process killed in between left it RUNNING, and a
            # resumed search must not train on what the pruner stopped (`trial_resume`).
            active.trial.set_user_attr(PRUNED_ATTR, epoch)
            raise optuna.TrialPruned(
                f"pruned after epoch {epoch}: validation {active.metric} = {value:.4f}"
            )
