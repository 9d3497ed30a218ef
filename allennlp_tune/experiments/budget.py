"""
Equal tuning budgets for `tune-compare --budget K`: every mode gets the same K Optuna trials over
its own search space before its seeds are trained, so a verdict compares ways of adapting the
encoder, not a searched recipe against a default one.

Per mode (`budget_run.run_budget`):

1. its space (its `Mode`'s, `allennlp_tune.modes.MODES`, collected here as `SPACES`: fe
   searches the rate, dropout and patience of its early stopping; ft, sf, bitfit and lora the
   rate and epochs, each over the range its recipe lives in; the block modes topK / bottomK use
   ft's; ELMo's fine-tuning rates are higher, `ELMO_SPACES`),
   replaced per mode by `--space MODE="NAME=low:high[:log] ..."`;
2. its start: the config's own recipe for those variables (what tune-compare trains without
   `--budget`, read off the rendered config, `default_setting`), enqueued first so the search
   ends no worse than the default;
3. the study `<task>_<label>_<mode>` in `RESULTS_DIR/search/optuna.db`, trials under
   `RESULTS_DIR/search/<study>/trial_<n>` (tune-search's `run_search`: TPE, the k-th trial it
   draws, from 0, with sampler seed 1+k (`trial_seeded_sampler`); the median pruner on the
   per-epoch dev metric, judging from the first finished trial on, or successive halving over
   epochs with `--pruner halving` (`budget_pruner`; a study keeps the one it began with); trial
   seed the first reported seed, so that step 5 can keep the best trial, or `SEARCH_SEED`, no
   reported seed, where nothing is kept: the workers'). Resumable: the
   study's finished trials (complete, pruned or failed) count against K and only the rest
   run, so every mode ends with exactly K finished trials. A trial that a killed process left
   running trains on from its last checkpoint, the same trial with its reported epochs and
   passed rungs (`trial_resume`), where it is still the same run; one that Ctrl-C or SIGTERM
   stopped, or a left one that cannot go on (`_reclaim_dead_trials`), does not count and its
   setting runs again first. A study with more than K finished trials,
   or searched over another space, is refused;
4. its best trial's setting, which the seeds train with (as ext vars: each seed run's
   `config.json` and fingerprint hold it, so a seed trained with an older best is refused as
   changed, or retrained with `--retrain-changed`);
5. its best trial kept as that setting's first seed (`kept_trial`), when it trained to its end
   with the first reported seed: the seeds' grid then finds that seed complete and checks it
   as it checks every run it reuses (its config, data and packages), so a best trial whose
   setting or data changed since is refused as changed, not reused.

With a coordinator (`--coordinator`), many worker processes share steps 3 and 4
(`budget_workers`): each mode's study lives in the coordinator's storage with exactly K trials
that the workers claim, a dead worker's trial is run again by another, every worker waits for
the last search to finish, and then all share the seeds of every mode's best setting as one grid
(`compare`).

What was searched is written to `RESULTS_DIR/budget.json` (`BUDGET_NAME`), which tune-report
shows as a table (trials complete / pruned / failed, best dev score, chosen setting, what the
trials cost) and which makes the answer say "equal budgets (K trials per mode)". Its presence
also keeps `RESULTS_DIR/search/` out of the runs tune-report reads (`rundir.find_run_dirs`): the
report is of the seeds only.
"""

import math
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Container, Dict, List, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_tune.experiments.search import (
    INTERRUPTED_ATTR,
    SearchParam,
    _load_params,
    check_config,
    interrupted,
)
from allennlp_tune.host_access import storage_trial_id
from allennlp_tune.modes import MODES, mode_record
from allennlp_tune.rundir import RUN_INFO_NAME, SEED_EXT_VAR, load_run
from allennlp_tune.rundir.names import BUDGET_SEARCH_DIR
from allennlp_tune.rundir.tidy import tidy_run_dir

