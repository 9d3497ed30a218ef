"""
The searches of `tune-compare --budget K` in the report: each results folder's `budget.json`
(`allennlp_tune.experiments.budget`) as a table (per task and mode, its trials complete /
pruned / failed, the best trial's dev score, the setting the seeds trained with, and what the
trials cost), and whether a row's runs are those searches' seeds, for the answer's "equal
budgets (K trials per mode)".
"""

from typing import Any, Dict, List, Mapping, Optional, Sequence

from allennlp_tune.reporting.cells import Row
from allennlp_tune.reporting.costs import format_params
from allennlp_tune.reporting.labels import NOT_AVAILABLE, encoder_title, task_title
from allennlp_tune.reporting.tables import Table

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
    """`12.3 s, encoder passes 4.0k fwd+bwd, 1.2k fwd` (the finished trials together)."""
    parts = []
    if _number(mode.get("seconds")):
        parts.append(f"{mode['seconds']:.1f} s")
    passes = mode.get("passes")
    if isinstance(passes, list) and len(passes) == 2 and all(map(_number, passes)):
        parts.append(
            f"encoder passes {format_params(passes[0])} fwd+bwd, {format_params(passes[1])} fwd"
        )
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
    budget_sizes = sorted({str(saved.get("budget")) for saved in budgets})
    title = f"{BUDGET_TITLE} ({' / '.join(budget_sizes)} trials per mode)"
    return Table(title, list(BUDGET_HEADER), body)


def row_budget(budgets: Sequence[Mapping[str, Any]], encoder: str, row: Row) -> Optional[int]:
    """
    K when the row's scored runs are all seeds of one `--budget K` search: its `budget.json`
    has every mode of the row, each with K finished trials, and every scored run's ext vars
    hold its mode's chosen setting. `None` otherwise (the answer then does not claim it).
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
        if all(_is_budget_cell(row, mode, searched.get(mode), budget) for mode in used):
            return budget
    return None


def _is_budget_cell(
    row: Row, mode: str, searched: Optional[Mapping[str, Any]], budget: int
) -> bool:
    if searched is None:
        return False
    trials = searched.get("trials") or {}
    if sum(count for count in trials.values() if isinstance(count, int)) != budget:
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
        lines.append(
            f"{label}: {saved.get('budget')} Optuna trials per mode (TPE; {saved.get('pruner')}; "
            f"trial seed {saved.get('search_seed')}, not a reported seed; each mode's own "
            f"recipe tried first), trials in {saved.get('search_dir')}/: {spaces}."
        )
        for mode in saved.get("modes") or []:
            if isinstance(mode, dict):
                for note in mode.get("notes") or []:
                    lines.append(f"{label} {mode.get('mode')}: {note}")
    return lines
