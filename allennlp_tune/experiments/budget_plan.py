"""
The plan of `tune-compare --budget K` before its searches: what the whole decision will cost.

Without it the planner spoke only after the searches, of the seeds, so a user learnt the cost
of the K trials per mode (most of the work) by waiting for them. Here every mode is planned
once, as its runs will train at most: its config rendered with the command's ext vars and the
largest number of epochs its search space allows (`TUNE_EPOCHS`' upper end; a space without
it keeps the config's epochs, as fe's early-stopped 10), timed on this machine like any plan
(`planning.calibrate`; the timings are kept for the seeds' plans after the search, whose
settings differ only in the searched rate and epochs). Each mode's runs to do are its trials
not yet finished in the study plus its seeds not yet complete, so a resumed search plans only
what is left; the seed each mode's best trial will be kept as (`kept_trial`) is not planned
again. The table and its `Estimated total` line are the grid's (`planning.render`); the
total is an upper bound: pruned trials and early stopping end runs sooner. With `--sequential`
the total trains every seed up to the cap, which only a comparison the looks cannot settle (nor
stop as futile) reaches; a last line gives the total if the first look decides, so a user sees
before the first trial the range the decision's cost can take.
"""

import math
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from allennlp_tune.experiments.budget import (
    SEARCH_SEED,
    _finished,
    _load_study,
    encoder_trains,
    mode_space,
)
from allennlp_tune.experiments.grid import _shared_cache, pending_seeds
from allennlp_tune.experiments.search import budget_storage_url
from allennlp_tune.rundir import SEED_EXT_VAR, config_stem
from allennlp_tune.rundir.names import BUDGET_SEARCH_DIR

EPOCHS_VAR = "TUNE_EPOCHS"


def most_epochs(
    mode: str, family: str, spaces: Optional[Dict[str, Tuple[str, ...]]]
) -> Optional[int]:
    """The most epochs a mode's trials (and so its seeds) can train: the upper end of
    `TUNE_EPOCHS` in its space, `None` when the space does not search it."""
    for param in mode_space(mode, family, spaces):
        if param.name == EPOCHS_VAR and param.high is not None:
            return int(param.high)
    return None


def planned_choices(
    mode: str,
    family: str,
    spaces: Optional[Dict[str, Tuple[str, ...]]],
    config: Path,
    variables: Dict[str, str],
    overrides: Optional[str],
) -> Dict[str, str]:
    """
    The values the plan renders a mode's searched choices at where the config's own value is
    not among them (fe's `TUNE_FE_HEAD=linear,mlp` on a config whose network is the paper's):
    each such choice's last value (the space's order; for the frozen networks the larger one),
    so the plan prices a network the trials can train, not one outside the space. A choice
    whose config value is among them keeps it (`{}`: nothing to set).
    """
    from allennlp_tune.experiments.budget import default_setting

    chosen: Dict[str, str] = {}
    for param in mode_space(mode, family, spaces):
        if param.choices is None or param.name in variables:
            continue
        start, _ = default_setting(config, [param], variables, overrides)
        if start is None:
            chosen[param.name] = param.choices[-1]
    return chosen


def mode_trials(
    epochs: Dict[str, Optional[int]], budget: int, unit: str = "trials"
) -> Dict[str, int]:
    """
    The trials each mode is planned at: `budget` each, or under `--budget-unit compute`
    (`budget_compute`) a frozen mode's cap (after its first trial it reads the cache and costs
    next to nothing) and a trained mode the trials its share buys at its most `epochs` (each a
    fwd+bwd pass over the data per epoch: K x the costliest's epochs / its own, at least K).
    """
    from allennlp_tune.experiments.budget_compute import COMPUTE_TRIAL_CAP

    if unit != "compute":
        return {mode: budget for mode in epochs}
    trained = {mode: max(1, e or 1) for mode, e in epochs.items() if encoder_trains(mode)}
    most = max(trained.values(), default=1)
    cap = COMPUTE_TRIAL_CAP * budget
    return {
        mode: cap
        if mode not in trained
        else min(cap, max(budget, math.ceil(budget * most / trained[mode])))
        for mode in epochs
    }


def trials_to_run(config: Path, budget: int, results_dir: Path, shared: bool) -> int:
    """The trials of a mode's study still to run: `budget` less its finished trials (complete,
    pruned or failed), or `budget` for a study the workers share (its storage is the
    coordinator's) or one not started."""
    database = results_dir / BUDGET_SEARCH_DIR / "optuna.db"
    if shared or not database.is_file():
        return budget
    study = _load_study(budget_storage_url(results_dir / BUDGET_SEARCH_DIR), config_stem(config))
    if study is None:
        return budget
    return max(0, budget - sum(_finished(study).values()))


def _cell_note(
    mode: str,
    trials: int,
    seed_runs: int,
    epochs: Optional[int],
    chosen: Dict[str, str],
    compute_trials: Optional[int],
) -> str:
    """The plan's note on a mode: its trials and seed runs to do, at most how many epochs, the
    choices it was planned at, and under --budget-unit compute the trials it was planned at."""
    return (
        f"{trials} search trial(s) and {seed_runs} seed run(s) to do, each at most "
        + (f"{epochs} epochs (its space's upper end)" if epochs else "the config's epochs")
        + "".join(
            f"; planned at {name}={value}, its space's last choice (the config's own "
            "is not among them; trials may draw the others)"
            for name, value in chosen.items()
        )
        + (
            f"; --budget-unit compute: planned at {compute_trials} trials "
            + (
                "(its cap: a frozen trial after the first reads the cache)"
                if not encoder_trains(mode)
                else "(what its compute buys at its most epochs; more if some are pruned, "
                "up to the cap)"
            )
            if compute_trials is not None
            else ""
        )
    )


