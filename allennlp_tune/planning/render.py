"""
The plan as text: a Markdown table with a row per cell (instances, wordpieces, encoder size,
feature cache, peak RAM, time per epoch, marked "(calibrated)" when measured on this machine, the
whole run at most), then per cell how the counts and the cache size were reached, which cost-model
entry the estimates come from, its notes and its budget problem, a footer saying what the
estimates are, and the estimated total of every pending run (`total_line`). tune-grid and
tune-compare print it before anything trains.
"""

import sys
from typing import List, Optional, Sequence, TextIO

from allennlp_tune.planning.cost_model import COST_MODEL
from allennlp_tune.planning.data_count import DataCount
from allennlp_tune.planning.plan import (
    CellPlan,
    counted,
    planned_run_seconds,
    planned_total_seconds,
)


def _size(num_bytes: Optional[float]) -> str:
    """Bytes in the largest unit (GB, MB, KB) that keeps the number at least 1, or "n/a"."""
    if num_bytes is None:
        return "n/a"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:.1f} {unit}"
    return f"{int(num_bytes)} B"


def duration(seconds: Optional[float]) -> str:
    """Seconds up to 90 s, then minutes up to 90 min, then hours; "n/a" when unknown."""
    if seconds is None:
        return "n/a"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def render_plan(plans: Sequence[CellPlan]) -> str:
    """The plan as a Markdown table, then the formula, notes and budget problems per cell."""
    lines = [
        "| cell | instances | wordpieces | encoder (L x H, params) | feature cache | "
        "peak RAM | time / epoch | whole run, at most |",
        "|---|---|---|---|---|---|---|---|",
    ]
    details: List[str] = []
    for plan in plans:
        data = plan.data
        encoder = plan.encoder
        if encoder is None:
            encoder_text = "n/a"
        else:
            params = f", {encoder.params / 1e6:.1f} M" if encoder.params else ""
            encoder_text = f"{encoder.num_layers} x {encoder.hidden_size}{params}"
        if plan.cache_config is None:
            cache_text = "none"
        elif plan.cache_bytes is None:
            cache_text = "n/a"
        else:
            cache_text = _size(plan.cache_bytes) + (" (over budget)" if plan.budget_error else "")
        rss = None if plan.peak_rss_mb is None else plan.peak_rss_mb * 2**20
        epoch_text = duration(plan.epoch_seconds)
        if plan.first_epoch_seconds is not None and plan.epoch_seconds is not None:
            epoch_text = f"{duration(plan.first_epoch_seconds)} first, then {epoch_text}"
        if plan.time_source != "cost model" and plan.epoch_seconds is not None:
            epoch_text += f" ({plan.time_source})"
        total = planned_run_seconds(plan)
        total_text = (
            "n/a" if total is None else f"{duration(total)} ({counted(plan.epochs, 'epoch')})"
        )
        lines.append(
            f"| {plan.stem} | {f'{data.instances:,}' if data else 'n/a'} | "
            f"{f'{data.wordpieces:,}' if data else 'n/a'} | {encoder_text} | {cache_text} | "
            f"{_size(rss)} | {epoch_text} | {total_text} |"
        )
        if data is not None:
            per = data.wordpieces / data.instances if data.instances else 0.0
            details.append(
                f"{plan.stem}: {data.instances:,} instances, {data.sequences:,} sequences, "
                f"{data.wordpieces:,} wordpieces ({per:.1f} per instance), counted in "
                f"{data.seconds:.1f} s"
            )
        if plan.cache_bytes is not None and data is not None and encoder is not None:
            validation = plan.validation or DataCount()
            wordpieces = f"{data.wordpieces + validation.wordpieces:,} wordpieces"
            entries = f"{data.sequences + validation.sequences:,} entries"
            if plan.validation is not None:
                wordpieces += f" ({data.wordpieces:,} train + {validation.wordpieces:,} validation)"
                entries += f" ({data.sequences:,} + {validation.sequences:,})"
            if plan.cache_pooled:  # each entry holds 2 pooled vectors a layer
                wordpieces = f"2 poolings x {data.sequences + validation.sequences:,} sequences"
            layers = counted(plan.cache_layers, "layer")
            details.append(
                f"{plan.stem}: cache = 2 B x {wordpieces} x {layers} x "
                f"{encoder.hidden_size} + {entries} x 2.2 KB = {_size(plan.cache_bytes)} in "
                f"{plan.cache_directory}"
            )
        if plan.cost_key is not None and plan.time_source in ("calibrated", "measured"):
            details.append(f"{plan.stem}: RAM from COST_MODEL[{plan.cost_key!r}]")
        elif plan.cost_key is not None:
            details.append(f"{plan.stem}: time and RAM from COST_MODEL[{plan.cost_key!r}]")
        for note in plan.notes:
            details.append(f"{plan.stem}: {note}")
        if plan.budget_error:
            details.append(f"{plan.stem}: OVER BUDGET: {plan.budget_error}")
    modes = sorted({plan.mode for plan in plans if plan.mode and plan.mode in COST_MODEL})
    footer = (
        "Peak RAM and time per epoch: 2-core CPU cost model fitted on MiniLM and MPNet runs "
        "(allennlp_tune/planning/cost_model.py; modes with measurements: "
        f'{", ".join(modes) or "none"}); n/a where no measurement exists. Time "calibrated": '
        "a few training batches of the cell timed on this machine, scaled to its counted "
        'instances; "measured": the median epoch of its finished runs on this machine '
        "(allennlp_tune/planning/calibrate.py)."
    )
    return (
        "\n".join(lines + [""] + details + ([""] if details else []) + [footer, total_line(plans)])
        + "\n"
    )