# The search spaces per mode, as tune-search's `--param` takes them (the mode table's, `MODES`).
SPACES: Dict[str, Tuple[str, ...]] = {name: mode.space for name, mode in MODES.items()}
# The frozen network is part of fe's search where a light head applies (a transformer encoder,
# a task that is not tagging: `searched_spaces`): the task kind's paper network or a light head
# on the pooled layers (TUNE_FE_HEAD, configs/experiment.libsonnet).
FE_HEAD_SPACE = "TUNE_FE_HEAD=paper,linear,mlp"
# Where ELMo's differ: its fine-tuning cells train at higher rates.
ELMO_SPACES: Dict[str, Tuple[str, ...]] = {
    name: mode.elmo_space for name, mode in MODES.items() if mode.elmo_space is not None
}
# The trials' seed where none is kept as a seed (the workers' searches): not among the reported
# seeds (1, 2, ...). In one process the trials train with the first reported seed instead, and
# each mode's best trial is kept as that seed (`kept_trial`); its dev score is then the best of
# K on the dev set it was chosen on (for every mode alike; the test split, scored once, is not).
SEARCH_SEED = 0
SAMPLER_SEED = 1
# The pruner of a budget search: a trial stops once its dev metric at an epoch, from the 2nd on,
# is behind the median of the finished trials' at that epoch, judged from the first finished
# trial on. tune-search's own default waits for 3 finished trials, which with the budgets a user
# can afford (K = 2-4 per mode) never prunes; here the first trial is the config's own recipe
# (enqueued first), a known-good reference to judge the drawn ones against.
PRUNER_STARTUP_TRIALS = 1
PRUNER_WARMUP_EPOCHS = 1
PRUNER_SAID = (
    f"median (per-epoch dev metric, after {PRUNER_STARTUP_TRIALS} finished trial(s), "
    f"from epoch {PRUNER_WARMUP_EPOCHS + 1})"
)
# `--pruner halving`: successive halving over epochs (Optuna's asynchronous
# `SuccessiveHalvingPruner`, Li et al. 2020), a multi-fidelity search: rungs after epochs 2, 4 and
# 10 (its step is the 0-based epoch: `HALVING_MIN_EPOCHS` x `HALVING_FACTOR` ** rung, from
# step 1), where a trial goes on only when it is in the best 1/`HALVING_FACTOR` of the trials
# that reached that rung (with fewer than `HALVING_FACTOR` there, only as the best; the first to
# reach a rung always goes on). Of 3 trials it stops at most two (SICK-E, fe ft lora, K = 3: the
# same one trial the median pruner stopped, docs/results/NOTEBOOK.md section 20); most stop after
# two epochs only from a budget of about `HALVING_FACTOR` ** 2. With `--budget-unit compute` what
# the stopped trials did not train buys more trials.
HALVING_MIN_EPOCHS = 1
HALVING_FACTOR = 3
PRUNERS = {
    "median": PRUNER_SAID,
    "halving": (
        f"successive halving (per-epoch dev metric; a trial goes on at epochs 2, 4 and 10 "
        f"only in the best 1/{HALVING_FACTOR} of the trials there)"
    ),
}


