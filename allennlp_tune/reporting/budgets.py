"""
The searches of `tune-compare --budget K` in the report: each results folder's `budget.json`
(`allennlp_tune.experiments.budget`) as a table (per task and mode, its trials complete /
pruned / failed, the best trial's dev score, the setting the seeds trained with, and what the
trials cost), and whether a row's runs are those searches' seeds, for the answer's "equal
budgets (K trials per mode)".

What the decision spent against the full protocol (`decision_costs`), in encoder passes counted
as forward passes (`costs.forward_equivalents`: a fwd+bwd pass is three), per mode: its search
trials as trained (pruned ones stopped early) against the same trials trained to the end
(`budget.json`'s `full_passes`), and its seeds as trained against the seed cap (the last look of
`tune-compare --sequential`, from its `sequential.json`; without it, the seeds trained), each
seed at the mean of its trained ones. A seed that is the search's best trial kept as that seed
(`tune_run.json`'s `kept_from_trial`, `experiments.kept_trial`) was paid for in the search: it
counts as a seed of the cap, not again as spent. The full protocol is docs/results/NOTEBOOK.md
section 10's: every trial to the end, every seed. With a `sequential.json`, the seeds counted
are those of its seed order (the last decision run in the folder): a rerun with other seeds
(`--seeds 6 7 8 9 10`) reuses the searches and is a decision of its own, and the first
decision's seed runs beside it are not its cost (the answer says how many were left out); the
report's scores still pool every seed.
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

from allennlp_tune.reporting.cells import Row
from allennlp_tune.reporting.costs import encoder_passes, format_params, forward_equivalents
from allennlp_tune.reporting.labels import NOT_AVAILABLE, encoder_title, task_title
from allennlp_tune.reporting.tables import Table
from allennlp_tune.rundir import KEPT_FROM_TRIAL_KEY

BUDGET_TITLE = "Equal budgets: the search behind each mode's seeds"
BUDGET_HEADER = [
    "Cell",
    "Trials (complete / pruned / failed)",
    "Best dev",
    "Chosen setting",
    "Search cost",
]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _trials_text(trials: Mapping[str, Any]) -> str:
    counts = [trials.get(state, 0) for state in ("complete", "pruned", "failed")]
    counts = [count if isinstance(count, int) else 0 for count in counts]
    return f"{sum(counts)} ({' / '.join(map(str, counts))})"


def _setting_text(setting: Mapping[str, Any]) -> str:
    def short(value: Any) -> str:
        try:
            number = float(value)
        except (TypeError, ValueError):
            return str(value)
        return f"{number:.3g}"

    return ", ".join(f"{name}={short(value)}" for name, value in sorted(setting.items())) or "—"


def _cost_text(mode: Mapping[str, Any]) -> str:
    """`12.3 s, encoder passes 4.0k fwd+bwd, 1.2k fwd` (the finished trials together), and
    under a budget in compute what they spent in its unit."""
    parts = []
    if _number(mode.get("seconds")):
        parts.append(f"{mode['seconds']:.1f} s")
    passes = mode.get("passes")
    if isinstance(passes, list) and len(passes) == 2 and all(map(_number, passes)):
        parts.append(
            f"encoder passes {format_params(passes[0])} fwd+bwd, {format_params(passes[1])} fwd"
        )
    if _number(mode.get("compute")):
        parts.append(f"compute {format_params(mode['compute'])} (with the head's)")
    return ", ".join(parts) or NOT_AVAILABLE


def budget_table(budgets: Sequence[Mapping[str, Any]]) -> Optional[Table]:
    """One row per searched mode of every `budget.json`; `None` when there is none."""
    body = []
    for saved in budgets:
        label = f"{encoder_title(str(saved.get('encoder')))} {task_title(str(saved.get('task')))}"
        for mode in saved.get("modes") or []:
            if not isinstance(mode, dict):
                continue
            value = mode.get("best_value")
            best = (
                f"{100 * value:.1f} (trial {mode.get('best_trial')})"
                if _number(value)
                else NOT_AVAILABLE
            )
            body.append(
                [
                    (f"{label} {mode.get('mode')}", None),
                    (_trials_text(mode.get("trials") or {}), None),
                    (best, None),
                    (_setting_text(mode.get("setting") or {}), None),
                    (_cost_text(mode), None),
                ]
            )
    if not body:
        return None
    budget_sizes = sorted({_budget_said(saved) for saved in budgets})
    title = f"{BUDGET_TITLE} ({' / '.join(budget_sizes)})"
    return Table(title, list(BUDGET_HEADER), body)


def in_compute(saved: Mapping[str, Any]) -> bool:
    """Whether the `budget.json` counted its budget in compute (`--budget-unit compute`)."""
    return saved.get("unit") == "compute"


def _budget_said(saved: Mapping[str, Any]) -> str:
    """`2 trials per mode`, `compute of 2 trials of ft per mode`."""
    if in_compute(saved):
        reference = (saved.get("compute_budget") or {}).get("reference")
        return f"compute of {saved.get('budget')} trials of {reference} per mode"
    return f"{saved.get('budget')} trials per mode"


def _trial_count(searched: Mapping[str, Any]) -> int:
    trials = searched.get("trials") or {}
    return sum(count for count in trials.values() if isinstance(count, int))


@dataclass(frozen=True)
class RowBudget:
    """The search behind a row's seeds (`row_budget`): K, its unit (`trials` or `compute`),
    the compute budget's reference mode and each mode's trials."""

    k: int
    unit: str
    reference: Optional[str]
    trials: Dict[str, int]


def row_budget(budgets: Sequence[Mapping[str, Any]], encoder: str, row: Row) -> Optional[RowBudget]:
    """
    The search when the row's scored runs are all seeds of one `--budget K` search: its
    `budget.json` has every mode of the row, each with K finished trials (under a compute
    budget, K or more), and every scored run's ext vars hold its mode's chosen setting. `None`
    otherwise (the answer then does not claim it).
    """
    for saved in budgets:
        if saved.get("task") != row.task or saved.get("encoder") != encoder:
            continue
        budget = saved.get("budget")
        searched: Dict[str, Mapping[str, Any]] = {
            mode.get("mode"): mode for mode in saved.get("modes") or [] if isinstance(mode, dict)
        }
        used = [mode for mode in row.used_modes() if row.cells[mode].scored_runs]
        if not used or not isinstance(budget, int):
            continue
        compute = in_compute(saved)
        if all(_is_budget_cell(row, mode, searched.get(mode), budget, compute) for mode in used):
            return RowBudget(
                k=budget,
                unit="compute" if compute else "trials",
                reference=(saved.get("compute_budget") or {}).get("reference"),
                trials={mode: _trial_count(searched[mode]) for mode in used},
            )
    return None


def _is_budget_cell(
    row: Row, mode: str, searched: Optional[Mapping[str, Any]], budget: int, compute: bool
) -> bool:
    if searched is None:
        return False
    count = _trial_count(searched)
    if count < budget if compute else count != budget:
        return False
    setting: Dict[str, Any] = dict(searched.get("setting") or {})
    for run in row.cells[mode].scored_runs:
        ext_vars = run.info.get("ext_vars") or {}
        if any(ext_vars.get(name) != value for name, value in setting.items()):
            return False
    return True


def budget_lines(budgets: Sequence[Mapping[str, Any]]) -> List[str]:
    """How the searches were run (one line per `budget.json`), and each mode's notes."""
    lines = []
    for saved in budgets:
        label = f"{encoder_title(str(saved.get('encoder')))} {task_title(str(saved.get('task')))}"
        spaces = "; ".join(
            f"{mode.get('mode')} {' '.join(mode.get('space') or [])}"
            for mode in saved.get("modes") or []
            if isinstance(mode, dict)
        )
        if in_compute(saved):
            compute = saved.get("compute_budget") or {}
            total = compute.get("total")
            counts = ", ".join(
                f"{mode.get('mode')} {_trial_count(mode)}"
                for mode in saved.get("modes") or []
                if isinstance(mode, dict)
            )
            said = (
                f"a budget in compute: each mode's Optuna trials ran until they spent what "
                f"{saved.get('budget')} trials of {compute.get('reference')} spend"
                + (f" ({format_params(total)} encoder forward passes" if _number(total) else " (")
                + " over one instance each, the head's work added; at least "
                f"{saved.get('budget')} and at most {compute.get('cap')} trials), so each got "
                f"{counts} trials"
            )
        else:
            said = f"{saved.get('budget')} Optuna trials per mode"
        modes = [mode for mode in saved.get("modes") or [] if isinstance(mode, dict)]
        kept = [mode for mode in modes if isinstance(mode.get("kept_seed"), int)]
        seed_said = f"trial seed {saved.get('search_seed')}, " + (
            f"the seeds' first: {len(kept)} mode(s)' best trial, trained to its end, is that seed"
            if kept
            # A search that keeps best trials notes each mode's, kept or not (`kept_note`).
            else "the seeds' first; no best trial was kept as it"
            if any(isinstance(mode.get("kept_note"), str) for mode in modes)
            else "not a reported seed"
        )
        lines.append(
            f"{label}: {said} (TPE; {saved.get('pruner')}; {seed_said}; each mode's own "
            f"recipe tried first), trials in {saved.get('search_dir')}/: {spaces}."
        )
        for mode in saved.get("modes") or []:
            if isinstance(mode, dict):
                for note in mode.get("notes") or []:
                    lines.append(f"{label} {mode.get('mode')}: {note}")
    if any(
        isinstance(mode, dict) and mode.get("trial_values")
        for saved in budgets
        for mode in saved.get("modes") or []
    ):
        lines.append(
            "Expected best dev score of k trials: what a random search of k trials over the "
            "same settings would reach, from each mode's finished trials (Dodge et al., 2019); a "
            "mode whose last trial still added a point or more could gain from a larger "
            "--budget, one that had levelled off is unlikely to."
        )
    return lines


