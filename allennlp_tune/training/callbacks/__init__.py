from allennlp_tune.training.callbacks.cost import CostCallback  # noqa: F401
from allennlp_tune.training.callbacks.gradual_unfreezing import GradualUnfreezing  # noqa: F401
from allennlp_tune.training.callbacks.optuna_pruning import OptunaPruningCallback  # noqa: F401
from allennlp_tune.training.callbacks.stack_then_finetune import StackThenFinetune  # noqa: F401