def plan_budget(
    configs: Dict[str, Path],
    budget: int,
    seeds: Sequence[int],
    results_dir: Path,
    family: str,
    ext_vars: Dict[str, str],
    overrides: Optional[str] = None,
    spaces: Optional[Dict[str, Tuple[str, ...]]] = None,
    plan_only: bool = False,
    calibrate: bool = True,
    shared: bool = False,
    tool: str = "tune-compare",
    first_look: Optional[int] = None,
    unit: str = "trials",
    kept_seed: Optional[int] = None,
) -> List["CellPlan"]:  # noqa: F821  (planning's, imported lazily)
    """
    Prints the plan of the module docstring (`planning.render.show_plans`: stdout with
    `plan_only`, else stderr) and returns its cells. `seeds`: the seed runs each mode may train
    (with `--sequential`, up to its last look). `shared`: the searches are shared with workers
    through a coordinator. A cell whose cache would not fit raises a `ConfigurationError` after
    the table, as in the grid's plan (its trials would train without the cache); with
    `plan_only`, so does a cell that cannot train. `first_look`: with `--sequential`, the seeds
    per mode at its first look (`planning.render.first_look_line`). `unit` "compute": each
    mode is planned at the trials its compute budget buys (`mode_trials`). `kept_seed`: the
    seed each mode's best trial is kept as (`budget.seed_to_keep`), which does not train
    again where its search still has trials to run.
    """
    from allennlp_tune.modules.feature_cache import user_cache_directory
    from allennlp_tune.planning.plan import plan_cell

    results_dir = Path(results_dir)
    cache_directory = _shared_cache(results_dir, ext_vars) or user_cache_directory(ext_vars)
    first_seeds = set(list(seeds)[:first_look]) if first_look else set()
    cells = {}
    for mode, config in configs.items():
        # In trials, a mode with nothing left to run needs no plan; in compute, every mode's
        # epochs set the trials the others are planned at (`mode_trials`).
        if unit != "compute" and not (
            trials_to_run(config, budget, results_dir, shared)
            or pending_seeds(config, seeds, results_dir)
        ):
            continue
        variables = {**ext_vars, SEED_EXT_VAR: str(SEARCH_SEED)}
        epochs = most_epochs(mode, family, spaces)
        if epochs is not None:
            variables[EPOCHS_VAR] = str(epochs)
        chosen = planned_choices(mode, family, spaces, config, variables, overrides)
        variables.update(chosen)
        cell = plan_cell(
            config, variables, overrides, Path(cache_directory) if cache_directory else None
        )
        cells[mode] = (config, cell, epochs, chosen)
    per_mode = mode_trials(
        {mode: cell.epochs for mode, (_, cell, _, _) in cells.items()}, budget, unit
    )
    plans = []
    counts = []
    for mode, (config, cell, epochs, chosen) in cells.items():
        trials = trials_to_run(config, per_mode[mode], results_dir, shared)
        pending = pending_seeds(config, seeds, results_dir)
        if trials and kept_seed in pending:  # its best trial will be that seed
            pending = [seed for seed in pending if seed != kept_seed]
        if not trials and not pending:
            continue
        cell.pending_runs = trials + len(pending)
        compute_trials = per_mode[mode] if unit == "compute" else None
        cell.notes.append(_cell_note(mode, trials, len(pending), epochs, chosen, compute_trials))
        plans.append(cell)
        early = [seed for seed in pending if seed in first_seeds]
        counts.append((mode, trials, len(pending), trials + len(early)))
    if plans:
        _show(plans, counts, budget, len(seeds), first_look, tool, plan_only, calibrate,
              kept_seed)  # fmt: skip
    return plans


def _show(
    plans: List["CellPlan"],  # noqa: F821
    counts: List[Tuple[str, int, int, int]],
    budget: int,
    seeds: int,
    first_look: Optional[int],
    tool: str,
    plan_only: bool,
    calibrate: bool,
    kept_seed: Optional[int] = None,
) -> None:
    """The plan's table under its heading (the decision's trials and seed runs), then with
    --sequential what its first look would cost (`counts`: mode, trials, seed runs, runs up to
    the first look)."""
    from allennlp_tune.planning.render import first_look_line, show_plans

    trials = sum(count[1] for count in counts)
    seed_runs = sum(count[2] for count in counts)
    heading = (
        f"plan of the whole decision (--budget {budget}): {trials} search trial(s) and "
        f"{seed_runs} seed run(s) over {len(plans)} mode(s)"
        + (f" (seed {kept_seed} of each: its best trial, kept)" if kept_seed is not None else "")
    )
    show_plans(plans, heading, tool, plan_only, calibrate)
    if first_look is not None and first_look < seeds:
        stream = sys.stdout if plan_only else sys.stderr
        stream.write(first_look_line(plans, [count[3] for count in counts], first_look) + "\n")
        stream.flush()


__all__ = ["mode_trials", "most_epochs", "plan_budget", "planned_choices", "trials_to_run"]