def total_line(plans: Sequence[CellPlan]) -> str:
    """The estimated total of every pending run (`planned_total_seconds`), saying which cells
    it leaves out for want of an estimate."""
    runs = sum(plan.pending_runs for plan in plans)
    total = planned_total_seconds(plans)
    unknown = [plan.stem for plan in plans if planned_run_seconds(plan) is None]
    left_out = f"; without {', '.join(unknown)} (no estimate)" if unknown else ""
    sources = sorted({plan.time_source for plan in plans if planned_run_seconds(plan)})
    return (
        f"Estimated total: {duration(total)} at most for {runs} run(s) "
        f"(time from {' and '.join(sources) or 'nothing'}; early stopping can end runs "
        f"sooner){left_out}."
    )


def first_look_line(plans: Sequence[CellPlan], runs: Sequence[int], first_look: int) -> str:
    """
    The total of a `--sequential` decision if its first look settles every pair: each cell's
    planned run x `runs`, its runs to do up to that look (trials not finished and the first
    look's pending seeds): `planned_total_seconds` of those counts.
    """
    total = planned_total_seconds(plans, runs)
    return (
        f"If the first look ({first_look} seeds per mode) decides: {duration(total)} at most "
        f"for {sum(runs)} run(s); a difference the looks cannot settle, unless they stop it as "
        "futile, trains every seed up to the cap (the total above)."
    )


def print_plan(plans: Sequence[CellPlan], stream: Optional[TextIO] = None) -> None:
    """`render_plan` of the plans on `stream` (default: stderr), flushed."""
    stream = stream or sys.stderr
    stream.write(render_plan(plans))
    stream.flush()


def show_plans(
    plans: Sequence[CellPlan],
    heading: str,
    tool: str,
    plan_only: bool = False,
    calibrate: bool = True,
) -> None:
    """
    What tune-grid and tune-compare say before anything trains: time a few batches of each
    cell on this machine (`calibrate.calibrate_plans`, when `calibrate` and
    `TUNE_PLAN_CALIBRATE` allow, and not for plans refused for their caches, nor with
    `plan_only` for plans with problems: such a grid is not worth the timing; "timing a few
    training batches" only when a batch is timed, not when every cell was measured from its
    finished runs or timed before in this process), then
    `tool: heading` and the table (`print_plan`), on stdout with
    `plan_only`, else stderr. Raises a `ConfigurationError` when a cell's cache would not fit
    (`plan.budget_failures`) and, with `plan_only`, when a cell cannot train or a split it
    names does not read (`plan.plan_problems`), after the table.
    """
    from allennlp.common.checks import ConfigurationError

    from allennlp_tune.planning.calibrate import calibrate_plans, calibration_enabled
    from allennlp_tune.planning.plan import budget_failures, plan_problems

    stream = sys.stdout if plan_only else sys.stderr
    refused = budget_failures(plans)
    problems = plan_problems(plans)
    # Nor for a plan-only refused on its problems: its runs cannot start, timing them is waste.
    if calibrate and calibration_enabled() and not refused and not (plan_only and problems):

        def announce() -> None:
            stream.write(f"{tool}: timing a few training batches of each cell on this machine\n")
            stream.flush()

        calibrate_plans(plans, announce=announce)
    stream.write(f"{tool}: {heading}\n")
    print_plan(plans, stream)
    if refused:
        raise ConfigurationError(f"nothing was trained: {refused}")
    if plan_only and problems:
        raise ConfigurationError(f"the plan found what would fail: {problems}")


def _clock(seconds: float) -> str:
    """Seconds as m:ss, or h:mm:ss from an hour."""
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def estimate_error(
    plan: CellPlan,
    cost: Optional[dict],
    wall_seconds: Optional[float],
    cache_filled: bool = False,
) -> Optional[str]:
    """
    The plan's error on a finished run, as "took 4:10 (3 epochs), planned 3:40 (+14%,
    calibrated)": the run's training time (the sum of its `cost.json` `epoch_seconds`, else
    `mean_epoch_seconds` x `epochs`, else the run's wall time) against the plan for the epochs
    it ran (early stopping can end it before `trainer.num_epochs`); `cache_filled`: an earlier
    run of the cell filled the cache, so every epoch is priced as read from it. None where the
    plan had no time per epoch.
    """
    if plan.epoch_seconds is None:
        return None
    cost = cost if isinstance(cost, dict) else {}
    epoch_seconds = cost.get("epoch_seconds")
    epochs = cost.get("epochs")
    measured = None
    if isinstance(epoch_seconds, list) and epoch_seconds:
        measured = float(sum(epoch_seconds))
        epochs = len(epoch_seconds)
    elif isinstance(cost.get("mean_epoch_seconds"), (int, float)) and isinstance(epochs, int):
        measured = float(cost["mean_epoch_seconds"]) * epochs
    what = "training"
    if measured is None or not isinstance(epochs, int) or epochs <= 0:
        if wall_seconds is None or plan.epochs is None:
            return None
        measured, epochs, what = wall_seconds, plan.epochs, "run, wall time"
    planned = plan.epoch_seconds * epochs
    if plan.first_epoch_seconds is not None and not cache_filled:
        planned = plan.first_epoch_seconds + plan.epoch_seconds * (epochs - 1)
    error = f"{100 * (measured - planned) / planned:+.0f}%" if planned > 0 else "n/a"
    return (
        f"took {_clock(measured)} ({what}, {counted(epochs, 'epoch')}), "
        f"planned {_clock(planned)} "
        f"({error}, {plan.time_source})"
    )


__all__ = ["estimate_error", "first_look_line", "print_plan", "render_plan", "total_line"]
