from allennlp_tune.training import callbacks, ddp_accelerator, optimizers, tune_trainer  # noqa: F401