@dataclass(frozen=True)
class BudgetJob:
    """
    One `--budget K`: every mode's search as `budget_run.run_budget` is given it, read by the
    search of each mode in one process (`_search_mode`) and by the workers' (`budget_workers`)
    instead of a dozen arguments each. `configs`: mode -> config; `task` and `encoder`: the
    names `budget.json` records; `family`: the encoder's, which picks the default spaces.
    """

    configs: Dict[str, Path]
    budget: int
    results_dir: Path
    task: str
    encoder: str
    family: str
    ext_vars: Dict[str, str]
    overrides: Optional[str] = None
    spaces: Optional[Dict[str, Tuple[str, ...]]] = None
    keep_checkpoints: bool = False
    tool: str = "tune-compare"
    pruner: str = "median"
    # The trials' seed; with `keep_best`, the first reported seed, as which each mode's best
    # trial is kept (`kept_trial`).
    search_seed: int = SEARCH_SEED
    keep_best: bool = False

    @property
    def search_dir(self) -> Path:
        """Where the studies and their trials live: `RESULTS_DIR/search`."""
        return Path(self.results_dir) / BUDGET_SEARCH_DIR

    @property
    def trial_ext_vars(self) -> Dict[str, str]:
        """What every trial trains with: the job's ext vars at the search's seed."""
        return {**self.ext_vars, SEED_EXT_VAR: str(self.search_seed)}

    def space_of(self, mode: str) -> Tuple[List[SearchParam], List[str]]:
        """The mode's search space: its parameters and their `--param` texts."""
        texts = list(space_texts(mode, self.family, self.spaces))
        return mode_space(mode, self.family, self.spaces), texts

    def start_of(
        self, study: Any, config: Path, params: Sequence[SearchParam]
    ) -> Tuple[Optional[Dict[str, Any]], List[str]]:
        """The setting the mode's search starts with, and its notes: as its study keeps them,
        or, for a new study (or none yet), read off the config (`default_setting`)."""
        if study is not None and "budget_start" in study.user_attrs:
            return study.user_attrs["budget_start"], list(study.user_attrs["budget_notes"])
        return default_setting(config, params, self.trial_ext_vars, self.overrides)


@dataclass
class ModeSearch:
    """One mode's search: its study, space, start, finished trials, best trial and cost."""

    mode: str
    study: str
    config: str
    space: List[str]
    # The config's own recipe, enqueued first (Optuna params); `None` when it lies outside
    # the space or could not be read off the config.
    start: Optional[Dict[str, Any]]
    trials: Dict[str, int]
    trained_now: int
    best_trial: int
    best_value: float
    metric: str
    # The best trial's searched ext vars, which the seeds train with.
    setting: Dict[str, str]
    # What the finished trials cost: wall seconds of their epochs (validation included), and
    # encoder passes over training instances (forward+backward, forward only) where recorded.
    seconds: float = 0.0
    passes: Optional[Tuple[float, float]] = None
    # The same trials' passes had none been pruned (`reporting.costs.passes_to_the_end`): the
    # search's part of what the full protocol would have cost.
    full_passes: Optional[Tuple[float, float]] = None
    notes: List[str] = field(default_factory=list)
    # Under a compute budget (`budget_compute`): what its finished trials spent, in forward
    # passes of the encoder over one instance with the head's work added.
    compute: Optional[float] = None
    # Each counted trial's dev score in trial order (a pruned one's best epoch before it was
    # stopped; a failed one has none), for the expected best score of k trials in the report
    # (`reporting.expected_max`).
    trial_values: List[float] = field(default_factory=list)
    higher_is_better: bool = True
    # The passes of its config's own recipe (the start trial) trained to its end: what the naive
    # experiment (one run per mode at its recipe) costs of this mode; `None` where the start
    # was not tried (outside the space) or recorded no passes.
    start_passes: Optional[Tuple[float, float]] = None
    # The seed its best trial was kept as (`kept_trial`), or why it was not (`None` where the
    # search keeps none, as the workers' do).
    kept_seed: Optional[int] = None
    kept_note: Optional[str] = None


def seed_to_keep(seeds: Sequence[int], coordinator: Any, unit: str) -> Optional[int]:
    """
    The seed each mode's best trial is kept as (`kept_trial`), which its trials then train
    with: the first of `seeds`, in one process with a budget in trials. `None` (trials at
    `SEARCH_SEED`, none kept) with workers, which share trials across processes, and under a
    budget in compute, where the modes get different numbers of trials and so different
    optimism in a best-of-K seed.
    """
    if not seeds or coordinator is not None or unit == "compute":
        return None
    return int(list(seeds)[0])


