"""
The answer first: one sentence per row with paired results, saying which arm to use (of the
modes no pair found worse, the cheapest; with `--margin M`, the cheapest of the modes not worse
than the best by more than M points), by how much against the others (95% intervals), at
what cost, and whether the recipes were searched ("equal budgets (K trials per mode)" for the
seeds of `tune-compare --budget K`); a caution where the chosen arm only ties a better-scoring
one that may lead it by more than a point (`tie_caution`); and a warning for a mode whose best
epoch was its last (still improving when training stopped), or that gave every example one
class (it had not learned the task when it stopped).
"""

from typing import Dict, List, Optional, Tuple

from allennlp_tune.config_vars import RECIPE_VARS
from allennlp_tune.modes import mode_order, ordered_run_modes
from allennlp_tune.reporting.budgets import RowBudget, decision_sentence, row_budget
from allennlp_tune.reporting.cells import Row
from allennlp_tune.reporting.costs import (
    _is_number,
    compute_equivalents,
    format_params,
    forward_equivalents,
    mean_encoder_passes,
    passes_text,
)
from allennlp_tune.reporting.intervals import has_predictions, predictions_name
from allennlp_tune.reporting.labels import (
    mode_title,
    signed,
)
from allennlp_tune.reporting.paired import TIE, PairedResult
from allennlp_tune.reporting.predictions import PredictionsMismatch, read_predictions
from allennlp_tune.reporting.report import Report
from allennlp_tune.rundir import (
    METRICS_NAME,
    read_json,
)

ANSWER_TITLE = "The answer"
DEFAULT_RECIPES = (
    "default recipes (each mode at its config's recipe, none searched), so the verdict "
    "compares recipes as much as ways of adapting the encoder"
)
SEARCHED_RECIPES = "searched recipes (every run records the search it came from)"


CONFIG_RECIPE = "its config's"


def hand_set(settings: str) -> str:
    """The fairness words of runs given a recipe by hand (`--ext-var`), none searched."""
    return (
        f"recipes set by hand ({settings}), none searched, so the verdict compares recipes as "
        "much as ways of adapting the encoder"
    )


def mode_recipe(row: Row, mode: str) -> str:
    """The recipe variables (`config_vars.RECIPE_VARS`) a mode's scored runs were given (their
    `tune_run.json` ext vars; several values of one across seeds joined with `/`), as
    `TUNE_EPOCHS=5, TUNE_LR=1e-4`; "" when none was."""
    given: Dict[str, List[str]] = {}
    for run in row.cells[mode].scored_runs:
        for name, value in (run.info.get("ext_vars") or {}).items():
            if name in RECIPE_VARS and value not in ("", None):
                values = given.setdefault(name, [])
                if str(value) not in values:
                    values.append(str(value))
    return ", ".join(f"{name}={'/'.join(values)}" for name, values in sorted(given.items()))


def hand_set_recipe(row: Row) -> Optional[str]:
    """
    The recipe variables the row's scored runs were given (`mode_recipe`), or `None` when no
    run had any: `TUNE_EPOCHS=5, TUNE_LR=1e-4` when every mode had the same, else per group of
    modes, `ft, top3: TUNE_EPOCHS=5, TUNE_LR=1e-4; fe: TUNE_LR=4e-4; lora: its config's`.
    """
    texts = {
        mode: mode_recipe(row, mode) for mode in row.used_modes() if row.cells[mode].scored_runs
    }
    if not any(texts.values()):
        return None
    groups: Dict[str, List[str]] = {}
    for mode, text in texts.items():
        groups.setdefault(text, []).append(mode)
    if len(groups) == 1:
        return next(iter(groups))
    return "; ".join(
        f"{', '.join(modes)}: {text or CONFIG_RECIPE}" for text, modes in groups.items()
    )


def recipe_words(row: Row, mode: str) -> str:
    """How a mode's recipe came about, for its under-training warning: set by hand (`--ext-var`,
    perhaps from an earlier search this report cannot see) or its config's, neither searched
    here."""
    given = mode_recipe(row, mode)
    if given:
        return f"a recipe set by hand ({given}), not searched here"
    return "its config's recipe, not searched for this task"


def equal_budgets(budget: RowBudget) -> str:
    """The fairness words of a `tune-compare --budget K` row."""
    if budget.unit == "compute":
        counts = ", ".join(f"{mode} {count}" for mode, count in budget.trials.items())
        return (
            f"equal compute budgets (each mode's trials spent what {budget.k} trials of "
            f"{budget.reference} spend, in encoder forward passes with the head's work: "
            f"{counts} trials; each mode's seeds at the best setting of its own search)"
        )
    return (
        f"equal budgets ({budget.k} trials per mode, each mode's seeds at the best setting of "
        "its own search)"
    )


