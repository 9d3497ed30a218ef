"""
`run_budget`: the searches of `tune-compare --budget K`, in this process alone (`budget`) or
shared with other workers through a coordinator (`budget_workers`). Its own module, so that
`budget_workers`, which builds on `budget`, is not imported by it.
"""

import sys
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from allennlp_tune.experiments import budget_workers
from allennlp_tune.experiments.budget import (
    SEARCH_SEED,
    BudgetJob,
    ModeSearch,
    _print_bests,
    budget_record,
    check_budget_options,
    encoder_trains,
)
from allennlp_tune.experiments.budget_compute import COMPUTE, check_budget_unit, compute_budget
from allennlp_tune.experiments.budget_plan import most_epochs
from allennlp_tune.experiments.budget_search import _search_mode
from allennlp_tune.experiments.lock import ResultsDirLock
from allennlp_tune.experiments.provisional import print_provisional
from allennlp_tune.experiments.search import budget_storage_url
from allennlp_tune.rundir import SEED_EXT_VAR, write_json
from allennlp_tune.rundir.names import BUDGET_NAME


def run_budget(
    configs: Dict[str, Path],
    budget: int,
    results_dir: Path,
    task: str,
    encoder: str,
    family: str,
    ext_vars: Dict[str, str],
    overrides: Optional[str] = None,
    spaces: Optional[Dict[str, Tuple[str, ...]]] = None,
    keep_checkpoints: bool = False,
    tool: str = "tune-compare",
    coordinator: Optional[Any] = None,
    unit: str = "trials",
    pruner: str = "median",
    first_seed: Optional[int] = None,
) -> Dict[str, ModeSearch]:
    """
    Searches every mode of `configs` (mode -> config) with `budget` trials (module docstring),
    holding the results folder's lock, and writes `RESULTS_DIR/budget.json`. Returns each
    mode's search; its `setting` is what the mode's seeds train with. Then prints the answer so
    far from each mode's best trial (`provisional`).

    With a `coordinator` (`workers.Coordinator`) this process is one of many workers that share
    the trials (`budget_workers`): it returns once every mode's search is finished.

    `unit` "compute" (`budget_compute`): each mode's trials spend what `budget` trials of the
    costliest mode spend, in encoder forward passes with the head's work, instead of each mode
    getting `budget` trials. `pruner`: `budget.PRUNERS`' rule that stops a trial early.

    `first_seed` (`budget.seed_to_keep`: in one process, with a budget in trials): the trials
    train with this seed, the seeds' first, and each mode's best trial is kept as that seed
    where it can be (`kept_trial`), so the seeds do not train it again; its dev score is the
    best of K on the dev set, for every mode alike. Without it the trials train with
    `SEARCH_SEED` and none is kept.
    """
    check_budget_options(budget, list(configs), family, ext_vars, spaces)
    check_budget_unit(unit, coordinator)
    keep = first_seed is not None and coordinator is None
    job = BudgetJob(configs, budget, Path(results_dir), task, encoder, family, ext_vars,
                    overrides, spaces, keep_checkpoints, tool, pruner,
                    search_seed=first_seed if keep else SEARCH_SEED, keep_best=keep)  # fmt: skip
    job.search_dir.mkdir(parents=True, exist_ok=True)
    if coordinator is not None:
        searches = budget_workers.run_shared_budget(job, coordinator)
    else:
        budget_workers.refuse_if_search_is_shared(job.search_dir)
        compute = None
        if unit == COMPUTE:
            epochs = {mode: most_epochs(mode, family, spaces) for mode in configs}
            frozen = [mode for mode in configs if not encoder_trains(mode)]
            variables = {**ext_vars, SEED_EXT_VAR: str(SEARCH_SEED)}
            compute = compute_budget(configs, budget, epochs, frozen, variables, overrides)
        searches = _search_in_one_process(job, compute)
    _print_bests(searches, budget, tool)
    print_provisional(searches, job.results_dir, tool)
    return searches


def _search_in_one_process(job: BudgetJob, compute: Any) -> Dict[str, ModeSearch]:
    """Each mode's search in turn in this process, under the results folder's lock, with
    `budget.json` rewritten after each (and written first, before any trial)."""
    record_path = job.results_dir / BUDGET_NAME
    searches: Dict[str, ModeSearch] = {}

    def record() -> Dict[str, Any]:
        return budget_record(job.task, job.encoder, job.budget, list(searches.values()),
                             compute, job.pruner, job.search_seed)  # fmt: skip

    with ResultsDirLock(job.results_dir):
        storage = budget_storage_url(job.search_dir)
        # Written first, so that the trials stay out of tune-report's runs from the start.
        write_json(record_path, record())
        for mode, config in job.configs.items():
            searches[mode] = _search_mode(job, mode, config, storage, compute)
            write_json(record_path, record())
        if job.keep_best:
            _keep_best_trials(job, searches)
            write_json(record_path, record())
    return searches


def _keep_best_trials(job: BudgetJob, searches: Dict[str, ModeSearch]) -> None:
    """Each mode's best trial kept as its first seed where it can be (`kept_trial`), said on
    the terminal and recorded in its search (`kept_seed`, `kept_note`)."""
    from allennlp_tune.experiments.kept_trial import keep_best_trial

    for mode, search in searches.items():
        kept, note = keep_best_trial(job, search)
        search.kept_seed = job.search_seed if kept is not None else None
        search.kept_note = note
        print(f"{job.tool}: {mode}: {note}", file=sys.stderr)
