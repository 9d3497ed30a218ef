"""
The on-disk cache of frozen-encoder features that the `tune_*` token embedders read and write:
`store` (the entries and the `FeatureCache` in front of them), `budget` (the `feature_cache`
parameter and the disk budget, also the planner's maths) and `location` (which folder).
"""

from allennlp_tune.modules.feature_cache.budget import (
    CONFIG_KEYS,
    DEFAULT_BLOCK_BYTES,
    DEFAULT_MIN_FREE_BYTES,
    DEFAULT_MIN_FREE_FRACTION,
    ENTRY_HEADER_BYTES,
    ENTRY_OVERHEAD_BYTES,
    MIB,
    check_budget,
    check_config,
    default_min_free_bytes,
    directory_bytes,
    estimated_cache_bytes,
    existing_ancestor,
)
from allennlp_tune.modules.feature_cache.location import (
    CACHE_DIR_ENV,
    default_cache_directory,
    user_cache_directory,
)
from allennlp_tune.modules.feature_cache.store import (
    CACHE_FORMAT_VERSION,
    MAGIC,
    FeatureCache,
    encoder_fingerprint,
)

__all__ = [
    "CACHE_DIR_ENV",
    "CACHE_FORMAT_VERSION",
    "CONFIG_KEYS",
    "DEFAULT_BLOCK_BYTES",
    "DEFAULT_MIN_FREE_BYTES",
    "DEFAULT_MIN_FREE_FRACTION",
    "ENTRY_HEADER_BYTES",
    "ENTRY_OVERHEAD_BYTES",
    "FeatureCache",
    "MAGIC",
    "MIB",
    "check_budget",
    "check_config",
    "default_cache_directory",
    "default_min_free_bytes",
    "directory_bytes",
    "encoder_fingerprint",
    "estimated_cache_bytes",
    "existing_ancestor",
    "user_cache_directory",
]