Epochs = Tuple[Optional[float], Optional[float]]  # (best_epoch, epoch), 0-based


def run_epochs(row: Row) -> Dict[str, List[Epochs]]:
    """Per mode, each scored run's (best epoch, last epoch) from its `metrics.json` (`None`
    where missing): read once for both epoch warnings (`under_trained`, `single_epoch`)."""
    found = {}
    for mode in row.used_modes():
        found[mode] = []
        for run in row.cells[mode].scored_runs:
            metrics = read_json(run.path / METRICS_NAME) or {}
            found[mode].append((metrics.get("best_epoch"), metrics.get("epoch")))
    return found


def last_epoch_best(epochs: Epochs) -> Optional[Tuple[bool, int]]:
    """
    (whether a run's best epoch was its last, epochs trained) from its (best epoch, last
    epoch); `None` without both, or after a single epoch (nothing to tell a rising curve from).
    """
    best, last = epochs
    if not (_is_number(best) and _is_number(last)) or last < 1:
        return None
    return best >= last, int(last) + 1


def under_trained(epochs: Dict[str, List[Epochs]]) -> Dict[str, Tuple[int, int, int]]:
    """Per mode whose best epoch was the last in some scored run (`run_epochs`): (such runs,
    runs that tell, most epochs trained)."""
    found: Dict[str, Tuple[int, int, int]] = {}
    for mode, runs in epochs.items():
        told = [t for t in map(last_epoch_best, runs) if t is not None]
        rising = sum(1 for last, _ in told if last)
        if rising:
            found[mode] = (rising, len(told), max(trained for _, trained in told))
    return found


def single_epoch(epochs: Dict[str, List[Epochs]]) -> Dict[str, Tuple[int, int]]:
    """Per mode with scored runs (`run_epochs`) that trained one epoch only (`epoch` 0): (such
    runs, scored runs). Such a run cannot show whether it was still improving, so
    `under_trained` says nothing of it and the answer warns apart."""
    found: Dict[str, Tuple[int, int]] = {}
    for mode, runs in epochs.items():
        once = sum(1 for _best, last in runs if last == 0)
        if once:
            found[mode] = (once, len(runs))
    return found


def one_class_runs(row: Row, split: str) -> Dict[str, Tuple[int, int, str]]:
    """
    Per mode with scored runs that predicted one and the same class for every example of
    `split` whose golds hold several (a classifier's predictions file, its labels strings):
    (such runs, scored runs, the class). Such a run had not learned the task when it stopped:
    seen on CoLA, where the frozen BCN head at its config's recipe (patience 3) gave every dev
    sentence the majority class for four epochs (MCC 0) while its loss still fell, and a
    searched recipe left that state at its third epoch. Its score is of a model that had not
    started, not of its mode. Unreadable predictions are left to the intervals to report.
    """
    found: Dict[str, Tuple[int, int, str]] = {}
    for mode in row.used_modes():
        runs = row.cells[mode].scored_runs
        classes = []
        for run in runs:
            if not has_predictions(run, split):
                continue
            try:
                predictions = read_predictions(run.path / predictions_name(split))
            except (OSError, PredictionsMismatch):
                continue
            predicted = set(map(str, predictions.predictions))
            labels = all(isinstance(p, str) for p in predictions.predictions)
            if labels and len(predicted) == 1 and len(set(map(str, predictions.golds))) > 1:
                classes.append(next(iter(predicted)))
        if classes:
            found[mode] = (len(classes), len(runs), classes[0])
    return found


def _against(result: PairedResult, mode: str) -> Tuple[str, float, float, float]:
    """(the other mode, difference, low, high) of a pair, as `mode` − the other."""
    if result.mode_a == mode:
        return result.mode_b, result.difference, result.low, result.high
    return result.mode_a, -result.difference, -result.high, -result.low


BY_COMPUTE = "compute (encoder passes and the task network's flops)"
BY_PASSES = "encoder passes"
BY_SECONDS = "seconds per epoch"


def _compute(row: Row, mode: str) -> Optional[float]:
    """A mode's mean training compute per scored run, encoder and task network together
    (`costs.compute_equivalents`, forward passes of the encoder over one instance); `None`
    where a run lacks what it needs (a head on pooled vectors needs the wordpieces per
    instance, which a run folder does not record, so such a row is counted in passes: its
    head costs next to nothing)."""
    counted = [compute_equivalents(run, None) for run in row.cells[mode].scored_runs]
    if not counted or any(value is None for value in counted):
        return None
    return sum(counted) / len(counted)


