"""
`tune-compare --budget K --budget-unit compute`: every mode may spend the same compute on its
search, instead of the same number of trials.

Counted in trials (the default, `--budget-unit trials`), a frozen trial with a light head
(`TUNE_FE_HEAD=linear|mlp`: a few seconds of training on cached pooled features) counts as
much as a fine-tuning trial that runs the encoder forward and backward over every instance of
every epoch, so the cheap arm is searched as narrowly as the expensive ones. Counted in compute,
the unit is a forward pass of the encoder over one training instance (`reporting.costs`): a
fwd+bwd pass counts three, a cached frozen epoch none after the one that fills the cache, and
the task network's own work is added (`costs.head_forward_equivalents`: its parameters x the
positions it runs over, so a BiLSTM head over every token is not free, a linear layer on one
pooled vector almost is).

The budget: K trials of the costliest mode at the most its space lets a trial train
(`ComputeBudget.total`: `TUNE_EPOCHS`' upper end, else the config's epochs; fwd+bwd passes over
the training instances for a mode whose encoder trains, one forward pass for a frozen one). Each
mode's search then runs trials until its finished trials have spent that much, with at least K
and at most `COMPUTE_TRIAL_CAP` x K trials: the costliest mode gets K trials (more if pruning
stopped some early), a light frozen arm up to the cap. The last trial may overshoot the budget
by less than one trial: a trial's cost is known when it ends. Like the trials, the count is
resumable (a rerun counts the study's finished trials' compute and runs only what is missing)
and every trial's cost is read from its run folder's `cost.json`, so it does not depend on the
machine's load.

A cached frozen trial is charged the share of its feature-cache entries its encoder computed
(cost.json's `epoch_cache_lookups`): the search's first trial fills the cache, the later ones
read it and pay only their head. Shared searches (`--coordinator`) are counted in trials only: their
trial slots are created up front.
"""

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_tune.rundir import RUN_INFO_NAME, load_run

TRIALS, COMPUTE = "trials", "compute"
BUDGET_UNITS = (TRIALS, COMPUTE)
# The most trials one mode's search runs under a compute budget, as a multiple of K: a light
# frozen trial costs about nothing in compute, and past a few dozen trials over fe's four
# variables TPE has little left to find.
COMPUTE_TRIAL_CAP = 10


@dataclass(frozen=True)
class ComputeBudget:
    """What each mode's search may spend (module docstring), and how it was set."""

    trials: int  # K
    total: float  # forward-pass equivalents each mode may spend
    cap: int  # the most trials of one mode
    reference: str  # the mode whose K trials set `total`
    instances: int  # training instances
    wordpieces_per_instance: Optional[float]  # for heads that run once per instance

    def record(self) -> Dict[str, Any]:
        """What `budget.json`'s `compute_budget` holds."""
        return asdict(self)


def check_budget_unit(unit: str, coordinator: Any) -> None:
    """Refuses an unknown unit, and a compute budget shared by workers."""
    if unit not in BUDGET_UNITS:
        raise ConfigurationError(
            f"--budget-unit {unit!r}: expected one of {', '.join(BUDGET_UNITS)}."
        )
    if unit == COMPUTE and coordinator is not None:
        raise ConfigurationError(
            "--budget-unit compute with --coordinator: the workers' searches are counted in "
            "trials (their trial slots are created before any trial runs); drop --budget-unit "
            "or --coordinator."
        )


def _train_data(rendered: Dict[str, Any], config: Path) -> Tuple[int, Optional[float]]:
    """Instances and wordpieces per instance of the config's training file (the planner's
    count, `planning.data_count`: read once per file and reader)."""
    from allennlp_tune.planning.data_count import cached_count

    try:
        count = cached_count(rendered["dataset_reader"], str(rendered["train_data_path"]))
    except Exception as error:  # noqa: BLE001  (any reader error: the training would fail too)
        raise ConfigurationError(
            f"--budget-unit compute: the training data of {config} could not be counted "
            f"({error}); fix it, or count the budget in trials."
        ) from None
    if not count.instances:
        raise ConfigurationError(f"--budget-unit compute: {config} has no training instances.")
    per_instance = count.wordpieces / count.instances if count.wordpieces else None
    return count.instances, per_instance


def compute_budget(
    configs: Dict[str, Path],
    budget: int,
    most_epochs: Dict[str, Optional[int]],
    frozen: Sequence[str],
    variables: Dict[str, str],
    overrides: Optional[str] = None,
) -> ComputeBudget:
    """
    The compute budget of `configs` (mode -> config), K = `budget`, rendered with `variables`
    (the trials' ext vars); `most_epochs`: per mode the upper end of its space's `TUNE_EPOCHS`
    (`budget_plan.most_epochs`), `None` where the space does not search it (the config's
    epochs then); `frozen`: the modes whose encoder does not train.
    """
    from allennlp_tune.planning.plan import render_config

    instances, per_instance = 0, None
    reference, most = "", -1.0
    for mode, config in configs.items():
        rendered = render_config(config, variables, overrides)
        if not instances:
            instances, per_instance = _train_data(rendered, config)
        epochs = most_epochs.get(mode) or int(rendered.get("trainer", {}).get("num_epochs", 1))
        # A frozen trial runs the encoder forward once (its cache's fill); a trained one runs
        # it forward and backward (three forward passes) every epoch.
        cost = float(instances) if mode in frozen else 3.0 * epochs * instances
        if cost > most:
            reference, most = mode, cost
    return ComputeBudget(
        trials=budget,
        total=budget * most,
        cap=COMPUTE_TRIAL_CAP * budget,
        reference=reference,
        instances=instances,
        wordpieces_per_instance=per_instance,
    )


def trials_compute(trials: Sequence[Any], wordpieces_per_instance: Optional[float]) -> float:
    """What the finished `trials` (Optuna's) cost in the compute unit, from their run folders'
    `cost.json`; a trial without one (it failed before its first epoch) costs nothing."""
    from allennlp_tune.reporting.costs import compute_equivalents

    spent = 0.0
    for trial in trials:
        run_dir = trial.user_attrs.get("run_dir")
        if not run_dir or not (Path(run_dir) / RUN_INFO_NAME).is_file():
            continue
        spent += compute_equivalents(load_run(Path(run_dir)), wordpieces_per_instance) or 0.0
    return spent


def search_is_done(finished: int, spent: float, compute: ComputeBudget) -> bool:
    """Whether a mode's search has its compute budget: at least K finished trials that spent
    the budget, or the cap."""
    return finished >= compute.cap or (finished >= compute.trials and spent >= compute.total)


__all__ = [
    "BUDGET_UNITS",
    "COMPUTE",
    "COMPUTE_TRIAL_CAP",
    "ComputeBudget",
    "TRIALS",
    "check_budget_unit",
    "compute_budget",
    "search_is_done",
    "trials_compute",
]