DECISION_TITLE = (
    "What the decision spent, against the full protocol and the naive experiment (encoder passes)"
)
DECISION_HEADER = [
    "Cell",
    "Search trials: spent / to the end",
    "Seeds: trained / the cap",
    "Spent",
    "Full protocol",
    "Share",
    "Naive experiment",
    "Spent / naive",
]


@dataclass
class DecisionCost:
    """One searched mode's cost in forward-equivalent encoder passes (module docstring)."""

    label: str
    mode: str
    trials_spent: float
    trials_full: float
    seeds_trained: int
    seed_cap: int
    seeds_spent: float
    seeds_full: float
    # Seed runs in the folder outside the last decision's seed order (an earlier decision's).
    seeds_other: int = 0
    # Seeds that are the search's best trial kept as that seed: of the cap, but not spent again.
    seeds_kept: int = 0
    # The naive experiment's part of this mode: one run at its config's recipe to its end (the
    # search's start trial), or, where that was not tried, one seed of the chosen setting
    # (`naive_estimated`).
    naive: float = 0.0
    naive_estimated: bool = False

    @property
    def spent(self) -> float:
        return self.trials_spent + self.seeds_spent

    @property
    def full(self) -> float:
        return self.trials_full + self.seeds_full


def _passes_of(value: Any) -> Optional[float]:
    if isinstance(value, list) and len(value) == 2 and all(map(_number, value)):
        return forward_equivalents((float(value[0]), float(value[1])))
    return None


