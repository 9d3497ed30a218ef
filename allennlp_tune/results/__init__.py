"""
Results as a product: `tune-report`, resumable `tune-grid` and Optuna `tune-search`.

Conventions these rely on (every config in `training_config/` follows them):

- Configs are `training_config/<task>_<encoder>_<mode>[_<variant>].jsonnet` with task in
  conll2003, sst2, mnli, sick_e, sick_r, mrpc, sts_b; encoder elmo, bert (or any lower-case
  word); mode fe (feature extraction), ft (fine-tuning) or sf (stack-then-finetune); a variant
  suffix marks an ablation.
- Configs read their settings with `std.extVar`, which AllenNLP fills from environment
  variables: `TUNE_SEED` (random_seed, numpy_seed, pytorch_seed), `TUNE_DATA_DIR`, and
  hyperparameters such as `TUNE_EPOCHS`, `TUNE_LR`, `TUNE_DROPOUT`, `TUNE_WEIGHT_DECAY`.
  tune-grid and tune-search set them in the environment of the training they start.
- The trainer's `validation_metric` ("+accuracy", "+pearson", "+f1-measure-overall") is the
  primary metric; `metrics.json` holds `best_validation_<name>`.

Modules: `report` (Table 2 in Markdown, HTML,
PNG), `grid` (configs x seeds), `search` (Optuna),
`cli` (the subcommands' arguments).
"""

from allennlp_tune.results.report import build_report, render_markdown, report_from_dirs
from allennlp_tune.rundir import load_runs

__all__ = [
    "build_report",
    "load_runs",
    "render_markdown",
    "report_from_dirs",
]