def _forward_equivalents(row: Row, mode: str) -> Optional[float]:
    """A mode's mean encoder passes per scored run (`mean_encoder_passes`) as forward passes
    (`costs.forward_equivalents`); `None` where its runs recorded none."""
    return forward_equivalents(mean_encoder_passes(row.cells[mode].scored_runs))


def cost_unit(row: Row, modes: List[str]) -> str:
    """
    What "cheapest" is measured in among `modes`, in units that do not move with the machine's
    load: compute (`BY_COMPUTE`: encoder passes plus the task network's flops) when every one
    of them recorded both, so that a frozen arm whose BiLSTM head costs more than fine-tuning
    is not called cheaper (issue 72: on a 2,640-sentence CSV each frozen BCN seed took 4 min
    against fine-tuning's 2, while counting a tenth of its passes); else encoder passes
    (`BY_PASSES`); else the mean seconds per epoch (`BY_SECONDS`, runs from before passes were
    recorded).
    """
    if modes and all(_compute(row, mode) is not None for mode in modes):
        return BY_COMPUTE
    if modes and all(_forward_equivalents(row, mode) is not None for mode in modes):
        return BY_PASSES
    return BY_SECONDS


def _cost_key(
    row: Row, mode: str, unit: str = BY_SECONDS
) -> Tuple[float, float, Tuple[int, int, int, str]]:
    """Cheapest first: the `unit`'s cost per run (compute: encoder passes with the task network's
    flops added, as forward equivalents; encoder passes alone; or mean seconds per epoch), then
    trainable parameters (which orders LoRA and BitFit, whose passes equal ft's, below ft), then
    the report's order of modes (`mode_order`)."""
    cell = row.cells[mode]
    if unit == BY_COMPUTE:
        cost = _compute(row, mode)
    elif unit == BY_PASSES:
        cost = _forward_equivalents(row, mode)
    else:
        cost = cell.cost_mean("mean_epoch_seconds")
    params = cell.cost_mean("trainable_params")
    return (
        cost if cost is not None else float("inf"),
        params if params is not None else float("inf"),
        mode_order(mode),
    )


def _cheapest(row: Row, modes: List[str]) -> str:
    """The cheapest of `modes` (`_cost_key` in their `cost_unit`)."""
    unit = cost_unit(row, modes)
    return min(modes, key=lambda mode: _cost_key(row, mode, unit))


def _unbeaten(row: Row) -> List[str]:
    """The compared modes that no pair found worse than another (a tie or a win in each of
    their pairs), in the report's order."""
    compared = {mode for result in row.paired for mode in (result.mode_a, result.mode_b)}
    beaten = {
        result.mode_b if result.verdict == result.mode_a else result.mode_a
        for result in row.paired
        if result.verdict in (result.mode_a, result.mode_b)
    }
    return [mode for mode in ordered_run_modes(compared) if mode not in beaten]


def best_arm(row: Row) -> Optional[str]:
    """Of the unbeaten modes (`_unbeaten`), the one with the highest mean score (the report's
    order breaks a tie); `None` without paired results."""
    unbeaten = _unbeaten(row)
    scored = [mode for mode in unbeaten if row.cells[mode].mean is not None]
    if not scored:
        return unbeaten[0] if unbeaten else None
    return max(scored, key=lambda mode: row.cells[mode].mean)  # the first of equals


def within_margin_of(row: Row, best: str, margin: float) -> Dict[str, Tuple[float, float, float]]:
    """The modes not worse than `best` by more than `margin` points: those whose paired
    interval against it (mode − best) has its lower end above −margin (a one-sided test at
    2.5%, the equivalence test's lower half), with (difference, low, high); `best` itself
    with zeros. A mode without a pair against `best` is not among them."""
    within = {best: (0.0, 0.0, 0.0)}
    for result in row.paired:
        if best not in (result.mode_a, result.mode_b):
            continue
        other = result.mode_b if result.mode_a == best else result.mode_a
        _best, difference, low, high = _against(result, other)
        if low > -margin:
            within[other] = (difference, low, high)
    return within


