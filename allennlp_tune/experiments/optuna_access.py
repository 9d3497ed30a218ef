"""
Every reach of allennlp-tune into Optuna beyond its public API, with the reason Optuna gives no
public way (as `training/trainer_access.py` does for AllenNLP's trainer). When Optuna changes,
this module is the one to read.
"""

from typing import Any


def storage_trial_id(trial: Any) -> int:
    """
    The storage's id of a `Trial` or `FrozenTrial`, which both keep private (`_trial_id`): the
    heartbeat of a trial a worker trains (`RDBStorage.record_heartbeat`), and marking a trial a
    killed process left running as failed (`RDBStorage.set_trial_state_values`), take it, and
    `trial.number` is not it once a storage holds several studies.
    """
    return trial._trial_id
