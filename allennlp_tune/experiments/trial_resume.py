"""
A search trial that a killed process left half-trained, trained on from its last checkpoint.

`kill -9` (or a crash, or the machine going down) in the middle of a one-process `--budget`
search leaves its trial RUNNING in the study, with AllenNLP's end-of-epoch checkpoints in its
folder and, in the study, the epochs it reported and the rungs of successive halving it passed
(`completed_rung_<r>`). Training its setting again as a new trial would train those epochs a
second time and judge its rungs again, on a later epoch's score and against its own earlier
entry. So the next one-process search, which holds the results folder's lock (no other process
can be training the trial), trains the same Optuna trial on: same number, folder, reported
epochs and passed rungs, with AllenNLP's `recover` from the latest checkpoint
(`search._run_resumed`). The cost record goes on too (`tune_cost` keeps its state in the
checkpoint), so each epoch is counted once; `tune_run.json` says `resumed_after_epochs`.
Only the epoch in progress when the process died is trained again.

Only when it is the same run (`why_not_resumable`): the trial's config rendered now equals its
folder's `config.json` (seeds and devices included: AllenNLP's recover refuses any difference),
and its data, encoder and packages still match the fingerprint it recorded when it started
(`search.FINGERPRINT_ATTR`, `fingerprint.differences`). Otherwise, or where it saved no
checkpoint (killed in its first epoch), had finished, or the pruner had stopped it, the trial
is given back as before (`budget._reclaim_dead_trials`: failed, interrupted, its setting
trained again first from its start) and a line says why. Workers (`budget_workers`) do not
resume in place: another worker may still be training a RUNNING trial.
"""

import os
import re
import shutil
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from allennlp_tune.experiments.fingerprint import differences, fingerprint
from allennlp_tune.experiments.search import FINGERPRINT_ATTR, trial_params
from allennlp_tune.rundir import CONFIG_NAME, RUN_INFO_NAME, SEED_KEYS, read_json
from allennlp_tune.training.callbacks.optuna_pruning import PRUNED_ATTR

# The weights AllenNLP archives: those of the best epoch so far.
BEST_WEIGHTS = "best.th"
# AllenNLP's checkpoint names (`Checkpointer._model_state_file`): epochs and batches completed,
# and a worker's rank where the state is sharded.
_MODEL_STATE = re.compile(r"model_state_e(\d+)_b(\d+)(_w\d+)?\.th$")


def checkpoint_epochs(run_dir: Path) -> Optional[int]:
    """The epochs completed at the latest checkpoint AllenNLP's recover would load from
    `run_dir` (`Checkpointer.find_latest_checkpoint`); None without one, where its training
    state is missing (the kill came between the model's file and it: recover would fail), or
    where it is not an end-of-epoch checkpoint of one process (`model_state_e<N>_b0.th`, the
    only kind a search trial saves, whose weights `best.th` links to)."""
    from allennlp.training.checkpointer import Checkpointer

    latest = Checkpointer(str(run_dir)).find_latest_checkpoint()
    if latest is None or not Path(latest[1]).is_file():  # killed between its two files
        return None
    found = _MODEL_STATE.search(Path(latest[0]).name)
    if found is None or found.group(2) != "0" or found.group(3):
        return None
    return int(found.group(1))


def why_not_resumable(
    trial: Any, config: Path, ext_vars: Mapping[str, str], overrides: Optional[str]
) -> Tuple[Optional[int], str]:
    """
    Whether the RUNNING `trial` (a `FrozenTrial` a killed process left) can be trained on:
    `(epochs of its checkpoint, "")`, or `(None, why not)`. `config`, `ext_vars` and
    `overrides` are what its search renders a trial with now (the trial's own values added).
    """
    folder = trial.user_attrs.get("run_dir")
    if not folder or not Path(folder).is_dir():
        return None, "its folder is gone"
    run_dir = Path(folder)
    if PRUNED_ATTR in trial.user_attrs:
        return None, "the pruner had stopped it"
    if (run_dir / RUN_INFO_NAME).is_file():
        return None, f"it had finished ({run_dir / RUN_INFO_NAME} is there)"
    epochs = checkpoint_epochs(run_dir)
    if epochs is None:
        return None, "it saved no checkpoint (killed in its first epoch)"
    started = trial.user_attrs.get(FINGERPRINT_ATTR)
    trained = read_json(run_dir / CONFIG_NAME)
    if not isinstance(started, dict) or not isinstance(trained, dict):
        return None, "it did not record what it trains from when it started"
    searched = dict(trial.user_attrs.get("ext_vars") or {})
    now_vars = {**ext_vars, **{name: str(value) for name, value in searched.items()}}
    now = trial_params(config, now_vars, overrides)
    info = {"fingerprint": started, "ext_vars": now_vars}
    changed = differences(trained, info, now, fingerprint(now), now_vars)
    if changed:
        return None, "what it trains from changed: " + "; ".join(changed[:3])
    if trained != now:  # seeds and devices, which `differences` leaves out
        named = [
            f"{key} {trained.get(key)!r} -> {now.get(key)!r}"
            for key in SEED_KEYS
            if trained.get(key) != now.get(key)
        ]
        return None, "its config.json differs from its config now (" + (
            "; ".join(named) if named else "its device"
        ) + ")"
    missing = _best_weights_problem(run_dir, epochs, trained)
    if missing:
        return None, missing
    return epochs, ""


