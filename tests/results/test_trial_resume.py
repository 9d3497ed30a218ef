"""
A `--budget` search trial killed with `kill -9` in any rung of successive halving is trained on
from its checkpoint by the next search (`trial_resume`): the same trial, its reported epochs and
passed rungs kept, each epoch trained and counted once; and one whose data or seed changed since
is not resumed but trained again from its start.

The kill is real: a child process trains the trial and sends itself SIGKILL right after
AllenNLP saved the checkpoint of a given epoch (no handler, no cleanup, as `kill -9` from a
shell at that moment), so the test knows which epochs were done.
"""

import json
import signal
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

import allennlp_tune  # noqa: F401  (registers the components, sets the ext var defaults)
from allennlp_tune.experiments.budget_run import run_budget
from allennlp_tune.experiments.fingerprint import fingerprint
from allennlp_tune.experiments.search import FINGERPRINT_ATTR, trial_params
from allennlp_tune.experiments.trial_resume import why_not_resumable
from allennlp_tune.training.callbacks.optuna_pruning import PRUNED_ATTR

sys.path.insert(0, str(Path(__file__).parent))
from test_budget import study_trials, written_configs  # noqa: E402
from test_compare import BERT  # noqa: E402

EPOCHS = 5  # successive halving judges rung 0 after epoch 2 (step 1), rung 1 after epoch 4
SPACE = {"ft": ("TUNE_LR=1e-5:2e-4:log",)}
EXT_VARS = {"TUNE_BERT_MODEL": str(BERT), "TUNE_EPOCHS": str(EPOCHS)}
STUDY = "reviews_bertuncased_ft"

# The child: the search as tune-compare runs it, dying right after a given epoch's checkpoint.
CHILD = """
import json, os, signal, sys
from pathlib import Path
from allennlp.training.checkpointer import Checkpointer
from allennlp_tune.experiments.budget_run import run_budget

args = json.loads(sys.argv[1])
save = Checkpointer.maybe_save_checkpoint

def save_then_die(self, trainer, epochs, batches):
    saved = save(self, trainer, epochs, batches)
    if saved and epochs == args["kill_after"] and batches == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return saved

Checkpointer.maybe_save_checkpoint = save_then_die
run_budget({"ft": Path(args["config"])}, 1, Path(args["results"]), "reviews", "bertuncased",
           "bert", args["ext_vars"], spaces=args["space"], pruner="halving")
"""


def search(config: Path, results: Path):
    return run_budget({"ft": config}, 1, results, "reviews", "bertuncased", "bert", EXT_VARS,
                      spaces=SPACE, pruner="halving")["ft"]  # fmt: skip


def killed_search(config: Path, results: Path, kill_after: int) -> None:
    args = {"config": str(config), "results": str(results), "ext_vars": EXT_VARS,
            "space": SPACE, "kill_after": kill_after}  # fmt: skip
    child = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True,
                           text=True, timeout=600)  # fmt: skip
    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]


@pytest.mark.parametrize("kill_after", [1, 3])
def test_a_trial_killed_in_a_rung_trains_on_from_its_checkpoint(tmp_path, capsys, kill_after):
    """
    Killed after epoch 1 (inside rung 0, before the pruner judged it) or after epoch 3 (rung 0
    passed at epoch 2, inside rung 1): the next search trains the same trial on, from that
    checkpoint, to its 5 epochs. Every epoch is reported once and counted once in the cost, the
    values of the epochs before the kill stay as they were, a passed rung keeps the value it
    passed with, and the search trains no new trial.
    """
    [config] = written_configs(tmp_path, ["ft"])
    results = tmp_path / "out"
    killed_search(config, results, kill_after)
    [left] = study_trials(results, STUDY)
    assert left.state == optuna.trial.TrialState.RUNNING
    assert sorted(left.intermediate_values) == list(range(kill_after))
    passed = {key: value for key, value in left.system_attrs.items() if "completed_rung" in key}
    assert len(passed) == (1 if kill_after == 3 else 0)
    trial_dir = Path(left.user_attrs["run_dir"])
    assert (trial_dir / f"model_state_e{kill_after}_b0.th").is_file()
    capsys.readouterr()

    resumed = search(config, results)

    err = capsys.readouterr().err
    assert f"trial 0, left running by a killed process, trains on from its checkpoint after " \
           f"epoch {kill_after}" in err  # fmt: skip
    assert resumed.trained_now == 1 and resumed.trials == {"complete": 1, "pruned": 0, "failed": 0}
    [trial] = study_trials(results, STUDY)
    assert trial.number == 0 and trial.state == optuna.trial.TrialState.COMPLETE
    assert sorted(trial.intermediate_values) == list(range(EPOCHS))
    for step, value in left.intermediate_values.items():
        assert trial.intermediate_values[step] == value
    for key, value in passed.items():
        assert trial.system_attrs[key] == value
    assert "completed_rung_1" in trial.system_attrs  # judged after the resume, at epoch 4
    # Each epoch trained once: five validations in the log both processes wrote (AllenNLP's
    # recover reads the data of the epochs it skips, without training or validating them), and
    # the cost record (its state restored from the checkpoint) counts five epochs.
    log = (trial_dir / "out.log").read_text()
    assert log.count("gradient_descent_trainer - Beginning training.") == 2
    assert log.count("gradient_descent_trainer - Validating") == EPOCHS
    cost = json.loads((trial_dir / "cost.json").read_text())
    assert len(cost["epoch_instances"]) == EPOCHS and cost["epochs"] == EPOCHS
    assert len(set(cost["epoch_instances"])) == 1  # each a whole epoch of the training set
    info = json.loads((trial_dir / "tune_run.json").read_text())
    assert info["status"] == "ok" and info["resumed_after_epochs"] == kill_after
    assert (trial_dir / "model.tar.gz").is_file() and not list(trial_dir.glob("*.th"))