def encoder_trains(mode: str) -> bool:
    """Whether a mode's encoder trains (every mode but fe; a block mode's does)."""
    record = mode_record(mode)
    return record is None or record.encoder_trains


def parse_spaces(texts: Sequence[str], modes: Sequence[str]) -> Dict[str, Tuple[str, ...]]:
    """`--space ft="TUNE_LR=1e-5:1e-4:log TUNE_EPOCHS=2:4"` per mode (each checked now)."""
    spaces: Dict[str, Tuple[str, ...]] = {}
    for text in texts:
        mode, equals, specs = text.partition("=")
        mode = mode.strip()
        if not equals or not specs.split():
            raise ConfigurationError(
                f'--space {text!r}: expected MODE="NAME=low:high[:log] ...", e.g. '
                '--space ft="TUNE_LR=1e-5:1e-4:log TUNE_EPOCHS=2:4".'
            )
        if mode not in modes:
            raise ConfigurationError(
                f"--space {mode}: {mode} is not among --modes ({' '.join(modes)})."
            )
        if mode in spaces:
            raise ConfigurationError(f"--space {mode} is given twice.")
        for spec in specs.split():
            try:
                SearchParam.parse(spec)
            except ConfigurationError as error:
                raise ConfigurationError(f"--space {mode}: {error}") from None
        spaces[mode] = tuple(specs.split())
    return spaces


def space_texts(
    mode: str, family: str, spaces: Optional[Dict[str, Tuple[str, ...]]] = None
) -> Tuple[str, ...]:
    """A mode's space as `--param` texts: `--space`'s, else its `Mode`'s (`space_for(family)`;
    a block mode searches ft's)."""
    given = (spaces or {}).get(mode)
    if given is None:
        record = mode_record(mode)
        given = record.space_for(family) if record is not None else None
    if given is None:
        raise ConfigurationError(
            f"--budget: no search space for mode {mode}; give one with --space."
        )
    return tuple(given)


def searched_spaces(
    spaces: Optional[Dict[str, Tuple[str, ...]]],
    modes: Sequence[str],
    family: str,
    kind: str,
    ext_vars: Dict[str, str],
) -> Dict[str, Tuple[str, ...]]:
    """
    `spaces` (the `--space` ones) with fe's default space widened by the frozen network
    (`FE_HEAD_SPACE`) where a light head applies: a transformer encoder (`family` bert), a task
    `kind` other than tagging, fe among `modes`, no `--space fe` and no `--ext-var TUNE_FE_HEAD`
    (which fixes the network for every trial).
    """
    spaces = dict(spaces or {})
    name = FE_HEAD_SPACE.partition("=")[0]
    if "fe" in modes and "fe" not in spaces and family == "bert" and kind != "tagging":
        if name not in ext_vars:
            spaces["fe"] = SPACES["fe"] + (FE_HEAD_SPACE,)
    return spaces


def mode_space(
    mode: str, family: str, spaces: Optional[Dict[str, Tuple[str, ...]]] = None
) -> List[SearchParam]:
    """The searched parameters of a mode (`space_texts`, parsed)."""
    return [SearchParam.parse(spec) for spec in space_texts(mode, family, spaces)]


def check_budget_options(
    budget: int,
    modes: Sequence[str],
    family: str,
    ext_vars: Dict[str, str],
    spaces: Optional[Dict[str, Tuple[str, ...]]],
) -> None:
    """Refuses a budget below 1 and an `--ext-var` that fixes a variable some mode searches."""
    if not isinstance(budget, int) or budget < 1:
        raise ConfigurationError(
            f"--budget {budget}: give the number of search trials per mode, at least 1."
        )
    for mode in modes:
        for param in mode_space(mode, family, spaces):
            if param.name in ext_vars:
                raise ConfigurationError(
                    f"--ext-var {param.name}: --budget searches {param.name} for {mode} "
                    "(each mode over the same number of trials); leave it out, or set the "
                    f'range with --space {mode}="...".'
                )


