"""
A results folder's summaries prove themselves too: `sequential.json` (`tune-compare
--sequential`, `experiments.rounds`) and `budget.json` (`tune-compare --budget`,
`experiments.budget`) are read with their shape checked, then held to the runs and trials they
summarise, before the report shows a verdict or a search from them.

`sequential.json`: every key the report reads has its type where it is there, and the few
without which the file means nothing (`REQUIRED`) are there (`SEQUENTIAL_SHAPE`,
`PAIR_SHAPE`, `LOOK_SHAPE`: a look has every key). Each pair's `text`, `verdict`, `decision`,
`seeds` and `stopped` are those of its last look; each look's difference is the mean of its
per-seed scores a minus b; each per-seed score is the score of the run it names (the mode's
run of the k-th seed of `seed_order`, which the report read and verified, x100); and the looks
themselves are recomputed from those runs' dev predictions (`sequential.replay`, the bootstrap
seeded as the rounds seeded it, so the same intervals and decisions come out), where all of
them have predictions.

`budget.json`: its shape, likewise (`BUDGET_SHAPE`, `MODE_SHAPE`). Each mode's finished
trials add up to the budget (under a budget in compute, `unit: "compute"`, at least K and at
most its cap); its best trial's folder (`search/<study>/trial_<n>`), where the
folder is there, is a finished, undamaged run whose score is the recorded `best_value` and
whose ext vars hold the recorded `setting`.

A file that fails is *broken*: `check_saved` names it with what failed, the report leaves it
out (no verdict, no search table from it) and says so; the `tune-compare` command that wrote it
rebuilds it when run again (the rounds recompute every look from the runs; the budget rewrites
`budget.json` from its studies). A file that cannot be read at all (cut short, not JSON, not an
object) is broken the same way, never an error.
"""

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from allennlp_tune.reporting.intervals import bootstrap_options
from allennlp_tune.reporting.predictions import read_predictions
from allennlp_tune.reporting.scorers import metric_kind
from allennlp_tune.reporting.sequential import (
    CODES,
    DEFAULT_ALPHA,
    OBRIEN_FLEMING,
    Look,
    SequentialPlan,
    replay,
)
from allennlp_tune.reporting.verify import verify_run
from allennlp_tune.rundir import (
    BUDGET_NAME,
    BUDGET_SEARCH_DIR,
    PREDICTIONS_NAME,
    SEQUENTIAL_NAME,
    Run,
    describe_value,
    load_run,
    read_json_object,
)

Check = Callable[[Any], bool]
# Scores are compared in points; per-seed scores come from the same predictions as the runs'.
SCORE_TOLERANCE = 1e-3
# The recomputed looks come from the same bootstrap draws: equal up to float rounding.
LOOK_TOLERANCE = 1e-6


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _optional(check: Check) -> Check:
    return lambda value: value is None or check(value)


def _list_of(check: Check) -> Check:
    return lambda value: isinstance(value, list) and all(check(item) for item in value)


def _object_of(check: Check) -> Check:
    return lambda value: (
        isinstance(value, dict)
        and all(isinstance(key, str) and check(item) for key, item in value.items())
    )


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_object(value: Any) -> bool:
    return isinstance(value, dict)


