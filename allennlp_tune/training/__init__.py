from allennlp_tune.training import (  # noqa: F401
    callbacks,
    ddp_accelerator,
    frozen_features,
    optimizers,
    tune_trainer,
)