def check_spaces(
    configs: Dict[str, Path],
    family: str,
    ext_vars: Dict[str, str],
    overrides: Optional[str],
    spaces: Optional[Dict[str, Tuple[str, ...]]],
) -> None:
    """
    Each mode's space against its config (mode -> config), with the check its search makes when
    its trials start (`search.check_config`: no variable twice, every value it can draw taken
    by the config, every variable read), for every mode before the plan and the first trial:
    `--plan-only` refuses what the trials would.
    """
    variables = {**ext_vars, SEED_EXT_VAR: str(SEARCH_SEED)}
    for mode, config in configs.items():
        option = f"--space {mode}" if mode in (spaces or {}) else f"--budget ({mode}'s space)"
        check_config(config, mode_space(mode, family, spaces), variables, overrides, option)


def _leaves(value: Any, prefix: str = "") -> Dict[str, Any]:
    if isinstance(value, dict):
        found: Dict[str, Any] = {}
        for key, item in value.items():
            found.update(_leaves(item, f"{prefix}.{key}" if prefix else str(key)))
        return found
    if isinstance(value, list):
        found = {}
        for index, item in enumerate(value):
            found.update(_leaves(item, f"{prefix}.{index}"))
        return found
    return {prefix: value}


def default_setting(
    config: Path,
    params: Sequence[SearchParam],
    ext_vars: Dict[str, str],
    overrides: Optional[str] = None,
) -> Tuple[Optional[Dict[str, Any]], List[str]]:
    """
    The config's own values of the searched variables, as Optuna params, and notes on what
    could not be used. A variable's value is read where it lands in the rendered config: the
    places that change when it is set to one of its `examples()` (the other one where the first
    is the default) hold, when it is unset, the default. `None` when some default could not be
    read or lies outside its range.
    """

    def render(variables: Dict[str, str]) -> Dict[str, Any]:
        return _leaves(_load_params(config, variables, overrides).as_dict(quiet=True))

    rendered = render(ext_vars)
    setting: Dict[str, Any] = {}
    notes: List[str] = []
    for param in params:
        if param.choices is not None and param.name not in ext_vars:
            # A choice such as the frozen network changes the config's shape: its default is
            # the choice that renders as the variable unset does.
            same = [c for c in param.choices if render({**ext_vars, param.name: c}) == rendered]
            if len(same) == 1:
                setting[param.name] = same[0]
                continue
            if not same:
                notes.append(
                    f"{param.name}: the config's own value is none of {', '.join(param.choices)} "
                    "(the space leaves it out), so its recipe is not one of the trials"
                )
                return None, notes
        places: List[str] = []
        for value in param.examples():
            changed = render({**ext_vars, param.name: value})
            places = [key for key in rendered if rendered.get(key) != changed.get(key)]
            if places:
                break
        values = {json_value for json_value in (rendered.get(key) for key in places)}
        if len(values) != 1 or not isinstance(next(iter(values)), (int, float, str)):
            notes.append(f"{param.name}: its default could not be read off the config")
            return None, notes
        default = next(iter(values))
        try:
            setting[param.name] = param.value(str(default), f"the default of {config.name}")
        except ConfigurationError as error:
            notes.append(f"not enqueued: {error}")
            return None, notes
    return setting, notes


def budget_pruner(kind: str = "median") -> Any:
    """The pruner of a budget search (`PRUNERS` says it in budget.json): the median pruner by
    default, successive halving with `--pruner halving`."""
    import optuna

    if kind not in PRUNERS:
        raise ConfigurationError(f"--pruner {kind!r}: expected one of {', '.join(PRUNERS)}.")
    if kind == "halving":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=HALVING_MIN_EPOCHS,
            reduction_factor=HALVING_FACTOR,
            min_early_stopping_rate=0,
        )
    return optuna.pruners.MedianPruner(
        n_startup_trials=PRUNER_STARTUP_TRIALS, n_warmup_steps=PRUNER_WARMUP_EPOCHS
    )


