"""
Which complete runs of a grid are no longer the runs the command would train now.

A complete run is reused only while its `config.json` equals the config rendered now (every ext
var and override), every local file or folder the config names has the content it had, and the
packages that compute the result have the versions they had (`fingerprint.differences`). Before
anything is trained, a grid with such a run refuses to start and names what changed, per run
(`changed_runs_message`), unless it was asked to move those runs aside and train them again.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_tune.experiments.fingerprint import differences, fingerprint, predates_fingerprints
from allennlp_tune.rundir import (
    CONFIG_NAME,
    RUN_INFO_NAME,
    SEED_EXT_VAR,
    config_stem,
    is_complete,
    read_json,
)

# How many differences the refusal names per run.
MAX_NAMED_DIFFERENCES = 6


def render_run_config(
    config: Path,
    run_ext_vars: Mapping[str, str],
    overrides: Optional[str],
    shared_cache: Optional[Path] = None,
) -> Dict[str, Any]:
    """The config as this grid's training child of the run renders it (environment, ext vars,
    the shared feature cache, overrides); a `ConfigurationError` naming the config otherwise."""
    from allennlp_tune.modules.feature_cache import CACHE_DIR_ENV
    from allennlp_tune.planning.plan import render_config

    variables = dict(run_ext_vars)
    if shared_cache is not None:
        variables.setdefault(CACHE_DIR_ENV, str(shared_cache))
    try:
        return render_config(config, variables, overrides)
    except Exception as error:  # Jsonnet's RuntimeError, a malformed --overrides
        lines = str(error).strip().splitlines()
        first = lines[0][:300] if lines else type(error).__name__
        raise ConfigurationError(
            f"{config} does not render with these ext vars and overrides: {first}"
        ) from None


@dataclass
class ChangedRun:
    """A complete run that the command would now train differently, and what differs."""

    run_dir: Path
    differences: List[str]


def find_changed_runs(
    configs: Sequence[Path],
    seeds: Sequence[int],
    results_dir: Path,
    ext_vars: Optional[Dict[str, str]],
    overrides: Optional[str],
    shared_cache: Optional[Path],
) -> Tuple[List[ChangedRun], List[Path]]:
    """
    The complete runs of `configs` x `seeds` whose config, files or packages differ from what
    the command would use now (`fingerprint.differences`), and the complete runs that match on
    their config but carry no fingerprint to check their files against.
    """
    changed: List[ChangedRun] = []
    unverified: List[Path] = []
    for config in configs:
        for seed in seeds:
            run_dir = Path(results_dir) / config_stem(config) / f"seed_{seed}"
            if not is_complete(run_dir):
                continue
            trained = read_json(run_dir / CONFIG_NAME)
            info = read_json(run_dir / RUN_INFO_NAME) or {}
            run_ext_vars = {**(ext_vars or {}), SEED_EXT_VAR: str(seed)}
            now = render_run_config(config, run_ext_vars, overrides, shared_cache)
            if trained is None:
                changed.append(ChangedRun(run_dir, [f"it has no readable {CONFIG_NAME}"]))
                continue
            old = predates_fingerprints(info)
            now_fingerprint = {} if old else fingerprint(now)
            found = differences(trained, info, now, now_fingerprint, run_ext_vars)
            if found:
                changed.append(ChangedRun(run_dir, found))
            elif old:
                unverified.append(run_dir)
    return changed, unverified


def changed_runs_message(changed: Sequence[ChangedRun], results_dir: Path) -> str:
    """The refusal: each changed run and what differs, then the two ways on."""
    lines = [
        f"nothing was trained: {len(changed)} complete run(s) in {results_dir} were trained "
        "with something other than what this command uses now, and reusing them would mix two "
        "experiments in one verdict:"
    ]
    for run in changed:
        shown = run.differences[:MAX_NAMED_DIFFERENCES]
        more = len(run.differences) - len(shown)
        named = "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
        lines.append(f"  {run.run_dir.relative_to(results_dir)}: {named}")
    lines.append(
        "Give another --results-dir to keep the old runs apart, or add --retrain-changed to "
        "move these runs aside (to seed_<k>.changed-<time>, nothing deleted) and train them "
        "again."
    )
    return "\n".join(lines)
