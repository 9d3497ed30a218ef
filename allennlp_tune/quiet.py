"""Holding back the INFO lines of chosen loggers for a block: what tune-grid, tune-compare and
tune-export use so that a command starts, or ends, without AllenNLP's per-parameter lines (the
runs' own logs keep them)."""

import logging
from typing import List

# The loggers that say, at INFO, each parameter of a reader built from a config and the label
# set a reader reads: quiet (WARNING) while tune-grid / tune-compare build readers before
# training (the planner, tune-compare's label count), so the command starts without INFO lines.
QUIET_READER_LOGGERS = ("allennlp.common.params", "allennlp_tune.data.dataset_readers")


class quiet_loggers:
    """Within the block, the named loggers let only WARNING (or `level`) and above through; their
    levels are restored after it. Reusable, not reentrant."""

    def __init__(self, *names: str, level: int = logging.WARNING):
        self._loggers = [logging.getLogger(name) for name in names]
        self._level = level
        self._levels: List[int] = []

    def __enter__(self):
        self._levels = [found.level for found in self._loggers]
        for found in self._loggers:
            found.setLevel(max(found.level, self._level))
        return self

    def __exit__(self, *exc_info):
        for found, level in zip(self._loggers, self._levels):
            found.setLevel(level)
        return False