def trial_seeded_sampler(seed: int) -> Any:
    """
    TPE whose draws for a trial come from `TPESampler(seed=seed + k)`, k the study's trials
    numbered before it that the sampler draws (those enqueued with values, such as the config's
    own recipe, left out): a trial's setting depends on its number (and, after TPE's random
    start, on the trials finished before), not on which process asks for it or how many it asked
    for before. So one process and many workers (`budget_workers`, whose trials are numbered
    when enqueued) draw the same settings, the first drawn trial draws what a sampler seeded
    `seed` draws first, and a resumed study goes on to new draws.
    """
    import optuna

    class TrialSeededTPE(optuna.samplers.BaseSampler):
        def __init__(self) -> None:
            self._samplers: Dict[int, Any] = {}

        def _of(self, study: Any, trial: Any) -> Any:
            if trial.number not in self._samplers:
                drawn = sum(
                    1
                    for before in study.get_trials(deepcopy=False)
                    if before.number < trial.number and not before.system_attrs.get("fixed_params")
                )
                self._samplers[trial.number] = optuna.samplers.TPESampler(seed=seed + drawn)
            return self._samplers[trial.number]

        def infer_relative_search_space(self, study: Any, trial: Any) -> Dict[str, Any]:
            return self._of(study, trial).infer_relative_search_space(study, trial)

        def sample_relative(self, study: Any, trial: Any, search_space: Dict) -> Dict[str, Any]:
            return self._of(study, trial).sample_relative(study, trial, search_space)

        def sample_independent(self, study: Any, trial: Any, name: str, distribution) -> Any:
            return self._of(study, trial).sample_independent(study, trial, name, distribution)

        def before_trial(self, study: Any, trial: Any) -> None:
            self._of(study, trial).before_trial(study, trial)

        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            self._of(study, trial).after_trial(study, trial, state, values)
            self._samplers.pop(trial.number, None)

    return TrialSeededTPE()


def keep_pruner(study: Any, pruner: str, where: str) -> None:
    """Refuses a study searched with another `--pruner` (a study that recorded none was
    searched with the median pruner; `where` names it in the message), and records a pruner
    other than the median on a study that has none."""
    pruned_by = study.user_attrs.get("budget_pruner", "median")
    if pruned_by != pruner:
        raise ConfigurationError(
            f"--pruner {pruner}: {where} was searched with --pruner {pruned_by}; its trials were "
            f"stopped by another rule. Give --pruner {pruned_by}, or another --results-dir."
        )
    if "budget_pruner" not in study.user_attrs and pruner != "median":
        study.set_user_attr("budget_pruner", pruner)


def counted_trials(study: Any) -> List[Any]:
    """The study's finished trials that count against its budget (`_finished`'s)."""
    import optuna

    states = (
        optuna.trial.TrialState.COMPLETE,
        optuna.trial.TrialState.PRUNED,
        optuna.trial.TrialState.FAIL,
    )
    return [
        trial for trial in study.get_trials(deepcopy=False, states=states) if not interrupted(trial)
    ]


def _finished(study: Any, trials: Optional[Sequence[Any]] = None) -> Dict[str, int]:
    """The finished trials by state: of the study, or of `trials` (a workers' study's counted
    ones, `budget_workers.counted_trials`). A trial that Ctrl-C or SIGTERM stopped did not
    finish: it is not counted, and a resumed search runs its setting again."""
    import optuna

    counted = {"complete": 0, "pruned": 0, "failed": 0}
    names = {
        optuna.trial.TrialState.COMPLETE: "complete",
        optuna.trial.TrialState.PRUNED: "pruned",
        optuna.trial.TrialState.FAIL: "failed",
    }
    for trial in study.get_trials(deepcopy=False) if trials is None else trials:
        if trial.state in names and not interrupted(trial):
            counted[names[trial.state]] += 1
    return counted