def _best_weights_problem(run_dir: Path, epochs: int, trained: Mapping[str, Any]) -> str:
    """Why the best weights of a trial checkpointed after `epochs` cannot be had (`""` when
    they can: saved, or to be linked by `_restore_best_weights`), from `_best_weights`."""
    state = _best_weights(run_dir, epochs)
    if state == "missing":
        return f"its best weights ({run_dir / BEST_WEIGHTS}) are missing"
    averaged = (trained.get("trainer") or {}).get("moving_average") is not None
    if state == "unlinked" and averaged:
        return "it was killed before it saved its best (averaged) weights"
    return ""


def _restore_best_weights(run_dir: Path, epochs: int) -> None:
    """`best.th` made the checkpoint's weights, as AllenNLP would have linked them, where the
    kill came before it did (`_best_weights`: "unlinked")."""
    if _best_weights(run_dir, epochs) != "unlinked":
        return
    best = run_dir / BEST_WEIGHTS
    model_state = run_dir / f"model_state_e{epochs}_b0.th"
    partial = best.with_name(best.name + ".tmp")
    partial.unlink(missing_ok=True)
    try:
        os.link(model_state, partial)
    except OSError:
        shutil.copyfile(model_state, partial)
    os.replace(partial, best)


def _best_weights(run_dir: Path, epochs: int) -> str:
    """
    Where the best weights of a trial checkpointed after `epochs` (`checkpoint_epochs`) stand.
    AllenNLP saves an epoch's checkpoint and then, where the epoch is the best so far, `best.th`
    (a link to the checkpoint's weights), which the archive is made of: a kill in between
    leaves `best.th` missing or an older epoch's while the restored metric tracker names the
    last epoch best ("unlinked"). Else "saved", or "missing" where an earlier best epoch's
    `best.th` is gone. (With a moving average `best.th` holds the averaged weights, which no
    checkpoint has: `_best_weights_problem`.)
    """
    last = read_json(run_dir / f"metrics_epoch_{epochs - 1}.json") or {}
    best = run_dir / BEST_WEIGHTS
    if last.get("best_epoch") == epochs - 1:
        model_state = run_dir / f"model_state_e{epochs}_b0.th"
        written = best.is_file() and best.stat().st_mtime_ns >= model_state.stat().st_mtime_ns
        return "saved" if written else "unlinked"
    return "missing" if "best_epoch" in last and not best.is_file() else "saved"


def dead_trials(
    study: Any, config: Path, ext_vars: Mapping[str, str], overrides: Optional[str]
) -> Tuple[Dict[int, int], List[Tuple[int, str]]]:
    """The study's RUNNING trials (one-process search: each left by a killed process), split:
    those to train on (number -> epochs of the checkpoint; their `best.th` restored where the
    kill came before AllenNLP saved it) and the others, each with why."""
    from optuna.trial import TrialState

    resume: Dict[int, int] = {}
    again: List[Tuple[int, str]] = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        epochs, why = why_not_resumable(trial, config, ext_vars, overrides)
        if epochs is None:
            again.append((trial.number, why))
        else:
            _restore_best_weights(Path(trial.user_attrs["run_dir"]), epochs)
            resume[trial.number] = epochs
    return resume, again


def resume_lines(
    tool: str, mode: str, resume: Mapping[int, int], again: List[Tuple[int, str]]
) -> List[str]:
    """What the search says of the trials a killed process left."""
    lines = [
        f"{tool}: {mode}: trial {number}, left running by a killed process, trains on from its "
        f"checkpoint after epoch {epochs}; its reported epochs and passed rungs stay"
        for number, epochs in resume.items()
    ]
    lines += [
        f"{tool}: {mode}: trial {number}, left running by a killed process, is not resumed: "
        f"{why}; its setting trains again from its start"
        for number, why in again
    ]
    return lines


__all__ = ["checkpoint_epochs", "dead_trials", "resume_lines", "why_not_resumable"]
