"""
What tune-grid and tune-search delete from a finished run directory, and nothing else.

AllenNLP leaves in every serialization directory the weights three times over: `best.th`, the
last epoch's checkpoint (`model_state_e<epoch>_b<batch>.th` with the optimizer's
`training_state_e<epoch>_b<batch>.th`, or the older `*_epoch_<n>.th` names) and `model.tar.gz`.
A frozen-encoder run also keeps its feature cache (`feature_cache/`, the default location).
Over a grid that adds up to many times the size of the archives (bench/README.md has figures).
The checkpoints exist to resume an interrupted training, which
neither tool does (an interrupted run is moved aside and trained again), and `best.th` holds
the weights that are in the archive, so once a run has ended they are only disk.

`tidy_run_dir` removes exactly those: the checkpoint files, `best.th` when the archive exists
(or when the run's weights are not wanted, a pruned trial), and the `feature_cache` folder
inside the run directory. A cache elsewhere (`TUNE_FEATURE_CACHE_DIR`, `feature_cache.directory`)
is shared on purpose and never touched; nor is any other file. `--keep-checkpoints` on either
command turns this off.
"""

import re
import shutil
from pathlib import Path
from typing import Dict, Union

from allennlp_tune.rundir.names import ARCHIVE_NAME

CHECKPOINT_PATTERN = re.compile(r"^(model_state|training_state)_(e\d+_b\d+|epoch_\d+(\.\d+)?)\.th$")
BEST_WEIGHTS_NAME = "best.th"
FEATURE_CACHE_NAME = "feature_cache"


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())
    return path.stat().st_size


def tidy_run_dir(run_dir: Path, drop_weights: bool = False) -> Dict[str, Union[list, float]]:
    """
    Deletes the checkpoints, `best.th` (when `model.tar.gz` is there, or `drop_weights`) and
    `feature_cache/` of a finished run in `run_dir`. Returns what it removed, for the run's
    `tune_run.json`: `{"removed": [names], "freed_mb": megabytes}`.
    """
    run_dir = Path(run_dir)
    doomed = [path for path in sorted(run_dir.glob("*.th")) if CHECKPOINT_PATTERN.match(path.name)]
    best = run_dir / BEST_WEIGHTS_NAME
    if best.is_file() and (drop_weights or (run_dir / ARCHIVE_NAME).is_file()):
        doomed.append(best)
    cache = run_dir / FEATURE_CACHE_NAME
    if cache.is_dir() and not cache.is_symlink():
        doomed.append(cache)
    freed = 0
    for path in doomed:
        freed += _size(path)
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    return {"removed": [path.name for path in doomed], "freed_mb": round(freed / 2**20, 1)}
