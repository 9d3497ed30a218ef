"""
One mode's `--budget` search in this process (`budget_run` runs one per mode under the results
folder's lock; workers share theirs through `budget_workers`): its study resumed where an
earlier command left it, the trials still to run (a number, or until a compute budget is
spent), the lines it starts with, and its trials through `search.run_search` with the budget's
sampler and pruner. The search's parts (spaces, starts, samplers, pruners, the record) are in
`budget`.
"""

import contextlib
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_tune.experiments.budget import (
    SAMPLER_SEED,
    BudgetJob,
    ModeSearch,
    _finished,
    _load_study,
    _reclaim_dead_trials,
    budget_pruner,
    counted_trials,
    keep_pruner,
    mode_result,
    trial_seeded_sampler,
)
from allennlp_tune.experiments.search import interrupted_settings, run_search, set_missing_attrs
from allennlp_tune.experiments.trial_resume import dead_trials, resume_lines
from allennlp_tune.planning.render import duration
from allennlp_tune.rundir import COST_NAME, config_stem, read_json


def _search_mode(
    job: BudgetJob,
    mode: str,
    config: Path,
    storage: str,
    compute: Optional["ComputeBudget"] = None,  # noqa: F821  (budget_compute's)
) -> ModeSearch:
    """
    One mode of `job` searched, resumed where its study stands: `job.budget` trials, or with
    `compute` (`budget_compute`) trials until they spent its total (at least `job.budget`, at
    most its cap).
    """
    from allennlp_tune.experiments.budget_compute import trials_compute

    params, space = job.space_of(mode)
    name = config_stem(config)
    study = _resumed_study(storage, name, job.search_dir, space, job.pruner)
    finished = _finished(study) if study is not None else {"complete": 0, "pruned": 0, "failed": 0}
    done = sum(finished.values())
    most = job.budget if compute is None else compute.cap
    if done > most:
        raise ConfigurationError(
            f"--budget {job.budget}: study {name} in {job.search_dir} has {done} finished "
            f"trials already, more than the budget; give --budget {done} or more (every mode "
            "then gets that many), or another --results-dir."
        )
    wordpieces = compute.wordpieces_per_instance if compute is not None else None
    spent = trials_compute(counted_trials(study), wordpieces) if study is not None else 0.0
    remaining, stop = _trials_left(job.budget, done, spent, compute)
    resume: Dict[int, int] = {}
    if study is not None:
        resume, study = _dead_trials(job, mode, config, study, storage, remaining > 0)
    again = interrupted_settings(study) if study is not None else []
    # The start is read off the config once, when the study is new, and kept with it.
    start, notes = job.start_of(study, config, params)
    _say_search(job.tool, mode, job.budget, compute, space, done, spent, remaining, notes, again)
    record = {"budget_space": space, "budget_pruner": job.pruner, "budget_start": start,
              "budget_notes": notes}  # fmt: skip
    if remaining > 0:
        print(
            f"{job.tool}: {mode}: training {'up to ' if stop else ''}{remaining} trial(s) in this "
            "process; their logs: "
            f"{job.search_dir / name}/trial_<n>/out.log",
            file=sys.stderr,
        )
        enqueue = ([start] if start else []) + again
        said = _trial_line(job.tool, mode, compute.cap if compute else job.budget, stop)
        _run_trials(job, config, params, remaining, name, storage, enqueue, stop, resume, record,
                    said)  # fmt: skip
        study = _load_study(storage, name)
    set_missing_attrs(study, record)  # a study from before they were recorded first
    result = mode_result(
        mode, study, name, config, space, start, notes, _finished(study), done, job.search_dir
    )
    if compute is not None:
        result.compute = trials_compute(counted_trials(study), wordpieces)
    return result


def _resumed_study(
    storage: str,
    name: str,
    search_dir: Path,
    space: List[str],
    pruner: str,
) -> Any:
    """The mode's study as an earlier command left it (None when new): refused when it was
    searched over another space or with another pruner."""
    study = _load_study(storage, name)
    if study is None:
        return None
    recorded = study.user_attrs.get("budget_space")
    if recorded is not None and list(recorded) != space:
        raise ConfigurationError(
            f"--budget: study {name} in {search_dir} searched {' '.join(recorded)}, not "
            f"{' '.join(space)}; its trials would not count toward this search. Use another "
            "--results-dir, or the space it was searched over."
        )
    keep_pruner(study, pruner, f"study {name} in {search_dir}")
    return study


def _dead_trials(
    job: BudgetJob, mode: str, config: Path, study: Any, storage: str, trials_left: bool
) -> Tuple[Dict[int, int], Any]:
    """
    The trials a killed process left RUNNING (this process holds the results folder's lock):
    those that can be trained on from their checkpoint (`trial_resume`) stay RUNNING and are
    returned (number -> epochs of the checkpoint), unless the search has no trial left to run
    (a budget in compute already spent); the others are given back (`_reclaim_dead_trials`).
    Returns them with the study, reloaded where it changed.
    """
    resume, again = dead_trials(study, config, job.trial_ext_vars, job.overrides)
    if not trials_left:
        again += [(number, "the search's budget is spent") for number in resume]
        resume = {}
    for line in resume_lines(job.tool, mode, resume, again):
        print(line, file=sys.stderr)
    if _reclaim_dead_trials(study, storage, job.keep_checkpoints, keep=resume):
        study = _load_study(storage, study.study_name)
    return resume, study


