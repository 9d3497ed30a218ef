"""
Seeds in rounds: train the modes of a comparison a few seeds at a time, and stop a mode's seeds
as soon as every verdict it takes part in is known (`tune-compare --sequential`).

The procedure is `allennlp_tune.reporting.sequential`'s group-sequential paired comparison (looks
after `plan.looks` seeds per mode, e.g. 3, 5, 7; alpha spending keeps the chance of a wrong
"better" verdict over all looks at `plan.alpha`), applied to the pairs the report compares
(`report.row_pairs`: each mode against fe, the others against ft, lora against bitfit):

1. round k trains seeds `seeds[:looks[k]]` of every mode that is in a pair still open (tune-grid's
   `run_grid`: complete runs are skipped, so the first round trains `looks[0]` seeds per mode);
2. every open pair then takes its look over those seeds' dev predictions; a pair stops when its
   interval excludes 0 (a better mode), lies inside (-margin, +margin) with a `margin`
   (equivalent), more seeds are unlikely to decide it (futile, `plan.futility`), or the look
   is at the seed cap (undecided);
3. a mode whose pairs have all stopped trains no further seed; the next round goes on with the
   others, until no pair is open.

Resumable: a rerun of the same command walks the rounds again from the first. Runs that exist
are skipped by the grid and each look is recomputed from them (the bootstrap's seed is fixed per
look, so the looks and their verdicts come out as before, as `sequential.replay` would give
them); only the runs that are missing are trained, and the comparison goes on where it stopped.

Each pair holds its own error rate: with several pairs (fe, ft, lora: three), the chance that
some pair says "better" wrongly is larger than `plan.alpha`; nothing here corrects for the number
of pairs (as in `sequential`).

Each look is printed as one line (every open pair's verdict and the seeds it used), and after
each look the whole state is written to `RESULTS_DIR/sequential.json` (`SEQUENTIAL_NAME`), which
tune-report shows beside the fixed 95% intervals. A seed that failed or has no dev predictions
stops the rounds before the look that needs it, saying which run to look at; a rerun retries it.
"""

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_tune.experiments.grid import GridResult, run_grid
from allennlp_tune.planning.render import duration
from allennlp_tune.reporting.intervals import bootstrap_options, row_pairs
from allennlp_tune.reporting.panel_data import run_seconds
from allennlp_tune.reporting.predictions import read_predictions
from allennlp_tune.reporting.scorers import metric_kind
from allennlp_tune.reporting.sequential import Look, SequentialComparison, SequentialPlan
from allennlp_tune.reporting.verify import verify_run
from allennlp_tune.rundir import (
    PREDICTIONS_NAME,
    Run,
    config_stem,
    load_run,
    parse_run_name,
    write_json,
)
from allennlp_tune.rundir.names import SEQUENTIAL_NAME

Pair = Tuple[str, str]
# train(modes, seeds) -> what the grid did; `run_sequential` trains with `run_grid`.
Train = Callable[[List[str], List[int]], GridResult]


@dataclass
class RoundsResult:
    """What the rounds did: the grid's runs over all rounds, each pair's looks, why it stopped."""

    grid: GridResult = field(default_factory=GridResult)
    looks: Dict[Pair, List[Look]] = field(default_factory=dict)
    # Seeds per mode the comparison trained up to (its last round with that mode).
    seeds: Dict[str, int] = field(default_factory=dict)
    # Why the rounds stopped before every pair had its verdict (a failed run, say).
    problem: Optional[str] = None
    comparisons: Dict[Pair, SequentialComparison] = field(default_factory=dict)


def _merge(total: GridResult, part: GridResult) -> None:
    """Adds a round's grid to the whole; a run skipped because an earlier round (or command)
    finished it counts once, as what it was the first time."""
    seen = set(total.trained) | set(total.skipped)
    total.skipped.extend(run for run in part.skipped if run not in seen)
    for name in ("trained", "failed", "moved_aside", "retrained", "damaged"):
        getattr(total, name).extend(getattr(part, name))


def _open_pairs(result: RoundsResult) -> List[Pair]:
    return [pair for pair, looks in result.looks.items() if not (looks and looks[-1].stop)]


def _round_runs(
    configs: Dict[str, Path], modes: Sequence[str], seeds: Sequence[int], results_dir: Path
) -> Tuple[Dict[str, List[Run]], Optional[str]]:
    """Each mode's runs of these seeds, in order; or what keeps a look from using them."""
    runs: Dict[str, List[Run]] = {}
    for mode in modes:
        runs[mode] = []
        for seed in seeds:
            run_dir = results_dir / config_stem(configs[mode]) / f"seed_{seed}"
            run = verify_run(load_run(run_dir))  # its files and score checked (`verify`)
            if not run.scored or not run.predictions:
                why = run.status if not run.scored else f"no {PREDICTIONS_NAME}"
                log = f"; log: {run.log}" if run.log else ""
                return runs, (
                    f"{run_dir} ({why}{log}) is needed by the look after {len(seeds)} seeds; "
                    "rerun the same command to train it again"
                )
            runs[mode].append(run)
    return runs, None