def _saved_sequential(
    sequential: Sequence[Mapping[str, Any]], encoder: str, task: str
) -> Mapping[str, Any]:
    """The row's `sequential.json` record, or an empty one."""
    for saved in sequential:
        if saved.get("encoder") == encoder and saved.get("task") == task:
            return saved
    return {}


def _seed_cap(saved: Mapping[str, Any]) -> Optional[int]:
    """The seeds per mode at the last look of a `sequential.json` record, if it has one."""
    looks = (saved.get("plan") or {}).get("looks") or []
    if looks and isinstance(looks[-1], int):
        return looks[-1]
    return None


def _seed_order(saved: Mapping[str, Any]) -> Optional[List[int]]:
    """The seeds of a `sequential.json` record (its `seed_order`), if it has one."""
    order = saved.get("seed_order")
    if isinstance(order, list) and order and all(isinstance(s, int) for s in order):
        return list(order)
    return None


def decision_costs(
    budgets: Sequence[Mapping[str, Any]],
    encoder_rows: Mapping[str, Sequence[Row]],
    sequential: Sequence[Mapping[str, Any]] = (),
) -> List[DecisionCost]:
    """Per searched mode of every `budget.json` whose trials recorded their passes both ways and
    whose row has seeds with passes: what it spent and what the full protocol would have."""
    found = []
    for saved in budgets:
        encoder, task = str(saved.get("encoder")), str(saved.get("task"))
        row = next((r for r in encoder_rows.get(encoder, []) if r.task == task), None)
        if row is None:
            continue
        label = f"{encoder_title(encoder)} {task_title(task)}"
        record = _saved_sequential(sequential, encoder, task)
        cap, order = _seed_cap(record), _seed_order(record)
        for mode in saved.get("modes") or []:
            if not isinstance(mode, dict) or mode.get("mode") not in row.cells:
                continue
            spent, full = _passes_of(mode.get("passes")), _passes_of(mode.get("full_passes"))
            cell = row.cells[mode["mode"]]
            runs = [run for run in cell.runs if order is None or run.seed in order]
            kept = [run for run in runs if run.info.get(KEPT_FROM_TRIAL_KEY)]
            trained = [run for run in runs if not run.info.get(KEPT_FROM_TRIAL_KEY)]
            seeds = [p for p in map(encoder_passes, trained) if p is not None]
            scored = [
                p for p in map(encoder_passes, (run for run in runs if run.scored)) if p is not None
            ]
            if spent is None or full is None or not scored:
                continue
            per_seed = sum(map(forward_equivalents, scored)) / len(scored)
            seed_cap = max(cap or 0, len(seeds) + len(kept))
            naive = _passes_of(mode.get("start_passes"))
            found.append(
                DecisionCost(
                    label=label,
                    mode=str(mode["mode"]),
                    trials_spent=spent,
                    trials_full=full,
                    seeds_trained=len(seeds),
                    seed_cap=seed_cap,
                    seeds_spent=sum(map(forward_equivalents, seeds)),
                    seeds_full=per_seed * seed_cap,
                    seeds_other=len(cell.runs) - len(runs),
                    seeds_kept=len(kept),
                    naive=naive if naive is not None else per_seed,
                    naive_estimated=naive is None,
                )
            )
    return found


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole > 0 else NOT_AVAILABLE