# key -> (check, what it should be), for the keys the report reads.
Shape = Dict[str, Tuple[Check, str]]
_NUMBER_OR_NULL = (_optional(_is_number), "a number or null")
LOOK_SHAPE: Shape = {
    "mode_a": (_is_str, "a string"),
    "mode_b": (_is_str, "a string"),
    "metric": (_is_str, "a string"),
    "index": (_is_int, "an integer"),
    "seeds_a": (_is_int, "an integer"),
    "seeds_b": (_is_int, "an integer"),
    "time": (_is_number, "a number"),
    "bound": _NUMBER_OR_NULL,
    "level": (_is_number, "a number"),
    "difference": (_is_number, "a number"),
    "low": _NUMBER_OR_NULL,
    "high": _NUMBER_OR_NULL,
    "df": _NUMBER_OR_NULL,
    "std_error": (_is_number, "a number"),
    "data_std_error": (_is_number, "a number"),
    "decision": (lambda value: value in CODES.values(), "a decision"),
    "margin": _NUMBER_OR_NULL,
    "within_margin": (lambda value: isinstance(value, bool), "a boolean"),
    "scores_a": (_list_of(_is_number), "a list of numbers"),
    "scores_b": (_list_of(_is_number), "a list of numbers"),
    "power": _NUMBER_OR_NULL,  # absent before the futility rule
}
PAIR_SHAPE: Shape = {
    "mode_a": (_is_str, "a string"),
    "mode_b": (_is_str, "a string"),
    "verdict": (_optional(_is_str), "a string or null"),
    "decision": (_optional(_is_str), "a string or null"),
    "stopped": (lambda value: isinstance(value, bool), "a boolean"),
    "seeds": (_is_int, "an integer"),
    "text": (_optional(_is_str), "a string or null"),
    "looks": (_list_of(_is_object), "a list of objects"),
}
PLAN_SHAPE: Shape = {
    "looks": (lambda v: _list_of(_is_int)(v) and bool(v), "a list of integers"),
    "alpha": (_is_number, "a number"),
    "spending": (_is_str, "a string"),
    "description": (_is_str, "a string"),
    "futility": (_is_number, "a number"),  # absent before the futility rule: 0
}
SEQUENTIAL_SHAPE: Shape = {
    "task": (_is_str, "a string"),
    "encoder": (_is_str, "a string"),
    "plan": (_is_object, "an object"),
    "margin": _NUMBER_OR_NULL,
    "seed_order": (_list_of(_is_int), "a list of integers"),
    "seeds_trained": (_object_of(_is_int), "an object of integers"),
    "runs_at_cap": (_is_int, "an integer"),
    "pairs": (_list_of(_is_object), "a list of objects"),
    "problem": (_optional(_is_str), "a string or null"),
}
MODE_SHAPE: Shape = {
    "mode": (_is_str, "a string"),
    "study": (_is_str, "a string"),
    "space": (_list_of(_is_str), "a list of strings"),
    "start": (_optional(_is_object), "an object or null"),
    "trials": (_object_of(_is_int), "an object of integers"),
    "best_trial": (_is_int, "an integer"),
    "best_value": _NUMBER_OR_NULL,
    "metric": (_is_str, "a string"),
    "setting": (_object_of(_is_str), "an object of strings"),
    "seconds": (_is_number, "a number"),
    "passes": (_optional(lambda v: _list_of(_is_number)(v) and len(v) == 2), "two numbers"),
    "full_passes": (_optional(lambda v: _list_of(_is_number)(v) and len(v) == 2), "two numbers"),
    "start_passes": (_optional(lambda v: _list_of(_is_number)(v) and len(v) == 2), "two numbers"),
    "notes": (_list_of(_is_str), "a list of strings"),
    "compute": (_optional(_is_number), "a number or null"),
    "trial_values": (_list_of(_is_number), "a list of numbers"),
    "higher_is_better": (lambda v: isinstance(v, bool), "true or false"),
    "kept_seed": (_optional(_is_int), "an integer or null"),
    "kept_note": (_optional(_is_str), "a string or null"),
}
BUDGET_SHAPE: Shape = {
    "task": (_is_str, "a string"),
    "encoder": (_is_str, "a string"),
    "budget": (lambda v: _is_int(v) and v > 0, "a positive integer"),
    "search_dir": (_is_str, "a string"),
    "search_seed": (_is_int, "an integer"),
    "pruner": (_is_str, "a string"),
    "unit": (lambda v: v in ("trials", "compute"), '"trials" or "compute"'),
    "modes": (_list_of(_is_object), "a list of objects"),
}


