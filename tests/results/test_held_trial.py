"""`HeldTrial`: the claim protocol that the grid's workers and `--budget`'s search workers share
(heartbeats while held, the give-back on an interrupt, the tell, the "given to another worker"
case), on a real Optuna RDB storage."""

import time

import optuna
import pytest
from optuna.trial import TrialState

from allennlp_tune.experiments.workers import Coordinator, HeldTrial
from allennlp_tune.host_access import storage_trial_id


@pytest.fixture()
def queue(tmp_path):
    """A study on the workers' storage (heartbeats on, the retry callback), two runs queued."""
    storage, retry = Coordinator(f"sqlite:///{tmp_path / 'q.db'}", heartbeat_s=1).open_storage()
    study = optuna.create_study(study_name="grid", storage=storage)
    for run in ("a/seed_1", "a/seed_2"):
        study.enqueue_trial({}, user_attrs={"run": run})
    return study, storage, retry


def waiting_runs(study):
    return [t.user_attrs["run"] for t in study.get_trials(states=(TrialState.WAITING,))]


def test_a_trial_trained_to_its_end_is_told_with_its_value_and_attrs(queue):
    study, storage, retry = queue
    trial = study.ask()
    with HeldTrial(study, storage, retry, trial, 1) as held:
        time.sleep(0.05)
    assert held.tell(12.5, status="ok")
    [done] = study.get_trials(states=(TrialState.COMPLETE,))
    assert done.value == 12.5 and done.user_attrs == {"run": "a/seed_1", "status": "ok"}
    assert waiting_runs(study) == ["a/seed_2"]


def test_an_interrupt_gives_the_trial_back_at_once(queue):
    """Ctrl-C (KeyboardInterrupt) or an error inside the block: failed and queued again now,
    not after the grace; the error goes on."""
    study, storage, retry = queue
    for error in (KeyboardInterrupt(), RuntimeError("disk full")):
        trial = study.ask()
        with pytest.raises(type(error)):
            with HeldTrial(study, storage, retry, trial, 1):
                raise error
        assert storage.get_trial(storage_trial_id(trial)).state == TrialState.FAIL
    assert sorted(waiting_runs(study)) == ["a/seed_1", "a/seed_2"]  # both back in the queue


@pytest.mark.parametrize("state", [TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL])
def test_a_trial_given_to_another_worker_meanwhile_is_not_told(queue, state):
    """This worker stalled past the grace: another failed its trial as stale and queued it
    again. Its tell says False (whatever it ended as) and changes nothing."""
    study, storage, retry = queue
    trial = study.ask()
    with HeldTrial(study, storage, retry, trial, 1) as held:
        storage.set_trial_state_values(storage_trial_id(trial), state=TrialState.FAIL)  # the other
    value = 3.0 if state == TrialState.COMPLETE else None
    assert held.tell(value, state=state, status="ok") is False
    assert storage.get_trial(storage_trial_id(trial)).state == TrialState.FAIL


def test_a_tell_that_fails_for_another_reason_still_raises(queue):
    """A trial still RUNNING that Optuna refuses to end (a value it cannot take) is no "given to
    another worker": the error goes on."""
    study, storage, retry = queue
    trial = study.ask()
    with HeldTrial(study, storage, retry, trial, 1) as held:
        pass
    with pytest.raises(ValueError):
        held.tell(None, state=TrialState.WAITING)
    assert storage.get_trial(storage_trial_id(trial)).state == TrialState.RUNNING