def choose_arm(row: Row, margin: Optional[float] = None) -> Optional[str]:
    """
    The arm to use; `None` without paired results. Without a margin: of the compared modes
    that no pair found worse than another, the cheapest (`_cost_key`: in compute, encoder and
    head, where every one recorded it, else encoder passes, else seconds per epoch; then
    trainable parameters). With a margin
    (points, `tune-report --margin M`): the cheapest of the modes not worse than the best arm
    (`best_arm`) by more than M (`within_margin_of`), so that a block of layers or an
    adapter that stays within M of full fine-tuning is chosen for its lower cost, and one
    whose interval reaches further below is not.
    """
    if margin is None:
        unbeaten = _unbeaten(row)
        return _cheapest(row, unbeaten) if unbeaten else None
    best = best_arm(row)
    if best is None:
        return None
    return _cheapest(row, list(within_margin_of(row, best, margin)))


# A tie whose interval lets the other arm be better by more than this many points gets a
# caution beside the answer: a tie says the runs cannot tell two arms apart, not that they are
# equal, and on a small dev set or few seeds that can hide a gap a user would act on.
NOTICEABLE_POINTS = 1.0


def tie_caution(label: str, row: Row, margin: Optional[float] = None) -> Optional[str]:
    """
    Where the answer (without `--margin`) chose the cheaper of tied arms, and a tied arm with a
    higher mean score may be better than the chosen one by more than `NOTICEABLE_POINTS` (its
    interval reaches that far), a caution that says how far, over how many dev examples and
    seeds, and what narrows it; `None` otherwise. With a margin the chosen arm is already
    within it of the best (`within_margin_of`), so no caution.
    """
    arm = choose_arm(row, margin)
    if margin is not None or arm is None:
        return None
    worst = None  # (low, other, result): the tied, higher-scoring arm that could lead most
    for result in row.paired:
        if arm not in (result.mode_a, result.mode_b) or result.verdict != TIE:
            continue
        other, difference, low, _high = _against(result, arm)
        if difference < 0 and low < -NOTICEABLE_POINTS and (worst is None or low < worst[0]):
            worst = (low, other, result)
    if worst is None:
        return None
    low, other, result = worst
    seeds = min(result.seeds_a, result.seeds_b)
    return (
        f"Caution: {label}: {arm} was chosen on a tie, which says the runs cannot tell it from "
        f"{other}, not that the two are equal: {other} may be better by up to {-low:.1f} "
        f"points (the far end of the interval, over {result.examples} dev examples and "
        f"{seeds} seed{'' if seeds == 1 else 's'}). To use {arm} only if it is within M points "
        "of the best arm, rerun tune-report with --margin M; more seeds or a larger dev set "
        "narrow the interval."
    )


def _cost_words(row: Row, mode: str) -> str:
    """`12.3 s/epoch, 22.57M trainable, encoder passes 15.0k fwd+bwd, 0 fwd` (what of it the
    runs recorded; `no costs recorded`)."""
    cell = row.cells[mode]
    seconds = cell.cost_mean("mean_epoch_seconds")
    params = cell.cost_mean("trainable_params")
    parts = [f"{seconds:.1f} s/epoch"] if seconds is not None else []
    parts += [f"{format_params(params)} trainable"] if params is not None else []
    passes = mean_encoder_passes(cell.scored_runs)
    parts += [f"encoder passes {passes_text(passes)}"] if passes is not None else []
    compute = _compute(row, mode)
    parts += [f"compute {format_params(compute)} fwd"] if compute is not None else []
    return ", ".join(parts) if parts else "no costs recorded"