# The keys without which a record means nothing; any other key of a shape may be absent (a file
# written by an older version, or by hand for a test), and is checked only when it is there.
REQUIRED = {
    "sequential": ("task", "encoder"),
    "pair": ("mode_a", "mode_b"),
    "look": tuple(key for key in LOOK_SHAPE if key != "power"),
    "plan": (),
    "budget": ("task", "encoder", "budget"),
    "mode": ("mode",),
}


def shape_problems(
    value: Any, shape: Shape, where: str = "", required: Sequence[str] = ()
) -> List[str]:
    """What in `value` is not of `shape`: a `required` key missing, or a key of the wrong type
    (`where` prefixes each key, e.g. `pairs[0].`)."""
    if not isinstance(value, dict):
        return [f"{where.rstrip('.') or 'the file'} is {describe_value(value)}, expected an object"]
    problems = [f"{where}{key} is missing" for key in required if key not in value]
    for key, (check, expected) in shape.items():
        if key in value and not check(value[key]):
            problems.append(f"{where}{key} is {describe_value(value[key])}, expected {expected}")
    return problems


@dataclass
class BrokenFile:
    """A summary file the report leaves out, and what failed."""

    path: Path
    problems: List[str] = field(default_factory=list)

    def line(self) -> str:
        rebuild = "rerun the tune-compare command that wrote it to rebuild it"
        return f"{self.path}: broken, not shown ({'; '.join(self.problems)}); {rebuild}"


RunKey = Tuple[str, str, str, Optional[int]]


def runs_by_key(runs: Sequence[Run]) -> Dict[RunKey, Run]:
    """Table 2 runs by (encoder, task, mode, seed), as a summary names them."""
    return {
        (run.name.encoder, run.name.task, run.name.mode, run.seed): run
        for run in runs
        if run.name is not None and not run.name.variant
    }


def _look_of(saved: Mapping[str, Any]) -> Look:
    """A stored look as a `Look` (JSON's nulls back to infinities)."""
    values = dict(saved)
    for key in ("bound", "low", "high", "df"):
        if values.get(key) is None:
            values[key] = -math.inf if key == "low" else math.inf
    values["scores_a"], values["scores_b"] = tuple(values["scores_a"]), tuple(values["scores_b"])
    return Look(**{key: values[key] for key in LOOK_SHAPE if key in values})


def _pair_problems(pair: Mapping[str, Any], where: str) -> List[str]:
    """A pair's own consistency: its shape, its looks', its summary against its last look."""
    problems = shape_problems(pair, PAIR_SHAPE, where, REQUIRED["pair"])
    if problems:
        return problems
    looks = pair.get("looks") or []
    for k, look in enumerate(looks):
        problems += shape_problems(look, LOOK_SHAPE, f"{where}looks[{k}].", REQUIRED["look"])
    if problems or not looks:
        return problems
    for k, saved in enumerate(looks):
        scores_a, scores_b = saved["scores_a"], saved["scores_b"]
        if len(scores_a) != saved["seeds_a"] or len(scores_b) != saved["seeds_b"]:
            problems.append(f"{where}looks[{k}]: the seed counts and the scores disagree")
        elif scores_a and scores_b:
            mean = sum(scores_a) / len(scores_a) - sum(scores_b) / len(scores_b)
            if abs(mean - saved["difference"]) > SCORE_TOLERANCE:
                problems.append(
                    f"{where}looks[{k}]: difference {saved['difference']:+.4g} but its per-seed "
                    f"scores give {mean:+.4g}"
                )
    last = _look_of(looks[-1])
    said = {
        "text": last.text(),
        "verdict": last.verdict,
        "decision": last.decision,
        "stopped": last.stop,
        "seeds": last.seeds_a,
    }
    for key, value in said.items():
        if key in pair and pair[key] != value:
            problems.append(f"{where}{key} is not what its last look says ({value!r})")
    return problems