def _trials_left(
    budget: int,
    done: int,
    spent: float,
    compute: Optional["ComputeBudget"],  # noqa: F821
) -> Tuple[int, Optional[Callable[[Any], bool]]]:
    """The trials still to run and, under a compute budget, the rule that ends the search once
    the trials spent its total (`stop(study)`); None for a budget in trials."""
    if compute is None:
        return budget - done, None
    from allennlp_tune.experiments.budget_compute import search_is_done, trials_compute

    wordpieces = compute.wordpieces_per_instance
    remaining = 0 if search_is_done(done, spent, compute) else compute.cap - done

    def stop(study: Any) -> bool:
        trials = counted_trials(study)
        return search_is_done(len(trials), trials_compute(trials, wordpieces), compute)

    return remaining, stop


def _say_search(
    tool: str,
    mode: str,
    budget: int,
    compute: Optional["ComputeBudget"],  # noqa: F821
    space: List[str],
    done: int,
    spent: float,
    remaining: int,
    notes: List[str],
    again: List[Dict[str, Any]],
) -> None:
    """The lines a mode's search starts with: its budget and space, what finished before, the
    start's notes, and the interrupted trials that run again."""
    from allennlp_tune.reporting.costs import format_params

    if compute is None:
        said = f"{budget} trials"
        before = f"{done} finished before" + (f", {remaining} to run" if remaining else "")
    else:
        said = (
            f"trials until they spend {format_params(compute.total)} encoder forward passes "
            f"(--budget {budget} in compute: {budget} trials of {compute.reference}; at least "
            f"{budget}, at most {compute.cap} trials)"
        )
        before = f"{done} finished before, {format_params(spent)} spent"
    print(f"{tool}: {mode}: {said} over {' '.join(space)} ({before})", file=sys.stderr)
    for note in notes:
        print(f"{tool}: {mode}: {note}", file=sys.stderr)
    if again and remaining > 0:
        print(
            f"{tool}: {mode}: {len(again)} trial(s) were stopped (interrupted or killed) before "
            "they finished; they do not count, and their settings run again first",
            file=sys.stderr,
        )


def _run_trials(
    job: BudgetJob,
    config: Path,
    params: Sequence[Any],
    trials: int,
    name: str,
    storage: str,
    enqueue: List[Dict[str, Any]],
    stop: Optional[Callable[[Any], bool]],
    resume: Dict[int, int],
    record: Dict[str, Any],
    said: Callable[[Any, Any], None],
) -> None:
    """`trials` more trials of the study `name` (`run_search`), those to `resume` first, then
    the enqueued settings, with the budget's sampler and pruner; the study records the search's
    space, pruner and start (`record`) before its first trial."""
    # AllenNLP's training logs every parameter to the terminal; each trial keeps them in its
    # out.log, and the terminal keeps the lines of the comparison.
    with open(os.devnull, "w", encoding="utf-8") as quiet:
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            run_search(
                config,
                params,
                trials,
                name,
                job.search_dir,
                storage=storage,
                pruning=True,
                ext_vars=job.ext_vars,
                seed=job.search_seed,
                overrides=job.overrides,
                keep_checkpoints=job.keep_checkpoints,
                sampler=trial_seeded_sampler(SAMPLER_SEED),
                pruner=budget_pruner(job.pruner),
                enqueue=enqueue,
                stop=stop,
                resume=resume,
                study_attrs=record,
                after_trial=said,
            )


def _trial_line(
    tool: str, mode: str, total: int, stop: Optional[Callable[[Any], bool]]
) -> Callable[[Any, Any], None]:
    """
    The Optuna callback that says, on the command's stderr (the trials' own output goes to
    their logs), how each trial ended and where the search stands: its trials finished of
    `total` (at most `total` under a budget in compute, `stop`), the best so far, and the time
    the rest would take at the mean training time of the trials so far (their `cost.json`:
    measured on this machine, pruned trials at what they trained, so the pruner's saving is
    in it).
    """
    from allennlp_tune.reporting.panel_data import run_seconds

    terminal = sys.stderr
    ended = {"COMPLETE": "finished", "PRUNED": "pruned", "FAIL": "failed"}

    def said(study: Any, trial: Any) -> None:
        counted = counted_trials(study)
        seconds = [
            run_seconds(read_json(Path(t.user_attrs["run_dir"]) / COST_NAME))
            for t in counted
            if t.user_attrs.get("run_dir")
        ]
        known = [value for value in seconds if value is not None]
        metric = study.user_attrs.get("metric", "metric")
        value = trial.value
        if value is None and trial.intermediate_values:  # pruned: its last epoch's
            value = trial.intermediate_values[max(trial.intermediate_values)]
        scored = f" (dev {metric} {value:.4f})" if value is not None else ""
        best = ""
        if any(t.state.name == "COMPLETE" for t in counted):
            top = study.best_trial
            best = f", best so far trial {top.number} ({top.value:.4f})"
        left = max(total - len(counted), 0)
        ahead = ""
        if left and known:
            mean = sum(known) / len(known)
            ahead = f"; the {left} left: about {duration(left * mean)} at these trials' mean"
        print(
            f"{tool}: {mode}: trial {trial.number} {ended.get(trial.state.name, 'ended')}"
            f"{scored}; {len(counted)} of {'up to ' if stop else ''}{total} trials{best}{ahead}",
            file=terminal,
        )

    return said
