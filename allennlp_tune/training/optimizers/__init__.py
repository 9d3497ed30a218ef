from allennlp_tune.training.optimizers.discriminative import DiscriminativeOptimizer  # noqa: F401
from allennlp_tune.training.optimizers.fused_adamw import TuneAdamWOptimizer  # noqa: F401
