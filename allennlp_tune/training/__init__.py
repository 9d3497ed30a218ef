from allennlp_tune.training import callbacks, ddp_accelerator, optimizers  # noqa: F401
