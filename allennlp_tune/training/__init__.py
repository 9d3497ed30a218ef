from allennlp_tune.training import callbacks, optimizers  # noqa: F401