def _runs_of_look(
    saved: Mapping[str, Any], look: Mapping[str, Any], runs: Mapping[RunKey, Run]
) -> Tuple[Dict[str, List[Run]], List[str]]:
    """The runs behind a look's per-seed scores (by mode), and what does not match them."""
    found: Dict[str, List[Run]] = {}
    problems: List[str] = []
    if "seed_order" not in saved:
        return found, problems  # which runs the scores are is not known
    for side in ("a", "b"):
        mode, scores = look[f"mode_{side}"], look[f"scores_{side}"]
        found[mode] = []
        for seed, score in zip(saved["seed_order"], scores):
            run = runs.get((saved["encoder"], saved["task"], mode, seed))
            if run is None or not run.scored or run.value is None:
                why = "not found" if run is None else run.status
                problems.append(f"{mode} seed {seed}, which a look uses, is {why}")
                continue
            if abs(100 * run.value - score) > SCORE_TOLERANCE:
                problems.append(
                    f"{mode} seed {seed}: stored score {score:.4g} but the run's is "
                    f"{100 * run.value:.4g}"
                )
            found[mode].append(run)
    return found, problems


def _replay_problems(
    saved: Mapping[str, Any], pair: Mapping[str, Any], found: Dict[str, List[Run]]
) -> List[str]:
    """The pair's looks recomputed from its runs' dev predictions, against the stored ones."""
    mode_a, mode_b = pair["mode_a"], pair["mode_b"]
    every = found.get(mode_a, []) + found.get(mode_b, [])
    plan_saved = saved.get("plan") or {}
    if not every or not all(run.predictions for run in every) or "looks" not in plan_saved:
        return []  # nothing to recompute from; the scores were compared above
    try:
        # A file from before the futility rule had none: its looks are recomputed without it.
        plan = SequentialPlan(
            tuple(plan_saved["looks"]),
            float(plan_saved.get("alpha", DEFAULT_ALPHA)),
            plan_saved.get("spending", OBRIEN_FLEMING),
            float(plan_saved.get("futility", 0.0)),
        )
        metric = str(every[0].metric)
        options = bootstrap_options(every, metric_kind(metric))
        loaded = {
            mode: [
                run.loaded.get(PREDICTIONS_NAME) or read_predictions(run.path / PREDICTIONS_NAME)
                for run in found[mode]
            ]
            for mode in (mode_a, mode_b)
        }
        looks = replay(
            loaded[mode_a],
            loaded[mode_b],
            metric,
            (mode_a, mode_b),
            plan,
            saved.get("margin"),
            **options,
        )
    except (ValueError, OSError) as error:
        return [f"its looks could not be recomputed from the runs ({error})"]
    stored = pair["looks"]
    if len(looks) < len(stored):
        return [f"{len(stored)} looks stored, the runs give {len(looks)}"]
    for k, (look, kept) in enumerate(zip(looks, stored)):
        ends = [(look.difference, kept["difference"])]
        ends += [(getattr(look, k), kept[k]) for k in ("low", "high") if kept[k] is not None]
        if look.decision != kept["decision"] or any(
            abs(mine - theirs) > LOOK_TOLERANCE for mine, theirs in ends
        ):
            return [f"look {k + 1}: stored {_look_of(kept).text()}, the runs give {look.text()}"]
    return []


def sequential_problems(saved: Any, runs: Mapping[RunKey, Run]) -> List[str]:
    """What is wrong with a `sequential.json` (module docstring); `[]` for a sound one."""
    problems = shape_problems(saved, SEQUENTIAL_SHAPE, "", REQUIRED["sequential"])
    if not problems and "plan" in saved:
        problems = shape_problems(saved["plan"], PLAN_SHAPE, "plan.", REQUIRED["plan"])
    if problems:
        return problems
    for k, pair in enumerate(saved.get("pairs") or []):
        where = f"pairs[{k}]."
        own = _pair_problems(pair, where)
        if own or not pair.get("looks"):
            problems += own
            continue
        found, against = _runs_of_look(saved, pair["looks"][-1], runs)
        if not against:
            against = _replay_problems(saved, pair, found)
        problems += [f"{where[:-1]} {pair['mode_a']} - {pair['mode_b']}: {p}" for p in against]
    return problems


