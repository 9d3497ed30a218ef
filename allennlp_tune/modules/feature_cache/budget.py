"""
The feature cache's disk budget: the checked `feature_cache` parameter, the size of a cache
before it is written, and whether it fits (`check_budget`, for the planner).

# The `feature_cache` parameter

The `tune_transformer`, `tune_transformer_mismatched` and `tune_elmo` embedders take
`feature_cache: {...}` (`{}` for every default; leave it out for no cache), with the keys:

- `directory` (string, default: the environment variable `TUNE_FEATURE_CACHE_DIR`, else
  `<serialization_dir>/feature_cache` under `allennlp train`, else
  `~/.cache/allennlp_tune/features`): the root folder of the entries. Entries are keyed by
  content, so runs and models may share one folder (tune-grid does).
- `memory_mb` (number >= 0, default 256): the in-memory LRU in MiB (entries are held as
  float32, twice their disk size); 0 reads every hit from disk.
- `disk_mb` (number >= 0 or `null`, default `null`): the most MiB the folder may hold, counting
  what it held when this run first wrote to it and what this run writes (allocated blocks, see
  below). `null`: no limit other than `min_free_mb`. 0: nothing is written (the memory LRU
  only).
- `min_free_mb` (number >= 0 or `null`, default `null`): never write an entry that would leave
  less than this many MiB free on the folder's file system. `null`: the default margin,
  `max(2 GiB, 5% of the file system's size)`; 0: write until the disk is full.

# The disk budget

- **No writes past the budget, rather than LRU eviction.** Once an entry would not fit, this run
  writes nothing more; it never deletes. Eviction would churn the store every epoch when the
  data is larger than the budget: in an epoch that visits every entry once, an entry survives
  until its next use only if fewer than a budget's worth of other entries come between, so with
  shuffled epochs and data twice the budget about 1 read in 7 hits (15% in a simulation), and
  each miss costs a write and a deletion besides the computation. No-write keeps the entries
  cached first stable (1 read in 2 hits in that case), deletes nothing, and so never removes an
  entry that a concurrent run sharing the folder is about to read.
- **Cheap accounting.** The folder's size is measured once (one walk, only when `disk_mb` is
  set, at this run's first write) and then increased by what this run writes: no walk per
  write. Sizes are allocated bytes (`st_blocks * 512` of what is there; each new file rounded
  up to the file system's fragment size, each new folder one such block), so the budget bounds
  the disk space used, not only the sum of file sizes. Runs writing to one folder at the same
  time each count only their own writes: together they can exceed `disk_mb` by what the others
  wrote meanwhile (the free-space margin, read from the file system, covers all of them).
- **The free margin** is read (one `statvfs`, a few microseconds) before each write. Its default,
  `max(2 GiB, 5% of the file system)`: 2 GiB keeps room for what a run writes besides the
  cache (a BERT-base run's `best.th`, epoch checkpoints and `model.tar.gz` are about 0.4 GB
  each, plus logs and temporary files), and 5% scales that on large disks where other jobs
  (a grid's other runs, checkpoints of several cells) share the file system and a disk above
  95% full is commonly treated as an alert.
- **Stopping is for the rest of the run**: space freed later is not used (the cached part stays
  what it was when the budget was first hit, so every epoch after the first costs the same).
"""

import math
import os
import shutil
from pathlib import Path
from typing import Any, Dict, Optional, Union

from allennlp.common.checks import ConfigurationError

from allennlp_tune.modules.checks import refuse_unknown_keys
from allennlp_tune.modules.feature_cache.location import CACHE_DIR_ENV, default_cache_directory

CONFIG_KEYS = ("directory", "memory_mb", "disk_mb", "min_free_mb")
MIB = 2**20
# The default free-space margin: max(2 GiB, 5% of the file system); see the module docstring.
DEFAULT_MIN_FREE_BYTES = 2 * 2**30
DEFAULT_MIN_FREE_FRACTION = 0.05
# Measured: the magic, the header length and the JSON header of an entry take 175 bytes for a
# (1, 1, 1) entry, 182 for MiniLM's (7, 13, 384), 188 for (13, 512, 1024) and 194 for
# (99, 99999, 9999); this bounds them (tests/modules/test_feature_cache_budget.py checks it).
ENTRY_HEADER_BYTES = 200
# Allocation granularity assumed where the file system cannot be asked (no `os.statvfs`); it is
# the fragment size of ext4, XFS, btrfs and tmpfs with their defaults.
DEFAULT_BLOCK_BYTES = 4096
# Average bytes per entry file beyond its float16 payload: the header plus, on average, half a
# block of the file system's rounding up (the last block of a file is half empty on average).
ENTRY_OVERHEAD_BYTES = ENTRY_HEADER_BYTES + DEFAULT_BLOCK_BYTES // 2


def default_min_free_bytes(total_bytes: int) -> int:
    """The default free-space margin of a file system of `total_bytes`: max(2 GiB, 5%)."""
    return max(DEFAULT_MIN_FREE_BYTES, int(DEFAULT_MIN_FREE_FRACTION * total_bytes))


