from allennlp_tune.training.callbacks.cost import CostCallback  # noqa: F401
from allennlp_tune.training.callbacks.gradual_unfreezing import GradualUnfreezing  # noqa: F401
from allennlp_tune.training.callbacks.stack_then_finetune import StackThenFinetune  # noqa: F401
