"""
The fresh-run checkpoint guard: in a training that tune-grid started (`FRESH_RUN_ENV` set to
"1" in its environment), every trainer of the process refuses to resume from a checkpoint it did
not write. The plugin applies it when it is imported (`allennlp_tune/__init__.py`), so it holds
in each process of a distributed run too (their workers import the plugin afresh).
"""

import os
from typing import Mapping

from allennlp.common.checks import ConfigurationError

# Set for a grid's training child: the plugin then makes its trainer, in every process of the
# run, refuse checkpoints it did not write (`refuse_foreign_checkpoints`).
FRESH_RUN_ENV = "TUNE_GRID_FRESH_RUN"


def _refuse_foreign_checkpoint(checkpointer) -> None:
    """
    Replaces `Checkpointer.load_checkpoint` in a grid's training run. A grid run starts fresh
    (no `--recover`), and the trainer loads a checkpoint only when it starts, before it has
    saved one: so any checkpoint found then was written by another process (the orphan of a
    killed grid writing by path into this directory, say), and resuming from it would silently
    mix two trainings.
    """
    latest = checkpointer.find_latest_checkpoint()
    if latest is not None:
        raise ConfigurationError(
            f"{latest[0]} is in the serialization directory of a fresh tune-grid run before the "
            "run saved any checkpoint: another process is writing into this directory. This run "
            "does not resume from a checkpoint it did not write; stop that process and run "
            "tune-grid again."
        )
    return None


def refuse_foreign_checkpoints(environ: Mapping[str, str] = os.environ) -> None:
    """
    Makes every trainer of this process refuse checkpoints it did not write when `environ` says
    this is a grid's training run (`FRESH_RUN_ENV`); elsewhere it changes nothing.
    """
    if environ.get(FRESH_RUN_ENV) == "1":
        from allennlp.training.checkpointer import Checkpointer

        Checkpointer.load_checkpoint = _refuse_foreign_checkpoint