def _reclaim_dead_trials(
    study: Any, storage: str, keep_checkpoints: bool, keep: Container[int] = ()
) -> int:
    """
    Marks the study's running trials failed and interrupted, as if Ctrl-C had stopped them, and
    drops their folders' weights; returns how many. Only for the one-process search, which
    holds the results folder's lock: no other process can be training them, so each was left by
    a process that was killed (`kill -9`, a crash). Their settings then run again first. The
    trials numbered in `keep` stay running: the search trains them on (`trial_resume`).
    """
    import optuna

    running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    running = [trial for trial in running if trial.number not in keep]
    if not running:
        return 0
    rdb = optuna.storages.RDBStorage(storage)
    for trial in running:
        trial_id = storage_trial_id(trial)
        rdb.set_trial_user_attr(trial_id, INTERRUPTED_ATTR, True)
        rdb.set_trial_state_values(trial_id, state=optuna.trial.TrialState.FAIL)
        run_dir = trial.user_attrs.get("run_dir")
        if run_dir and Path(run_dir).is_dir() and not keep_checkpoints:
            tidy_run_dir(Path(run_dir), drop_weights=True)
    return len(running)


def _load_study(storage: str, name: str) -> Any:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        return optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        return None


def _trial_costs(
    study: Any,
) -> Tuple[float, Optional[Tuple[float, float]], Optional[Tuple[float, float]]]:
    """Seconds of the finished trials' epochs, their encoder passes (`reporting.costs`), and
    their passes had the pruned ones trained to the end (`costs.passes_to_the_end`)."""
    import optuna

    from allennlp_tune.reporting.costs import encoder_passes, passes_to_the_end

    seconds = 0.0
    spent = [0.0, 0.0]
    full = [0.0, 0.0]
    counted = False
    done = (
        optuna.trial.TrialState.COMPLETE,
        optuna.trial.TrialState.PRUNED,
        optuna.trial.TrialState.FAIL,
    )
    for trial in study.get_trials(deepcopy=False, states=done):
        run_dir = trial.user_attrs.get("run_dir")
        if not run_dir or not (Path(run_dir) / RUN_INFO_NAME).is_file():
            continue
        run = load_run(Path(run_dir))
        epochs = (run.cost or {}).get("epoch_seconds")
        if isinstance(epochs, list):
            seconds += sum(value for value in epochs if isinstance(value, (int, float)))
        passes = encoder_passes(run)
        if passes is None:
            continue
        counted = True
        pruned = trial.state == optuna.trial.TrialState.PRUNED
        whole = (passes_to_the_end(run) if pruned else None) or passes
        for total, add in ((spent, passes), (full, whole)):
            total[0] += add[0]
            total[1] += add[1]
    if not counted:
        return seconds, None, None
    return seconds, (spent[0], spent[1]), (full[0], full[1])


def mode_result(
    mode: str,
    study: Any,
    name: str,
    config: Path,
    space: List[str],
    start: Optional[Dict[str, Any]],
    notes: List[str],
    finished: Dict[str, int],
    done: int,
    search_dir: Path,
) -> ModeSearch:
    """A mode's `ModeSearch` from its finished study (`finished`: its counted trials by state;
    `done`: how many had finished before this process searched)."""
    if not finished["complete"]:
        raise ConfigurationError(
            f"--budget: no trial of {mode} completed ({finished}); see the logs in "
            f"{search_dir / name}/trial_*/out.log."
        )
    best = study.best_trial
    setting = best.user_attrs.get("ext_vars") or {
        key: repr(value) if isinstance(value, float) else str(value)
        for key, value in best.params.items()
    }
    seconds, passes, full_passes = _trial_costs(study)
    import optuna

    return ModeSearch(
        start_passes=_start_passes(study, start),
        trial_values=trial_values(study),
        higher_is_better=study.direction == optuna.study.StudyDirection.MAXIMIZE,
        mode=mode,
        study=name,
        config=str(config),
        space=space,
        start=start,
        trials=finished,
        trained_now=max(0, sum(finished.values()) - done),
        best_trial=best.number,
        best_value=float(best.value),
        metric=str(study.user_attrs.get("metric")),
        setting={key: str(value) for key, value in setting.items()},
        seconds=seconds,
        passes=passes,
        full_passes=full_passes,
        notes=notes,
    )