def estimated_cache_bytes(
    num_wordpieces: int, num_layers: int, dim: int, num_entries: int = 0
) -> int:
    """
    The disk size of a cache holding `num_wordpieces` wordpieces (summed over its distinct
    sequences, special tokens included) of `num_layers` selected layers of width `dim`: the
    float16 payload `num_wordpieces * num_layers * dim * 2`, plus `ENTRY_OVERHEAD_BYTES`
    (header and average block rounding) per entry when the number of entries is given. For a
    tagger (`tune_transformer_mismatched`) count wordpieces, not words: the cache holds
    wordpiece features. The payload part is exact; the overhead part is an average.
    """
    return (
        int(num_wordpieces) * int(num_layers) * int(dim) * 2
        + int(num_entries) * ENTRY_OVERHEAD_BYTES
    )


def existing_ancestor(path: Path) -> Path:
    """`path` or its nearest existing ancestor (where a file system can be asked about it)."""
    path = path.absolute()
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def directory_bytes(directory: Union[str, Path]) -> int:
    """
    The disk space allocated to the files and folders under `directory` (`st_blocks * 512`,
    or the size where there are no blocks to ask about); 0 when it does not exist. One walk.
    """
    total = 0
    for root, folders, files in os.walk(directory):
        for name in folders + files:
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue  # removed meanwhile (a concurrent run's temporary file)
            blocks = getattr(info, "st_blocks", None)
            total += blocks * 512 if blocks is not None else info.st_size
    return total


def check_config(config: Any, owner: str) -> Dict[str, Any]:
    """The checked `feature_cache` parameter (see the module docstring for its keys)."""
    if not isinstance(config, dict):
        raise ConfigurationError(
            f"{owner}.feature_cache must be an object such as {{}} or "
            f'{{"directory": "/path/to/cache", "memory_mb": 256, "disk_mb": 10000}}, not '
            f"{config!r}."
        )
    refuse_unknown_keys(config, CONFIG_KEYS, f"{owner}.feature_cache")

    def number(key: str, default: Optional[float], meaning: str) -> Optional[float]:
        value = config.get(key, default)
        if value is None and default is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or math.isnan(value)
            or value < 0
        ):
            allowed = "a number of MiB >= 0" + (" or null" if default is None else "")
            raise ConfigurationError(
                f"{owner}.feature_cache.{key} is {value!r}; give {allowed} ({meaning})."
            )
        return value

    return {
        "directory": config.get("directory") or None,
        "memory_mb": number("memory_mb", 256, "the in-memory LRU; 0 disables it"),
        "disk_mb": number("disk_mb", None, "the most the cache folder may hold; null for no limit"),
        "min_free_mb": number(
            "min_free_mb",
            None,
            "the free space the cache leaves on its disk; null for max(2 GiB, 5% of the disk)",
        ),
    }


def check_budget(
    estimate_bytes: int,
    cache_config: Optional[Dict[str, Any]],
    directory: Optional[Union[str, Path]] = None,
) -> Optional[str]:
    """
    For a planner, before a run: `None` when a cache of `estimate_bytes` (see
    `estimated_cache_bytes`) fits the `feature_cache` parameter `cache_config` in `directory`
    (default: its `directory` key, else `default_cache_directory()`), else a message saying
    what would happen and which setting to change. `cache_config=None` (no cache) always fits.

    It fits when it is within `disk_mb` and leaves `min_free_mb` (or the default margin) free
    on the folder's file system now. Entries already in the folder are not counted against
    either: they may be the very entries this run needs (the cells of a grid share them).
    Raises `ConfigurationError` for an invalid `cache_config`.
    """
    if cache_config is None:
        return None
    config = check_config(cache_config, "feature_cache")
    if directory is None:
        directory = config["directory"] or default_cache_directory()
    directory = Path(directory).expanduser()
    needed_mib = math.ceil(estimate_bytes / MIB)
    problems = []
    disk_mb = config["disk_mb"]
    if disk_mb is not None and estimate_bytes > disk_mb * MIB:
        problems.append(
            f"the feature cache would take about {needed_mib} MiB but feature_cache.disk_mb is "
            f"{disk_mb:g}, so about {100 * (1 - disk_mb * MIB / estimate_bytes):.0f}% of the "
            f"features would be recomputed every epoch; set feature_cache.disk_mb to at least "
            f"{needed_mib} to cache them all"
        )
    usage = shutil.disk_usage(existing_ancestor(directory))
    if config["min_free_mb"] is None:
        margin = default_min_free_bytes(usage.total)
        margin_setting = f"the default margin max(2 GiB, 5% of the disk) = {margin // MIB} MiB"
    else:
        margin = int(config["min_free_mb"] * MIB)
        margin_setting = f"feature_cache.min_free_mb = {config['min_free_mb']:g}"
    room = max(0, usage.free - margin)
    if estimate_bytes > room:
        problems.append(
            f"the feature cache would take about {needed_mib} MiB but {directory} has "
            f"{usage.free // MIB} MiB free and the cache keeps {margin_setting} free, leaving "
            f"{room // MIB} MiB, so the rest of the features would be recomputed every epoch; "
            f"point feature_cache.directory (or {CACHE_DIR_ENV}) at a disk with "
            f"{math.ceil((estimate_bytes + margin) / MIB)} MiB free, free disk space, or lower "
            f"feature_cache.min_free_mb"
        )
    return "; ".join(problems) or None
