"""
Experiments: what starts `allennlp train` processes and watches them. `grid` (configs x seeds,
resumable, fingerprinted runs), `compare` (tune-compare: modes x seeds on one task, with
`rounds` for seeds in rounds), `search` (Optuna trials), and the checks they make before a
run starts (`fingerprint`, `changed`, `task_checks`, `encoder_check`). Their parts, by job:
`configs` (configs x seeds and `--ext-var` parsing), `process` (the training subprocess and
its signals), `lock` (one writer per results directory), `progress` (the progress bar's epoch
and dev metric) and `outputs` (what a finished run leaves: archive size, dev predictions, the
run record grid and search both write). They read the plan from `allennlp_tune.planning` and
hand finished runs to `allennlp_tune.reporting`.

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
"""
