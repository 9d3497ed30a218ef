"""
`Comparison`: one `tune-compare`, as one frozen, checked object; also the Python API.

`allennlp tune-compare` builds one from its command line (`Comparison.from_args`) and runs it;
a notebook or a script builds one directly:

```python
from allennlp_tune import Comparison

comparison = Comparison("reviews/task.jsonnet", encoder="bert-base-uncased",
                        modes=("fe", "ft"), seeds=(1, 2, 3), results_dir="runs/reviews")
report = comparison.run()          # trains what is missing, then reads the results folder
report.rows                         # one row per mode, mean and spread over seeds
report.comparisons                  # the paired verdicts (ft vs fe, ...)
```

Everything the command line can say, the object holds (`--budget K` is `budget=K`, `--space
ft=...` is `spaces={"ft": "..."}`, `--sequential --looks 3 5` is `sequential=True, looks=(3,
5)`, `--coordinator URL` is `coordinator=URL`), and it is checked once, when it is built, with
the command's own messages: an option that cannot work raises `ConfigurationError` before any
file is written. `run()` trains as the command does (resumable: a second `run()` trains only
what is missing) and returns the `Report` that `tune-report` prints (`render_markdown(report)`).
"""

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from allennlp.common.checks import ConfigurationError

from allennlp_tune.modes import DEFAULT_MODES

if TYPE_CHECKING:  # pragma: no cover
    from allennlp_tune.experiments.grid import GridResult
    from allennlp_tune.reporting.report import Report

DEFAULT_SEEDS = (1, 2, 3)
# The fields that `run_compare` takes as they are, under the same names.
_RUN_COMPARE_OPTIONS = (
    "encoder_label", "cuda_device", "margin", "budget", "budget_unit", "ext_vars", "overrides",
    "keep_failed", "keep_checkpoints", "progress", "plan", "plan_only", "calibrate",
    "retrain_changed",
)  # fmt: skip


