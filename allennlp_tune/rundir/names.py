"""
Run names and the files of a run directory: what a config stem or a folder name says about a
run (task, encoder, mode, variant, seed), and the names of the files that AllenNLP, tune-grid
and tune-search leave in it.

task is any `[a-z0-9_]+` name (the paper's are `TASKS`; `tune-compare` names a task of one's
own), mode one of `RUN_MODES` (`allennlp_tune.modes`: `fe` feature extraction, `ft`
fine-tuning, `sf` stack-then-finetune, `bitfit` bias-only fine-tuning, `lora` low-rank adapters)
and encoder any lower-case word without `_` (`elmo`, `bert`, `minilm`); the task is the
shortest prefix that leaves an encoder and a mode after it.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from allennlp_tune.modes import BLOCK_MODE_PATTERN, RUN_MODES

# The paper's task order (Table 2).
TASKS = ("conll2003", "sst2", "mnli", "sick_e", "sick_r", "mrpc", "sts_b")

RUN_INFO_NAME = "tune_run.json"
RUN_LOG_NAME = "tune_train.log"
CONFIG_NAME = "config.json"
METRICS_NAME = "metrics.json"
ARCHIVE_NAME = "model.tar.gz"
# Written by the `tune_cost` callback; tune-grid adds `archive_bytes`.
COST_NAME = "cost.json"
# The best model's dev predictions, written by tune-grid and tune-search (`grid.predict_dev`).
PREDICTIONS_NAME = "dev_predictions.jsonl"
# The same on the test split, written only when asked (`tune-compare --test`,
# `experiments.test_split`), with its record under this key of `tune_run.json`.
TEST_PREDICTIONS_NAME = "test_predictions.jsonl"
TEST_RECORD_KEY = "test"
# A seed run that is a `--budget` search's best trial kept as that seed (`experiments.kept_trial`)
# names the trial's folder under this key of its `tune_run.json`: it was trained once, in the
# search, and its cost is the search's.
KEPT_FROM_TRIAL_KEY = "kept_from_trial"
# The looks of `tune-compare --sequential`, in the results folder (`experiments.rounds`).
SEQUENTIAL_NAME = "sequential.json"
# The searches of `tune-compare --budget`, in the results folder (`experiments.budget`), and the
# folder under it that holds their trials, which tune-report leaves out of the folder's runs.
BUDGET_NAME = "budget.json"
BUDGET_SEARCH_DIR = "search"

# The ext var that every config reads its seeds from; tune-grid, tune-search and the planner
# set it in a training's environment.
SEED_EXT_VAR = "TUNE_SEED"

# Any task name: the shortest `[a-z0-9_]+` prefix followed by an encoder word and a known mode,
# so `sick_e_bert_fe_separate` is sick_e / bert / fe / separate and `my_reviews_minilm_ft` is
# my_reviews / minilm / ft. (tune-compare refuses a task name that would not read back.)
_NAME_PATTERN = re.compile(
    r"^(?P<task>[a-z0-9_]+?)_(?P<encoder>[a-z0-9]+)_(?P<mode>"
    + "|".join(RUN_MODES + (BLOCK_MODE_PATTERN,))
    + r")"
    r"(?:[_\-.](?P<variant>.+))?$"
)
_SEED_NAME = re.compile(r"^(?P<rest>.*?)[_\-.]?seed[_\-]?(?P<seed>\d+)$")
# tune-grid and tune-search move a partial or failed attempt, a complete run that no longer
# matches the command (`--retrain-changed`) or a damaged one (its files are not what it left,
# `runs.DAMAGED`) aside under this name before rerunning it; the report ignores such
# directories (and says how many it ignored).
SUPERSEDED_PATTERN = re.compile(r"\.(incomplete|failed|changed|damaged)-\d{8}T\d{6}")


@dataclass(frozen=True)
class RunName:
    """What a config stem or run directory name says about a run."""

    task: str
    encoder: str
    mode: str
    variant: Optional[str] = None


def parse_run_name(name: str) -> Tuple[Optional[RunName], Optional[int]]:
    """
    Splits `sick_e_bert_ft_bilstm_seed2` into `RunName("sick_e", "bert", "ft", "bilstm")` and
    seed 2. Either part is `None` when the name does not carry it.
    """
    seed = None
    seed_match = _SEED_NAME.match(name)
    if seed_match:
        name, seed = seed_match.group("rest"), int(seed_match.group("seed"))
    match = _NAME_PATTERN.match(name)
    if match is None:
        return None, seed
    return RunName(match["task"], match["encoder"], match["mode"], match["variant"]), seed


def config_stem(config: Path) -> str:
    """`training_config/sick_e_bert_ft.jsonnet` -> `sick_e_bert_ft`."""
    name = Path(config).name
    for suffix in (".jsonnet", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name
