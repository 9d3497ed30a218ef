"""Where a feature cache lives: the folder a user chose (`TUNE_FEATURE_CACHE_DIR`), else the
run's serialization directory, else the user's cache folder. tune-grid and tune-search read it
to decide whether their runs share a cache of their own."""

import os
from pathlib import Path
from typing import Dict, Optional

CACHE_DIR_ENV = "TUNE_FEATURE_CACHE_DIR"


def user_cache_directory(ext_vars: Optional[Dict[str, str]] = None) -> Optional[str]:
    """
    The cache folder a user chose for a batch of runs: `TUNE_FEATURE_CACHE_DIR` from the
    environment or from the ext vars they pass (`--ext-var`), else `None`. An empty value counts
    as unset, as in `default_cache_directory`. tune-grid and tune-search share their own cache
    between runs only when this is `None`.
    """
    return os.environ.get(CACHE_DIR_ENV) or (ext_vars or {}).get(CACHE_DIR_ENV) or None


def default_cache_directory(serialization_dir: Optional[str] = None) -> Path:
    """
    Where a `feature_cache` without `directory` lives: `$TUNE_FEATURE_CACHE_DIR` if set (share
    one cache between runs of a grid: entries are keyed by content, so sharing is safe), else
    `<serialization_dir>/feature_cache` when the embedder was built by `allennlp train` (or
    loaded from an archive that is a run directory), else `$XDG_CACHE_HOME/allennlp_tune/features`
    (by default `~/.cache/allennlp_tune/features`).

    The serialization directory counts only while it exists: `load_archive` builds the model in
    a temporary extraction folder and deletes it right after, and the cache must not recreate it.
    """
    from_env = os.environ.get(CACHE_DIR_ENV)
    if from_env:
        return Path(from_env).expanduser()
    if serialization_dir and os.path.isdir(serialization_dir):
        return Path(serialization_dir) / "feature_cache"
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(cache_home).expanduser() / "allennlp_tune" / "features"