def _start(
    result: RoundsResult, runs: Dict[str, List[Run]], plan: SequentialPlan, margin: Optional[float]
) -> None:
    """The pairs' comparisons, once the first round's runs tell the metric and its options."""
    every = [run for mode_runs in runs.values() for run in mode_runs]
    metric = str(every[0].metric)
    try:
        kind = metric_kind(metric)
    except ValueError as error:
        raise ConfigurationError(
            f"--sequential compares the runs' dev predictions by their metric, and {error}; "
            "give the task a metric the paired bootstrap knows, or leave --sequential out."
        ) from error
    options = bootstrap_options(every, kind)
    result.comparisons = {
        pair: SequentialComparison(pair, metric, plan, margin, **options) for pair in result.looks
    }


def look_line(tool: str, index: int, plan: SequentialPlan, looks: Sequence[Look]) -> str:
    """`tune-compare: look 1 of 3 (3 seeds per mode): ft − fe ft better: +3.1 [...] (...)`."""
    seeds = looks[0].seeds_a if looks else 0
    said = "; ".join(f"{look.mode_a} − {look.mode_b} {look.text()}" for look in looks)
    return f"{tool}: look {index + 1} of {len(plan.looks)} ({seeds} seeds per mode): {said}"


def next_look_line(
    tool: str,
    index: int,
    plan: SequentialPlan,
    pairs: Sequence[Pair],
    runs: Mapping[str, Sequence[Run]],
) -> Optional[str]:
    """
    After look `index`, where `pairs` are still open and a look is left: the seeds the next
    look trains and their time, each open mode's new seeds at the mean training time of its
    runs so far (`cost.json`'s epochs, measured on this machine as they trained, not the plan's
    calibration). None after the last look or once every pair stopped.
    """
    if index + 1 >= len(plan.looks) or not pairs:
        return None
    more = plan.looks[index + 1] - plan.looks[index]
    modes = [mode for mode in runs if any(mode in pair for pair in pairs)]
    seconds = 0.0
    for mode in modes:
        measured = [run_seconds(run.cost) for run in runs[mode]]
        known = [value for value in measured if value is not None]
        if not known:
            return (
                f"{tool}: next look at {plan.looks[index + 1]} seeds per mode: {more} more "
                f"seed(s) of {', '.join(modes)}; no measured run of {mode} to time them by"
            )
        seconds += more * sum(known) / len(known)
    counted = sum(len(runs[mode]) for mode in modes)
    took = duration(seconds)
    return (
        f"{tool}: next look at {plan.looks[index + 1]} seeds per mode: {more} more seed(s) of "
        f"{', '.join(modes)}, about {took} of training (at each mode's mean run so far, "
        f"{counted} runs measured); until then the look above is not a verdict where it did "
        "not stop"
    )


def run_rounds(
    configs: Dict[str, Path],
    seeds: Sequence[int],
    results_dir: Path,
    train: Train,
    plan: Optional[SequentialPlan] = None,
    margin: Optional[float] = None,
    tool: str = "tune-compare",
) -> RoundsResult:
    """
    The rounds of the module docstring.

    # Parameters

    configs : `Dict[str, Path]`
        Each mode's config (`<task>_<encoder>_<mode>.jsonnet`), in the report's mode order.
    seeds : `Sequence[int]`
        The seeds in the order they are added; at least the plan's cap of them.
    results_dir : `Path`
        Where the runs are (and `sequential.json` goes).
    train : `Train`
        Trains the given modes' configs with the given seeds (skipping complete runs).
    plan : `SequentialPlan`, optional
        The looks, alpha and spending rule (default 3, 5, 7 seeds, 0.05, O'Brien-Fleming).
    margin : `float`, optional
        Equivalence margin in points.
    tool : `str`
        The command's name, at the start of each printed line.
    """
    plan = plan or SequentialPlan()
    seeds = list(seeds)
    if len(seeds) < plan.cap:
        raise ConfigurationError(
            f"{len(seeds)} seeds for looks up to {plan.cap} seeds per mode: give at least "
            f"{plan.cap} (--seeds), or a lower last look (--looks)."
        )
    result = RoundsResult(looks={pair: [] for pair in row_pairs(list(configs))})
    if not result.looks:
        raise ConfigurationError(
            f"--modes {' '.join(configs)}: no pair the report compares (each mode vs fe, the "
            "others vs ft, lora vs bitfit), so nothing for --sequential to decide; add fe or ft "
            "to --modes."
        )
    for index, count in enumerate(plan.looks):
        pairs = _open_pairs(result)
        if not pairs:
            break
        modes = [mode for mode in configs if any(mode in pair for pair in pairs)]
        _merge(result.grid, train(modes, seeds[:count]))
        runs, result.problem = _round_runs(configs, modes, seeds[:count], Path(results_dir))
        if result.problem is not None:
            print(f"{tool}: sequential comparison stopped: {result.problem}", file=sys.stderr)
            write_sequential(Path(results_dir), configs, seeds, plan, margin, result)
            break
        result.seeds.update({mode: count for mode in modes})
        if index == 0:
            _start(result, runs, plan, margin)
        taken = []
        for pair in pairs:
            runs_a, runs_b = (
                [
                    run.loaded.get(PREDICTIONS_NAME)
                    or read_predictions(run.path / PREDICTIONS_NAME)
                    for run in runs[mode]
                ]
                for mode in pair
            )
            look = result.comparisons[pair].look(runs_a, runs_b)
            result.looks[pair].append(look)
            taken.append(look)
        print(look_line(tool, index, plan, taken), file=sys.stderr)
        ahead = next_look_line(tool, index, plan, _open_pairs(result), runs)
        if ahead:
            print(ahead, file=sys.stderr)
        write_sequential(Path(results_dir), configs, seeds, plan, margin, result)
    return result