def _trial_problems(
    results_dir: Path, saved: Mapping[str, Any], mode: Mapping[str, Any], label: str
) -> List[str]:
    """A searched mode's best trial against its folder, where the folder is there."""
    if "study" not in mode or "best_trial" not in mode:
        return []
    search_dir = saved.get("search_dir") or BUDGET_SEARCH_DIR
    trial_dir = results_dir / search_dir / mode["study"] / f"trial_{mode['best_trial']}"
    if not trial_dir.is_dir():
        return []
    trial = verify_run(load_run(trial_dir))
    label = f"{label}: best trial {mode['best_trial']}"
    if not trial.scored or trial.value is None:
        return [f"{label} is {trial.status} ({trial.detail})"]
    problems = []
    value = mode.get("best_value")
    if value is None or not math.isclose(trial.value, value, rel_tol=1e-5, abs_tol=1e-9):
        problems.append(f"{label}: best_value {value} but the trial's score is {trial.value:.6g}")
    ext_vars = trial.info.get("ext_vars") if isinstance(trial.info.get("ext_vars"), dict) else {}
    setting = mode.get("setting") or {}
    differs = sorted(key for key, item in setting.items() if ext_vars.get(key) != item)
    if differs:
        problems.append(f"{label}: its ext vars do not hold the setting's {', '.join(differs)}")
    return problems


def budget_problems(saved: Any, results_dir: Path) -> List[str]:
    """What is wrong with a `budget.json` (module docstring); `[]` for a sound one."""
    problems = shape_problems(saved, BUDGET_SHAPE, "", REQUIRED["budget"])
    if problems:
        return problems
    for k, mode in enumerate(saved.get("modes") or []):
        own = shape_problems(mode, MODE_SHAPE, f"modes[{k}].", REQUIRED["mode"])
        if own:
            problems += own
            continue
        label = f"modes[{k}] {mode['mode']}"
        if "trials" in mode:
            states = ("complete", "pruned", "failed")
            finished = sum(mode["trials"].get(state, 0) for state in states)
            if saved.get("unit") == "compute":
                # At least K trials, at most the cap (budget_compute).
                cap = (saved.get("compute_budget") or {}).get("cap")
                cap = cap if _is_int(cap) else 10 * saved["budget"]
                if not saved["budget"] <= finished <= cap:
                    problems.append(
                        f"{label}: {finished} finished trials, a budget in compute runs "
                        f"{saved['budget']} to {cap}"
                    )
            elif finished != saved["budget"]:
                problems.append(
                    f"{label}: {finished} finished trials, the budget is {saved['budget']}"
                )
        problems += _trial_problems(Path(results_dir), saved, mode, label)
    return problems


def check_saved(
    dirs: Sequence[Path], runs: Sequence[Run]
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]], List[BrokenFile]]:
    """
    The sound `sequential.json` and `budget.json` of the results folders `dirs`, and the broken
    ones (module docstring), each named with what failed. `runs` are the report's (verified).
    """
    sequential: List[Dict[str, Any]] = []
    budgets: List[Dict[str, Any]] = []
    broken: List[BrokenFile] = []
    keyed = runs_by_key(runs)
    for folder in map(Path, dirs):
        for name, kept in ((SEQUENTIAL_NAME, sequential), (BUDGET_NAME, budgets)):
            saved, problem = read_json_object(folder / name)
            if saved is None and problem is None:
                continue  # no such file
            if problem is not None:
                broken.append(BrokenFile(folder / name, [problem]))
                continue
            problems = (
                sequential_problems(saved, keyed)
                if name == SEQUENTIAL_NAME
                else budget_problems(saved, folder)
            )
            if problems:
                broken.append(BrokenFile(folder / name, problems))
            else:
                kept.append(saved)
    return sequential, budgets, broken
