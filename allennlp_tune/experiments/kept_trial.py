"""
The search's best trial kept as its setting's first seed (`tune-compare --budget K` in one
process): the trials train with the first reported seed, so the best trial, where it trained to
its end, is the very run its setting's first seed would be, and training that seed again would
pay for a run the decision already has.

A mode's best trial `RESULTS_DIR/search/<study>/trial_<n>` becomes `RESULTS_DIR/<stem>/seed_<s>`
(`keep_best_trial`) when

- that seed's folder does not exist (nothing a user or an earlier command left is replaced;
  one that is this very trial, kept by an earlier command, counts as kept);
- the trial finished "ok" (trained to its end: not pruned, not failed) and is intact
  (`rundir.is_complete`: its outputs match their digests);
- it trained with seed `s` and recorded its fingerprint (what data and packages it trained
  from, `outputs.record_run_outputs`);
- its `config.json`, without the `optuna_pruning` callback the search adds, is the config the
  seed renders now (`changed.render_run_config` at the setting and seed `s`).

The seed's folder then holds a copy of the trial's files (the archive as a hard link where the
filesystem allows: nothing rewrites it in place), its `config.json` the seed's config, and a
`tune_run.json` that is the trial's with the seed's ext vars and `kept_from_trial` (the trial's
folder, relative to the results folder). The trial's fingerprint stays as it was recorded when it
trained, so the seeds' grid, which checks every complete run it reuses against the command
(`changed.find_changed_runs`), refuses the kept seed as changed when its setting, its data or a
package changed since, as it refuses any other run. Where a trial is not kept, the note says why
and the seed trains as usual.
"""

import copy
import os
import shutil
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from allennlp_tune.experiments.budget import BudgetJob, ModeSearch
from allennlp_tune.experiments.changed import render_run_config
from allennlp_tune.experiments.fingerprint import FINGERPRINT_KEY
from allennlp_tune.experiments.grid import _shared_cache
from allennlp_tune.rundir import (
    ARCHIVE_NAME,
    CONFIG_NAME,
    KEPT_FROM_TRIAL_KEY,
    OK,
    RUN_INFO_NAME,
    SEED_EXT_VAR,
    config_stem,
    is_complete,
    parse_run_name,
    read_json,
    write_json,
)

SEARCH_CALLBACK = "optuna_pruning"


def without_search_callback(config: Dict[str, Any]) -> Dict[str, Any]:
    """A trial's `config.json` as its run would be outside the search: without the trainer's
    `optuna_pruning` callback (and without `callbacks` where that was the only one)."""
    config = copy.deepcopy(config)
    trainer = config.get("trainer")
    if isinstance(trainer, dict) and isinstance(trainer.get("callbacks"), list):
        kept = [
            callback
            for callback in trainer["callbacks"]
            if not (isinstance(callback, dict) and callback.get("type") == SEARCH_CALLBACK)
        ]
        if kept:
            trainer["callbacks"] = kept
        else:
            del trainer["callbacks"]
    return config


def keep_best_trial(job: BudgetJob, search: ModeSearch) -> Tuple[Optional[Path], str]:
    """
    The mode's best trial of `job`'s search kept as its setting's seed `job.search_seed`
    (module docstring): `(the seed's folder, what was done)`, or `(None, why not)`.
    """
    seed, results_dir, overrides = job.search_seed, job.results_dir, job.overrides
    config = Path(search.config)
    target = Path(results_dir) / config_stem(config) / f"seed_{seed}"
    trial_dir = job.search_dir / search.study / f"trial_{search.best_trial}"
    trial = f"trial {search.best_trial}"
    relative = os.path.relpath(trial_dir, results_dir)
    if target.exists():
        before = read_json(target / RUN_INFO_NAME) or {}
        if before.get(KEPT_FROM_TRIAL_KEY) == relative:
            return target, f"{trial} is seed {seed} already (kept by an earlier command)"
        return None, f"seed {seed} exists already; {trial} is not kept as it"
    info = read_json(trial_dir / RUN_INFO_NAME) or {}
    if info.get("status") != OK or not is_complete(trial_dir):
        return None, f"{trial} did not finish intact in {trial_dir}; seed {seed} trains"
    if info.get("seed") != seed:
        return None, f"{trial} trained with seed {info.get('seed')}, not {seed}; seed {seed} trains"
    if not isinstance(info.get(FINGERPRINT_KEY), dict):
        return None, f"{trial} recorded no fingerprint; seed {seed} trains"
    # What the seed trains with: the command's ext vars and the mode's best setting.
    variables = {**job.ext_vars, **search.setting, SEED_EXT_VAR: str(seed)}
    # Rendered as the seeds' grid renders it for its changed-runs check (its shared cache, or
    # none where the user chose a cache directory).
    now = render_run_config(config, variables, overrides, _shared_cache(results_dir, variables))
    trained = without_search_callback(read_json(trial_dir / CONFIG_NAME) or {})
    if trained != now:
        return None, f"{trial} trained another config than seed {seed} would; seed {seed} trains"
    # The seed's name and ext vars, as the grid records a seed (the trial's variant names its
    # study and number, which would put it in a cell of its own in the report).
    name, _ = parse_run_name(config_stem(config))
    kept = dict(info, ext_vars=variables, variant=name.variant if name else None)
    kept[KEPT_FROM_TRIAL_KEY] = relative
    # Written as `seed_<s>.tmp`, then renamed: a kill leaves no half-made seed.
    partial = target.with_name(target.name + ".tmp")
    if partial.exists():
        shutil.rmtree(partial)
    _copy_run(trial_dir, partial)
    write_json(partial / CONFIG_NAME, now)
    write_json(partial / RUN_INFO_NAME, kept)
    os.replace(partial, target)
    return target, f"{trial} (trained to its end with seed {seed}) kept as seed {seed}"


def _copy_run(source: Path, partial: Path) -> None:
    """The trial's files into `partial`: the archive hard-linked where the filesystem allows
    (nothing rewrites it in place), the rest copied."""

    def link_or_copy(src: str, dst: str) -> Any:
        if Path(src).name == ARCHIVE_NAME:
            try:
                return os.link(src, dst)
            except OSError:
                pass
        return shutil.copy2(src, dst)

    shutil.copytree(source, partial, copy_function=link_or_copy)