@dataclass(frozen=True)
class Comparison:
    """
    One comparison of modes of one encoder on one task (module docstring).

    # Parameters

    task : `str`
        A shipped task name (`sst2`, `sick_e`, ...) or the path of a task file.
    encoder : `str`
        `elmo`, or a transformers model name or folder.
    modes : `Sequence[str]`, optional (default = `("fe", "ft")`)
    seeds : `Sequence[int]`, optional (default = `(1, 2, 3)`; with `sequential`, 1 to its cap)
    results_dir : `Union[str, Path]`, optional (default = `"runs/compare"`)
    ext_vars : `Mapping[str, str]`, optional
        As `--ext-var NAME=VALUE`; checked against what the task's configs read.
    overrides : `str`, optional
        JSON overrides for every run (`--overrides`).
    encoder_label, cuda_device : optional
        `--encoder-label`, `--cuda-device`.
    sequential : `bool`, optional (default = `False`)
        Seeds in rounds, stopping at the looks (`looks`, default 3 5 7) once a verdict is in,
        or once the chance that the seed cap decides is under `futility` (default 0.1; 0: never).
    margin : `float`, optional
        Points within which two modes are called equivalent.
    budget : `int`, optional
        Search trials per mode before its seeds (`--budget K`); `budget_unit`, `pruner` and
        `spaces` (mode -> tune-search `--param` texts, or `--space`'s `MODE=SPACE` texts) as
        the command's options.
    coordinator : `str`, optional
        An Optuna RDB URL that workers share (`--coordinator`), with `heartbeat` and `grace`.
    keep_failed, keep_checkpoints, progress, plan, plan_only, calibrate, retrain_changed
        As the command's `--keep-failed`, `--keep-checkpoints`, `--no-progress`, `--no-plan`,
        `--plan-only`, `--no-calibrate`, `--retrain-changed`.

    ```python
    Comparison("sst2", encoder="bert-base-uncased", budget=4, sequential=True).run()
    ```
    """

    task: str
    encoder: str
    modes: Sequence[str] = DEFAULT_MODES
    seeds: Optional[Sequence[int]] = None
    results_dir: Union[str, Path] = "runs/compare"
    ext_vars: Mapping[str, str] = field(default_factory=dict)
    overrides: Optional[str] = None
    encoder_label: Optional[str] = None
    cuda_device: Optional[int] = None
    sequential: bool = False
    looks: Optional[Sequence[int]] = None
    futility: Optional[float] = None
    margin: Optional[float] = None
    budget: Optional[int] = None
    budget_unit: str = "trials"
    pruner: str = "median"
    spaces: Union[Mapping[str, str], Sequence[str], None] = None
    coordinator: Optional[str] = None
    heartbeat: Optional[int] = None
    grace: Optional[int] = None
    keep_failed: bool = False
    keep_checkpoints: bool = False
    progress: bool = True
    plan: bool = True
    plan_only: bool = False
    calibrate: bool = True
    retrain_changed: bool = False

    def __post_init__(self) -> None:
        # Checked in the command's order, with its messages; frozen: set once, here.
        def settle(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        settle("modes", tuple(self.modes))
        settle("results_dir", Path(self.results_dir))
        settle("ext_vars", dict(self.ext_vars))
        self._check_ext_vars()
        plan, seeds = self._checked_looks()
        settle("_plan", plan)
        settle("seeds", tuple(seeds))
        if plan is not None and self.coordinator is not None:
            # Workers share a grid fixed when they start; --sequential's rounds would each be
            # a grid of their own, chosen from the last round's looks.
            raise ConfigurationError(
                "--sequential and --coordinator do not go together: workers share one grid "
                "fixed when they start (its marker, .tune_workers.json, refuses any other), "
                "while --sequential chooses each round's seed runs from the looks after the "
                "last round, so every round would be another grid on the same folder. Give "
                "--seeds instead of --sequential to share the runs, or run --sequential in one "
                "process."
            )
        settle("_spaces", self._checked_spaces())
        from allennlp_tune.experiments.workers import coordinator_of

        settle("_workers", coordinator_of(self.coordinator, self.heartbeat, self.grace))

    # ---- the checks ------------------------------------------------------------------------

    def _checked_looks(self):
        """The `SequentialPlan` (None without `sequential`) and the seeds in their order."""
        from allennlp_tune.reporting.futility import DEFAULT_FUTILITY
        from allennlp_tune.reporting.sequential import DEFAULT_LOOKS, SequentialPlan

        if not self.sequential:
            for name in ("looks", "futility"):
                if getattr(self, name) is not None:
                    raise ConfigurationError(f"--{name} needs --sequential.")
            return None, list(self.seeds or DEFAULT_SEEDS)
        try:
            plan = SequentialPlan(looks=tuple(self.looks or DEFAULT_LOOKS))
        except ValueError as error:
            raise ConfigurationError(
                f"--looks {' '.join(map(str, self.looks or ()))}: {error}."
            ) from None
        if self.futility is not None:
            try:  # the plan checks the chance: one rule, the flag's words
                plan = replace(plan, futility=self.futility)
            except ValueError as error:
                raise ConfigurationError(
                    f"--futility {self.futility:g}: {error}; 0 never stops for futility, the "
                    f"default is {DEFAULT_FUTILITY:g}."
                ) from None
        seeds = list(self.seeds or range(1, plan.cap + 1))
        if len(seeds) < plan.cap:
            raise ConfigurationError(
                f"--seeds {' '.join(map(str, seeds))}: --sequential looks up to {plan.cap} seeds "
                f"per mode; list at least {plan.cap} seeds, or leave --seeds out (1 to "
                f"{plan.cap})."
            )
        return plan, seeds

    def _check_ext_vars(self) -> None:
        """The ext vars against what the experiment's and the task's configs read."""
        from allennlp_tune.config_vars import check_ext_vars
        from allennlp_tune.experiments.compare import EXPERIMENT, task_source

        overrides = [self.overrides] if self.overrides else []
        check_ext_vars(self.ext_vars, [EXPERIMENT, task_source(self.task)[0]], overrides)

    def _checked_spaces(self) -> Optional[Dict[str, Tuple[str, ...]]]:
        """Each mode's search space, as --space's texts are read."""
        if not self.spaces:
            return None
        from allennlp_tune.experiments.budget import parse_spaces

        texts = self.spaces
        if isinstance(texts, Mapping):
            texts = [f"{mode}={space}" for mode, space in texts.items()]
        return parse_spaces(list(texts), self.modes)

    # ---- running it ------------------------------------------------------------------------

    def train(self, **seams: Any) -> "GridResult":
        """Trains what the results folder lacks (every stage: search, seeds or rounds) and
        returns what was trained, skipped and failed. `seams` reach `run_grid` (`runner`,
        `predict`), for tests."""
        from allennlp_tune.experiments.compare import run_compare

        # The options run_compare takes under the same names, then the four checked or renamed.
        options = {name: getattr(self, name) for name in _RUN_COMPARE_OPTIONS}
        return run_compare(
            self.task, self.encoder, self.modes, self.seeds, self.results_dir,
            sequential=self._plan, spaces=self._spaces, budget_pruner=self.pruner,
            coordinator=self._workers, **options, **seams,
        )  # fmt: skip

    def report(self, split: str = "validation") -> "Report":
        """The report of the results folder as it is now (what `tune-report` prints)."""
        from allennlp_tune.reporting.report import report_from_dirs

        options = {} if self.margin is None else {"margin": self.margin}
        return report_from_dirs([self.results_dir], split=split, **options)

    def run(self, **seams: Any) -> Optional["Report"]:
        """`train()`, then `report()`; None with `plan_only` (nothing was trained)."""
        self.train(**seams)
        return None if self.plan_only else self.report()

    @classmethod
    def from_args(cls, args: Any, ext_vars: Mapping[str, str]) -> "Comparison":
        """The comparison `allennlp tune-compare` was given (`args`, its parsed command line;
        `ext_vars`, its `--ext-var`s parsed)."""
        # Each field is the option of its name, except these, said the other way round.
        negated = {"progress": "no_progress", "plan": "no_plan", "calibrate": "no_calibrate"}
        named = [f.name for f in fields(cls) if f.name not in ("ext_vars", "spaces", *negated)]
        options = {name: getattr(args, name) for name in named}
        options.update({name: not getattr(args, flag) for name, flag in negated.items()})
        return cls(ext_vars=ext_vars, spaces=args.space or None, **options)