def _start_passes(study: Any, start: Optional[Dict[str, Any]]) -> Optional[Tuple[float, float]]:
    """`ModeSearch.start_passes`: the first counted trial with the start's params."""
    from allennlp_tune.reporting.costs import passes_to_the_end

    if not start:
        return None
    for trial in sorted(counted_trials(study), key=lambda trial: trial.number):
        run_dir = trial.user_attrs.get("run_dir")
        if trial.params != start or not run_dir or not (Path(run_dir) / RUN_INFO_NAME).is_file():
            continue
        return passes_to_the_end(load_run(Path(run_dir)))
    return None


def trial_values(study: Any) -> List[float]:
    """The study's counted trials' dev scores, in trial order: a complete trial's value, a
    pruned one's best epoch (its intermediate values) before it was stopped, a lower bound of
    what it would have reached; a failed trial, or one without a finite score, is left out."""
    import optuna

    higher = study.direction == optuna.study.StudyDirection.MAXIMIZE
    values = []
    for trial in sorted(counted_trials(study), key=lambda trial: trial.number):
        if trial.state == optuna.trial.TrialState.COMPLETE and trial.value is not None:
            value = float(trial.value)
        elif trial.state == optuna.trial.TrialState.PRUNED and trial.intermediate_values:
            epochs = list(trial.intermediate_values.values())
            value = float(max(epochs) if higher else min(epochs))
        else:
            continue
        if math.isfinite(value):
            values.append(value)
    return values


def budget_record(
    task: str,
    encoder: str,
    budget: int,
    searches: Sequence[ModeSearch],
    compute: Optional["ComputeBudget"] = None,  # noqa: F821  (budget_compute's)
    pruner: str = "median",
    search_seed: int = SEARCH_SEED,
) -> Dict[str, Any]:
    """What `budget.json` holds (tune-report's table of the searches reads it): `unit` is
    `trials`, or `compute` with the `compute_budget` each mode's search had; `search_seed` the
    trials' seed."""

    def finite(value: float) -> Optional[float]:
        return value if math.isfinite(value) else None

    modes = []
    for search in searches:
        record = asdict(search)
        record["best_value"] = finite(search.best_value)
        for key in ("passes", "full_passes", "start_passes"):
            value = getattr(search, key)
            record[key] = list(value) if value is not None else None
        modes.append(record)
    return {
        "task": task,
        "encoder": encoder,
        "budget": budget,
        "search_dir": BUDGET_SEARCH_DIR,
        "search_seed": search_seed,
        "pruner": PRUNERS[pruner],
        "unit": "trials" if compute is None else "compute",
        "compute_budget": compute.record() if compute is not None else None,
        "modes": modes,
    }


def _print_bests(searches: Dict[str, ModeSearch], budget: int, tool: str) -> None:
    from allennlp_tune.reporting.costs import format_params

    for search in searches.values():
        said = " ".join(f"{key}={value}" for key, value in sorted(search.setting.items()))
        trials = ", ".join(f"{count} {state}" for state, count in search.trials.items() if count)
        print(
            f"{tool}: {search.mode}: best of {sum(search.trials.values())} trials ({trials}): "
            f"trial {search.best_trial}, {search.metric} {search.best_value:.4g}, {said}"
            + (
                f"; {format_params(search.compute)} encoder forward passes spent"
                if search.compute is not None
                else ""
            ),
            file=sys.stderr,
        )