def test_a_killed_trial_whose_data_changed_trains_again_from_its_start(tmp_path, capsys):
    """The training data changed after the kill: resuming would mix two datasets in one run,
    so the trial is given back (failed, interrupted) and its setting trained anew, and the
    line says which file changed."""
    [config] = written_configs(tmp_path, ["ft"])
    results = tmp_path / "out"
    killed_search(config, results, 1)
    train = tmp_path / "task" / "train.csv"
    train.write_text(train.read_text() + "an extra review,pos\n")
    capsys.readouterr()

    resumed = search(config, results)

    err = capsys.readouterr().err
    assert "trial 0, left running by a killed process, is not resumed: what it trains from " \
           "changed: train.csv changed" in err  # fmt: skip
    dead, again = study_trials(results, STUDY)
    assert dead.state == optuna.trial.TrialState.FAIL and dead.user_attrs["interrupted"]
    assert again.params == dead.params and again.state == optuna.trial.TrialState.COMPLETE
    assert resumed.trials == {"complete": 1, "pruned": 0, "failed": 0}
    info = json.loads((results / "search" / STUDY / "trial_1" / "tune_run.json").read_text())
    assert "resumed_after_epochs" not in info


def test_what_keeps_a_left_trial_from_resuming(tmp_path):
    """`why_not_resumable` on a trial as a killed process leaves it (its config.json, a
    checkpoint pair, its fingerprint), then with one thing wrong at a time."""
    [config] = written_configs(tmp_path, ["ft"])
    ext_vars = {**EXT_VARS, "TUNE_SEED": "1"}
    searched = {"TUNE_LR": "5e-05"}
    raw = trial_params(config, {**ext_vars, **searched}, None)
    run_dir = tmp_path / "trial_0"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps(raw))
    for name in ("model_state_e2_b0.th", "training_state_e2_b0.th"):
        (run_dir / name).write_bytes(b"state")
    study = optuna.create_study(direction="maximize")
    left = study.ask()
    left.set_user_attr("run_dir", str(run_dir))
    left.set_user_attr("ext_vars", searched)
    left.set_user_attr(FINGERPRINT_ATTR, fingerprint(raw))

    def why(ext=ext_vars):
        return why_not_resumable(study.trials[0], config, ext, None)

    assert why() == (2, "")
    assert why({**ext_vars, "TUNE_SEED": "2"})[1].startswith(
        "its config.json differs from its config now (random_seed 1 -> 2"
    )
    assert "trainer.num_epochs 5 -> 3" in why({**ext_vars, "TUNE_EPOCHS": "3"})[1]
    (run_dir / "training_state_e2_b0.th").unlink()
    assert why() == (None, "it saved no checkpoint (killed in its first epoch)")
    (run_dir / "training_state_e2_b0.th").write_bytes(b"state")
    # Epoch 0 was the best, and its best.th is gone: the archive could not be made.
    (run_dir / "metrics_epoch_1.json").write_text(json.dumps({"best_epoch": 0}))
    assert why() == (None, f"its best weights ({run_dir / 'best.th'}) are missing")
    (run_dir / "best.th").write_bytes(b"epoch 0")
    assert why() == (2, "")
    (tmp_path / "task" / "dev.csv").write_text("review,sentiment\nchanged,neg\n")
    assert why()[1].startswith("what it trains from changed: dev.csv changed")
    left.set_user_attr(PRUNED_ATTR, 1)
    assert why() == (None, "the pruner had stopped it")
