"""
Expected best dev score against the search budget (Dodge et al., 2019, "Show Your Work:
Improved Reporting of Experimental Results", section 3): per mode of a `tune-compare --budget`
search, the expected maximum dev score of k trials drawn from its finished trials, for k = 1 up
to the trials it ran, so a reader sees whether more search could have changed a verdict (a
curve still rising at its last k) or had levelled off.

The estimator treats the n finished trials' scores as draws from the mode's distribution of
trial scores (its space under the search's sampler) and takes k draws with replacement from
their empirical distribution: with the scores sorted, v_1 <= ... <= v_n,

    E[max of k] = sum_i v_i * ((i / n) ** k - ((i - 1) / n) ** k)

(the minimum, mirrored, for a metric where lower is better). k = 1 is the mean trial; k = n is
below the best trial unless every trial scored the same. TPE's later trials are not independent
draws (they follow the earlier ones), so the curve is what a random search over the same
settings would give, Dodge et al.'s own reading. A pruned trial counts at its best epoch before
it was stopped (`budget.trial_values`), a lower bound of what it would have reached; a failed
trial not at all.
"""

from typing import Any, List, Mapping, Optional, Sequence

from allennlp_tune.reporting.labels import encoder_title, task_title
from allennlp_tune.reporting.tables import Table

EXPECTED_MAX_TITLE = (
    "Expected best dev score of k trials (Dodge et al., 2019), from each mode's finished trials"
)
# The k shown, where a mode ran that many trials, and always its last.
SHOWN_K = (1, 2, 3, 5, 10, 20, 50, 100)


def expected_max(values: Sequence[float], k: int, higher_is_better: bool = True) -> float:
    """The expected best of `k` draws (with replacement) from `values` (module docstring)."""
    if not values or k < 1:
        raise ValueError("expected_max needs at least one value and k >= 1")
    ordered = sorted(values, reverse=not higher_is_better)
    n = len(ordered)
    return sum(
        value * ((i / n) ** k - ((i - 1) / n) ** k) for i, value in enumerate(ordered, start=1)
    )


def expected_max_curve(
    values: Sequence[float], higher_is_better: bool = True, most: Optional[int] = None
) -> List[float]:
    """`expected_max` for k = 1 .. `most` (default: the number of values)."""
    return [expected_max(values, k, higher_is_better) for k in range(1, (most or len(values)) + 1)]


def _values(mode: Mapping[str, Any]) -> List[float]:
    values = mode.get("trial_values")
    if not isinstance(values, list):
        return []
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def expected_max_table(budgets: Sequence[Mapping[str, Any]]) -> Optional[Table]:
    """One row per searched mode whose `budget.json` entry has its trials' scores: the expected
    best dev score (x100) of k trials for the `SHOWN_K` up to the most trials of any mode, and
    what its last trial added to the expectation; `None` without such a mode."""
    modes = [
        (saved, mode)
        for saved in budgets
        for mode in saved.get("modes") or []
        if isinstance(mode, dict) and _values(mode)
    ]
    if not modes:
        return None
    most = max(len(_values(mode)) for _, mode in modes)
    shown = sorted({k for k in SHOWN_K if k <= most} | {most})
    header = ["Cell", "Trials"] + [f"k={k}" for k in shown] + ["Last trial added"]
    body = []
    for saved, mode in modes:
        values = _values(mode)
        higher = mode.get("higher_is_better", True) is not False
        curve = expected_max_curve(values, higher)
        label = f"{encoder_title(str(saved.get('encoder')))} {task_title(str(saved.get('task')))}"
        cells = [(f"{label} {mode.get('mode')}", None), (str(len(values)), None)]
        cells += [(f"{100 * curve[k - 1]:.1f}" if k <= len(values) else "—", None) for k in shown]
        added = 100 * (curve[-1] - curve[-2]) if len(curve) > 1 else None
        cells.append((f"{added:+.2f}" if added is not None else "—", None))
        body.append(cells)
    return Table(EXPECTED_MAX_TITLE, header, body)


__all__ = ["expected_max", "expected_max_curve", "expected_max_table"]
