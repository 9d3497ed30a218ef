"""
What a grid is given, checked before anything is written: the configs (paths and globs, each
once, with unique stems, as each stem names a folder of the results directory), the `--ext-var`
assignments its training children get as environment variables, and the results folder.
"""

import glob
from pathlib import Path
from typing import Dict, Iterable, List

from allennlp.common.checks import ConfigurationError

from allennlp_tune.rundir import SEED_EXT_VAR, config_stem
from allennlp_tune.rundir.folders import folder_problem


def expand_configs(patterns: Iterable[str]) -> List[Path]:
    """Config paths from paths and globs, in the order given, each once; stems must be unique."""
    configs: List[Path] = []
    for pattern in patterns:
        if glob.has_magic(pattern):
            matches = sorted(Path(match) for match in glob.glob(pattern, recursive=True))
            if not matches:
                raise ConfigurationError(f"The config pattern {pattern!r} matches no file.")
        else:
            matches = [Path(pattern)]
            if not matches[0].is_file():
                raise ConfigurationError(f"Config file {pattern!r} does not exist.")
        for match in matches:
            if match.resolve() not in {config.resolve() for config in configs}:
                configs.append(match)
    by_stem: Dict[str, Path] = {}
    for config in configs:
        stem = config_stem(config)
        if stem in by_stem:
            raise ConfigurationError(
                f"{by_stem[stem]} and {config} would both write to <results-dir>/{stem}: "
                "run them into different results directories."
            )
        by_stem[stem] = config
    return configs


def parse_ext_vars(assignments: Iterable[str]) -> Dict[str, str]:
    """`["TUNE_LR=1e-3"]` -> `{"TUNE_LR": "1e-3"}`, with an error naming a malformed one."""
    ext_vars = {}
    for assignment in assignments:
        key, equals, value = assignment.partition("=")
        if not equals or not key.isidentifier():
            raise ConfigurationError(
                f"--ext-var {assignment!r}: expected KEY=VALUE with KEY a variable name, "
                "e.g. --ext-var TUNE_LR=2e-5"
            )
        if key == SEED_EXT_VAR:
            raise ConfigurationError(f"--ext-var {key}: the seed is set by --seeds (--seed).")
        ext_vars[key] = value
    return ext_vars


def check_results_dir(results_dir: Path) -> None:
    """Refuses a results folder that is a file, lies under one, or cannot be created or written
    (a read-only or virtual filesystem such as /proc), before anything is written."""
    problem = folder_problem(results_dir)
    if problem is not None:
        raise ConfigurationError(f"--results-dir {results_dir} {problem}")
