# ruff: noqa: I001
"""allennlp-tune: freeze or fine-tune a pretrained encoder with one config switch.

Importing this package applies the compatibility fixes for the modern stack and registers
every component: readers, token embedders, pair and seq2vec encoders, models, predictors,
optimizers, trainer callbacks and the ``allennlp`` subcommands (probe, mi, tune-report,
tune-grid, tune-compare, tune-search, tune-data, tune-export). Installed, it is one of the
plugins ``allennlp`` imports from any folder (the start-up hook, ``allennlp_tune/compat.py``
fix 12); ``--include-package allennlp_tune`` and the ``.allennlp_plugins`` files still work.
"""

# The compatibility fixes come first: they replace registrations that components rely on.
from allennlp_tune import compat  # noqa: F401
from allennlp_tune import data  # noqa: F401
from allennlp_tune import modules  # noqa: F401
from allennlp_tune import training  # noqa: F401
from allennlp_tune import models  # noqa: F401
from allennlp_tune import predictors  # noqa: F401
from allennlp_tune import commands  # noqa: F401
from allennlp_tune.config_vars import export_config_defaults
from allennlp_tune.data.paths import export_default_data_dir
from allennlp_tune.training.fresh_run import refuse_foreign_checkpoints

export_default_data_dir()
export_config_defaults()
# Beside compat, the one other change to AllenNLP's behaviour: in a training that tune-grid
# started (TUNE_GRID_FRESH_RUN=1), a trainer resumes from no checkpoint it did not write.
refuse_foreign_checkpoints()

__version__ = "0.1.0"


def __getattr__(name: str):
    """`from allennlp_tune import Comparison` (the Python API, `experiments/comparison.py`),
    imported when asked for: every `allennlp` command imports this package."""
    if name == "Comparison":
        from allennlp_tune.experiments.comparison import Comparison

        return Comparison
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
