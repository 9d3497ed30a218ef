"""Holding back the INFO lines of chosen loggers for a block: what tune-grid, tune-compare and
tune-export use so that a command starts, or ends, without AllenNLP's per-parameter lines (the
runs' own logs keep them)."""

import contextlib
import logging
from typing import Iterator, List, Optional, Sequence

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


@contextlib.contextmanager
def root_logging(
    handlers: Sequence[logging.Handler], level: Optional[int] = None
) -> Iterator[None]:
    """
    Within the block the root logger has only `handlers` (and `level`, when given); after it,
    any handler added meanwhile (AllenNLP's training adds its out.log's) and `handlers` are
    closed, and the root logger's own handlers and level are back.
    """
    root = logging.getLogger()
    saved, saved_level = list(root.handlers), root.level
    root.handlers[:] = list(handlers)
    if level is not None:
        root.setLevel(level)
    try:
        yield
    finally:
        for handler in root.handlers + list(handlers):
            if handler not in saved:
                handler.close()
        root.handlers[:] = saved
        root.setLevel(saved_level)