def _finite(value: Any) -> Any:
    """JSON has no infinity: an infinite bound (nothing spent) or interval end becomes null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, tuple):
        return [_finite(item) for item in value]
    return value


def sequential_json(
    configs: Dict[str, Path],
    seeds: Sequence[int],
    plan: SequentialPlan,
    margin: Optional[float],
    result: RoundsResult,
) -> Dict[str, Any]:
    """What `sequential.json` holds: the plan, each pair's looks and verdict, the seeds used."""
    name, _ = parse_run_name(config_stem(next(iter(configs.values()))))
    pairs = []
    for (mode_a, mode_b), looks in result.looks.items():
        last = looks[-1] if looks else None
        pairs.append(
            {
                "mode_a": mode_a,
                "mode_b": mode_b,
                "verdict": last.verdict if last else None,
                "decision": last.decision if last else None,
                "stopped": bool(last and last.stop),
                "seeds": last.seeds_a if last else 0,
                "text": last.text() if last else None,
                "looks": [
                    {key: _finite(value) for key, value in look.as_dict().items()} for look in looks
                ],
            }
        )
    return {
        "task": name.task if name else None,
        "encoder": name.encoder if name else None,
        "plan": {
            "looks": list(plan.looks),
            "alpha": plan.alpha,
            "spending": plan.spending,
            "futility": plan.futility,
            "description": plan.describe(),
        },
        "margin": margin,
        "seed_order": list(seeds[: plan.cap]),
        "seeds_trained": dict(result.seeds),
        "runs_at_cap": plan.cap * len(configs),
        "pairs": pairs,
        "problem": result.problem,
    }


def write_sequential(
    results_dir: Path,
    configs: Dict[str, Path],
    seeds: Sequence[int],
    plan: SequentialPlan,
    margin: Optional[float],
    result: RoundsResult,
) -> None:
    write_json(results_dir / SEQUENTIAL_NAME, sequential_json(configs, seeds, plan, margin, result))


def run_sequential(
    configs: Dict[str, Path],
    seeds: Sequence[int],
    results_dir: Path,
    sequential: Optional[SequentialPlan] = None,
    margin: Optional[float] = None,
    tool: str = "tune-compare",
    mode_ext_vars: Optional[Dict[str, Dict[str, str]]] = None,
    **grid_options: Any,
) -> RoundsResult:
    """
    `run_rounds` with the `sequential` plan, training with `run_grid` (its `grid_options` as
    they are, `plan` (the planner), `runner` and `predict` included; `predict` must not be
    `None`: the looks need dev predictions). `mode_ext_vars` (mode -> ext vars) trains each
    mode with its own ext vars over `grid_options`' (`tune-compare --budget`: each mode's best
    setting), one grid per round. Each round's plan covers the seeds up to the last look
    (`run_grid`'s `plan_seeds`): the most the comparison can still train.
    """
    if "predict" in grid_options and grid_options["predict"] is None:
        raise ValueError("a sequential comparison needs each run's dev predictions (predict)")
    # Each round's plan counts every seed up to the last look, so its estimated total is what
    # the rest of the comparison costs at most (the rounds stop sooner when verdicts are known).
    grid_options["plan_seeds"] = list(seeds[: (sequential or SequentialPlan()).cap])

    def train(modes: List[str], round_seeds: List[int]) -> GridResult:
        if mode_ext_vars is None:
            chosen = [configs[mode] for mode in modes]
            return run_grid(chosen, round_seeds, results_dir, tool=tool, **grid_options)
        # One grid for the round's modes, each config with its mode's ext vars, so the round
        # has one plan and one estimated total (as the workers' shared grid does).
        return run_grid(
            [configs[mode] for mode in modes],
            round_seeds,
            results_dir,
            tool=tool,
            config_ext_vars={configs[mode]: mode_ext_vars[mode] for mode in modes},
            **grid_options,
        )

    return run_rounds(configs, seeds, Path(results_dir), train, sequential, margin, tool)