def answer_sentence(
    label: str, row: Row, budget: Optional[RowBudget] = None, margin: Optional[float] = None
) -> Optional[str]:
    """One sentence: which arm, by how much (95% intervals), at what cost, how fair (`budget`:
    the row's runs are the seeds of `tune-compare --budget K`, `row_budget`); with a `margin`,
    the cheapest arm within it of the best (`choose_arm`)."""
    arm = choose_arm(row, margin)
    if arm is None:
        return None
    said = []
    for result in row.paired:
        if arm not in (result.mode_a, result.mode_b):
            continue
        other, difference, low, high = _against(result, arm)
        interval = f"{signed(difference)} [{signed(low)}, {signed(high)}]"
        if result.verdict == arm:
            said.append(f"beats {other} by {interval}")
        elif result.verdict == TIE:
            said.append(f"ties {other} ({interval})")
        elif result.verdict == other:
            said.append(f"is behind {other} by {interval}")
        else:  # equivalent within the margin
            said.append(f"is {result.verdict} of {other} ({interval})")
    # A tie (or equivalence) with another arm: both are unbeaten, and the cheaper was chosen.
    tied = any(not text.startswith("beats") for text in said)
    unit = cost_unit(row, _unbeaten(row) if margin is None else [])
    why = f" (the cheapest, in {unit}, of the arms that no other beats)" if tied else ""
    best = best_arm(row) if margin is not None else None
    if best is not None and best != arm:
        unit = cost_unit(row, list(within_margin_of(row, best, margin)))
        why = (
            f" (the cheapest, in {unit}, of the arms not worse than the best, {best}, by more "
            f"than {margin:g} points: the lower end of its interval against {best} is above "
            f"-{margin:g})"
        )
    elif best is not None and len(within_margin_of(row, best, margin)) == 1:
        why = (
            f" (no cheaper arm is within {margin:g} points of it: each one's interval against "
            f"{arm} reaches further below, or it has none)"
        )
    others = [mode for mode in row.used_modes() if mode != arm and row.cells[mode].scored_runs]
    cost = f"costs {_cost_words(row, arm)}" + (
        " against " + "; ".join(f"{mode} {_cost_words(row, mode)}" for mode in others)
        if others
        else ""
    )
    searched = all(
        run.info.get("search") for cell in row.cells.values() for run in cell.scored_runs
    )
    by_hand = hand_set_recipe(row)
    if budget is not None:
        fair = equal_budgets(budget)
    elif searched:
        fair = SEARCHED_RECIPES
    else:
        fair = hand_set(by_hand) if by_hand else DEFAULT_RECIPES
    first = row.paired[0]
    return (
        f"{label} ({first.metric}, points, 95% intervals): use {arm} "
        f"({mode_title(arm)}){why}: it {', '.join(said)}; it {cost}; {fair}."
    )


def answer_lines(report: "Report") -> List[str]:
    """The answer sentence of every row with paired results, and its tie caution (`tie_caution`);
    for the seeds of a `--budget` search, what the decision cost against the full protocol
    (`budgets.decision_sentence`); then its under-training warnings (a mode whose best epoch
    was its last: still improving when it stopped; a mode trained a single epoch, which cannot
    tell)."""
    lines = []
    for label, row in report.labelled_rows():
        encoder = next(
            name for name, rows in report.encoder_rows.items() if any(r is row for r in rows)
        )
        budget = row_budget(report.budgets, encoder, row)
        sentence = answer_sentence(label, row, budget, report.margin)
        if sentence is not None:
            lines.append(sentence)
            caution = tie_caution(label, row, report.margin)
            if caution is not None:
                lines.append(caution)
            spent = decision_sentence(report.spent, label) if budget is not None else None
            if spent is not None:
                lines.append(spent)
        epochs_of = run_epochs(row)
        for mode, (rising, told, epochs) in under_trained(epochs_of).items():
            if budget is not None:
                # fe's default space searches rate, dropout and patience, not epochs: a wider
                # range of what was never searched is not the advice there.
                searched_epochs = "TUNE_EPOCHS=" in mode_recipe(row, mode)
                advice = (
                    "a wider epoch range (--space) may change its verdict."
                    if searched_epochs
                    else f"its search did not set the epochs (its config's {epochs}): adding "
                    f"TUNE_EPOCHS={epochs}:{2 * epochs} to its space (--space {mode}='<its "
                    f"space> TUNE_EPOCHS={epochs}:{2 * epochs}') may change its verdict."
                )
                lines.append(
                    f"Warning: {label} {mode}: its best epoch was its last in {rising} of {told} "
                    f"runs ({epochs} epochs): still improving when training stopped, at the "
                    f"best setting of its search; {advice}"
                )
                continue
            lines.append(
                f"Warning: {label} {mode}: its best epoch was its last in {rising} of {told} "
                f"runs ({epochs} epochs): still improving when training stopped, so "
                f"under-trained at {recipe_words(row, mode)}; more epochs (TUNE_EPOCHS) or "
                "another rate may change its verdict."
            )
        for mode, (stuck, runs, label_value) in one_class_runs(row, report.split).items():
            lines.append(
                f"Warning: {label} {mode}: predicted {label_value!r} for every "
                f"{report.split} example in {stuck} of {runs} runs: it had not learned the "
                "task when training stopped (early stopping can end a run whose dev metric has "
                "not yet moved); more patience (TUNE_PATIENCE), another rate or a search "
                "(--budget) may change its verdict."
            )
        for mode, (once, runs) in single_epoch(epochs_of).items():
            lines.append(
                f"Warning: {label} {mode}: trained a single epoch in {once} of {runs} runs, "
                "so whether it was still improving cannot be told; train it longer "
                "(TUNE_EPOCHS) before acting on its verdict."
            )
    if lines and report.split != "validation":
        lines.insert(
            0,
            f"On the {report.split} split: these verdicts check the choice made on dev (the "
            "default report), they do not make it.",
        )
    return lines