def _total(costs: Sequence[DecisionCost]) -> DecisionCost:
    """The modes of one task added up (`mode` "all modes")."""
    return DecisionCost(
        label=costs[0].label,
        mode="all modes",
        trials_spent=sum(c.trials_spent for c in costs),
        trials_full=sum(c.trials_full for c in costs),
        seeds_trained=sum(c.seeds_trained for c in costs),
        seed_cap=sum(c.seed_cap for c in costs),
        seeds_spent=sum(c.seeds_spent for c in costs),
        seeds_full=sum(c.seeds_full for c in costs),
        seeds_other=sum(c.seeds_other for c in costs),
        seeds_kept=sum(c.seeds_kept for c in costs),
        naive=sum(c.naive for c in costs),
        naive_estimated=any(c.naive_estimated for c in costs),
    )


def _times(part: float, whole: float) -> str:
    return f"{part / whole:.1f}x" if whole > 0 else NOT_AVAILABLE


def _decision_row(name: str, cost: DecisionCost) -> List[Any]:
    return [
        (name, None),
        (f"{format_params(cost.trials_spent)} / {format_params(cost.trials_full)}", None),
        (
            f"{cost.seeds_trained} of {cost.seed_cap}"
            + (f" (+{cost.seeds_kept} kept trial)" if cost.seeds_kept else "")
            + f": {format_params(cost.seeds_spent)} / {format_params(cost.seeds_full)}",
            None,
        ),
        (format_params(cost.spent), None),
        (format_params(cost.full), None),
        (_share(cost.spent, cost.full), None),
        (format_params(cost.naive) + (" (est.)" if cost.naive_estimated else ""), None),
        (_times(cost.spent, cost.naive), None),
    ]


def decision_table(costs: Sequence[DecisionCost]) -> Optional[Table]:
    """`decision_costs` as a table, a row per mode and one per task for all its modes."""
    if not costs:
        return None
    body = []
    for label in dict.fromkeys(cost.label for cost in costs):
        mine = [cost for cost in costs if cost.label == label]
        body += [_decision_row(f"{label} {cost.mode}", cost) for cost in mine]
        body.append(_decision_row(f"{label}, all modes", _total(mine)))
    return Table(DECISION_TITLE, list(DECISION_HEADER), body)


def decision_sentence(costs: Sequence[DecisionCost], label: str) -> Optional[str]:
    """The answer's line on a task's cost: its share of the full protocol's passes, and its
    multiple of the naive experiment's."""
    mine = [cost for cost in costs if cost.label == label]
    if not mine:
        return None
    total = _total(mine)
    naive = (
        f"{_times(total.spent, total.naive)} the naive experiment's {format_params(total.naive)} "
        "(one run per mode at its config's recipe"
        + (
            ", estimated from a seed where the search did not try it)"
            if total.naive_estimated
            else ")"
        )
    )
    return (
        f"The decision on {label} cost {format_params(total.spent)} encoder passes (as forward "
        f"passes; a fwd+bwd pass counts 3), {_share(total.spent, total.full)} of the full "
        f"protocol's {format_params(total.full)} (every search trial to the end and every seed "
        f"to the cap) and {naive}: {format_params(total.trials_spent)} in the search, "
        f"{total.seeds_trained} of {total.seed_cap} seed runs"
        + (
            f" trained and {total.seeds_kept} kept from the search (its best trial, trained to "
            "its end with the first seed)"
            if total.seeds_kept
            else ""
        )
        + (
            f" (not counted: {total.seeds_other} seed runs of an earlier decision in the folder, "
            "which the scores above pool)."
            if total.seeds_other
            else "."
        )
    )
