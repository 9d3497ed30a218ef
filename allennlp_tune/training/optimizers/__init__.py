from allennlp_tune.training.optimizers.discriminative import DiscriminativeOptimizer  # noqa: F401
