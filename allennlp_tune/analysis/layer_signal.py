"""
Which layers to tune, predicted before the sweep: the relative gradient norm (RGN) of each
layer group of the encoder in the first steps of fine-tuning, the signal of Auto-RGN (Lee et
al. 2023, "Surgical Fine-Tuning Improves Adaptation to Distribution Shifts").

`layer_signal(config)` builds the model and the first `max_instances` training instances of a
training config as AllenNLP would (`DatasetReader`, `Vocabulary` and `Model.from_params`; the
ft cell of `tune-compare` is the intended config), makes every layer group of the encoder
trainable, and runs `steps` forward and backward passes over batches of those instances
(cycling through them when there are fewer batches than steps) **without updating any weight**.
Per step and group `g` (`embedder.layer_groups()`: group 0 the embeddings, then one group per
layer) it records

    RGN_g = ||grad of the group's parameters|| / ||the group's parameters||

(Frobenius norms over all the group's tensors together), and averages over the steps. A group
whose gradient is large against its weights is one the task wants to move: Lee et al. tune the
groups with the largest RGN.

Why no optimizer steps: the choice of what to tune is made at the pretrained weights, and the
gradient there is what all block modes start from. Without updates the signal needs no
learning rate, schedule or optimizer state (AdamW's first steps are roughly sign steps, which
would flatten the differences between groups), every step measures the same weights on
another batch (dropout on, as in training, from a fixed seed), and the whole pass costs
`steps` forward and backward passes. Gradient clipping (`grad_norm`) scales every group alike,
so it does not change the ranking and is not applied.

`predict_blocks(rgn)` turns the per-group RGN into picks: for each size K (1 .. groups - 1),
the block tune-compare can run (`topK` or `bottomK`) whose groups have the larger mean RGN,
and the contiguous block of K groups with the largest mean RGN (which tune-compare cannot run;
shown for information).
"""

import itertools
import logging
import math
import random
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from allennlp_tune.rundir import loader_batch_size

logger = logging.getLogger(__name__)

DEFAULT_STEPS = 20
DEFAULT_MAX_INSTANCES = 256
# Loggers that say every vocabulary and model parameter at INFO while the model is built.
QUIET_MODEL_LOGGERS = ("allennlp.nn.initializers", "allennlp.data.vocabulary")
METHOD = (
    "relative gradient norm ||g|| / ||w|| per layer group (Auto-RGN, Lee et al. 2023), at the "
    "pretrained weights: {steps} forward/backward passes of the ft config on its first "
    "{instances} training instances, no weight update, dropout on, averaged over the passes"
)


@dataclass
class GroupSignal:
    """One layer group's RGN, averaged over the steps, with its mean norms."""

    index: int
    name: str
    rgn: float
    grad_norm: float
    weight_norm: float
    parameters: int

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


def group_norms(parameters: Sequence[torch.nn.Parameter]) -> Tuple[float, float]:
    """`(||g||, ||w||)` of one group, each norm over all its tensors together; a parameter
    without a gradient counts as a zero gradient."""
    grad_squares = sum(
        float(p.grad.detach().float().pow(2).sum()) for p in parameters if p.grad is not None
    )
    weight_squares = sum(float(p.detach().float().pow(2).sum()) for p in parameters)
    return math.sqrt(grad_squares), math.sqrt(weight_squares)


def group_rgn(parameters: Sequence[torch.nn.Parameter]) -> Optional[float]:
    """||g|| / ||w|| of one group (`group_norms`); `None` for a group whose weights are all
    zero."""
    grad, weight = group_norms(parameters)
    return grad / weight if weight > 0.0 else None


def encoder_groups(model: torch.nn.Module) -> List[tuple]:
    """
    The model's layer groups as `(name, [parameters])`, bottom to top. With several embedders
    (one per text field), group i joins the i-th group of each: `tuned_groups` names the same
    groups in every embedder of a cell. Raises a `ConfigurationError` for a model without a
    layer-group embedder (`tune_transformer`, `tune_transformer_mismatched`, `tune_elmo`), or
    with embedders whose groups differ.
    """
    from allennlp.common.checks import ConfigurationError

    from allennlp_tune.modules.layer_groups import named_groups, providers_in

    providers = providers_in(model)
    if not providers:
        raise ConfigurationError(
            "The model has no tune_* token embedder with layer groups (tune_transformer, "
            "tune_transformer_mismatched, tune_elmo), so there are no groups to measure."
        )
    grouped = [named_groups(provider) for _, provider in providers]
    names = [name for name, _ in grouped[0]]
    for other in grouped[1:]:
        if [name for name, _ in other] != names:
            raise ConfigurationError(
                "The model's embedders have different layer groups ("
                + "; ".join(", ".join(name for name, _ in groups) for groups in grouped)
                + "); the RGN needs one set of groups."
            )
    return [
        (name, [p for groups in grouped for p in groups[index][1]])
        for index, name in enumerate(names)
    ]


def measure_rgn(
    model: torch.nn.Module,
    batches: Sequence[Dict[str, Any]],
    steps: int = DEFAULT_STEPS,
    seed: int = 0,
) -> List[GroupSignal]:
    """
    The mean RGN per layer group over `steps` forward and backward passes of `model` (its
    `forward(**batch)` returns a `loss`), one batch each, cycling through `batches`; no weight
    changes. Every group of every layer-group embedder is made trainable first.
    """
    from allennlp_tune.modules.layer_groups import providers_in

    for _, provider in providers_in(model):
        provider.unfreeze()  # the whole encoder trains, as in ft
    groups = encoder_groups(model)
    model.train()
    torch.manual_seed(seed)
    sums = [{"rgn": 0.0, "grad": 0.0, "weight": 0.0, "steps": 0} for _ in groups]
    for batch in itertools.islice(itertools.cycle(batches), steps):
        model.zero_grad(set_to_none=True)
        loss = model(**batch)["loss"]
        loss.backward()
        for total, (_, parameters) in zip(sums, groups):
            grad, weight = group_norms(parameters)
            if weight == 0.0:  # no RGN for an all-zero group
                continue
            total["rgn"] += grad / weight
            total["grad"] += grad
            total["weight"] += weight
            total["steps"] += 1
    model.zero_grad(set_to_none=True)
    return [
        GroupSignal(
            index=index,
            name=name,
            rgn=total["rgn"] / total["steps"] if total["steps"] else 0.0,
            grad_norm=total["grad"] / total["steps"] if total["steps"] else 0.0,
            weight_norm=total["weight"] / total["steps"] if total["steps"] else 0.0,
            parameters=sum(p.numel() for p in parameters),
        )
        for index, ((name, parameters), total) in enumerate(zip(groups, sums))
    ]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def predict_blocks(rgn: Sequence[float], names: Optional[Sequence[str]] = None) -> List[Dict]:
    """
    Per block size K = 1 .. len(rgn) - 1: the mean RGN of the top K and the bottom K groups,
    the predicted block mode (`topK` where the top's mean is at least the bottom's, else
    `bottomK`), and the contiguous block of K groups with the largest mean RGN (its first and
    last group index, names and mean; the lowest such block on a tie).
    """
    count = len(rgn)
    names = list(names) if names is not None else [str(i) for i in range(count)]
    blocks = []
    for k in range(1, count):
        top, bottom = _mean(rgn[count - k :]), _mean(rgn[:k])
        start = max(range(count - k + 1), key=lambda s: (_mean(rgn[s : s + k]), -s))
        blocks.append(
            {
                "k": k,
                "top": top,
                "bottom": bottom,
                "predicted": f"top{k}" if top >= bottom else f"bottom{k}",
                "best_contiguous": {
                    "groups": f"{start}-{start + k - 1}",
                    "names": names[start : start + k],
                    "rgn": _mean(rgn[start : start + k]),
                },
            }
        )
    return blocks


def first_instances(reader, data_path: str, max_instances: int) -> List[Any]:
    """The first `max_instances` instances of `data_path`, their token indexers applied."""
    instances = list(itertools.islice(reader.read(data_path), max_instances))
    for instance in instances:
        reader.apply_token_indexers(instance)
    return instances


def layer_signal(
    config: Dict[str, Any],
    steps: int = DEFAULT_STEPS,
    max_instances: int = DEFAULT_MAX_INSTANCES,
    batch_size: Optional[int] = None,
    cuda_device: int = -1,
    seed: int = 0,
) -> Dict[str, Any]:
    """
    The RGN per layer group of the model of a rendered training `config` (a dict, as
    `Params.from_file(...).as_dict()` gives it) on its first `max_instances` training
    instances, and the blocks it predicts (module docstring). Batches of `batch_size` (default:
    the config's data loader's) in a shuffled order from `seed`.
    """
    from allennlp.common import Params
    from allennlp.common.checks import ConfigurationError
    from allennlp.data import DatasetReader, Vocabulary
    from allennlp.data.data_loaders import SimpleDataLoader
    from allennlp.models import Model
    from allennlp.nn.util import move_to_device

    from allennlp_tune.quiet import QUIET_READER_LOGGERS, quiet_loggers

    random.seed(seed)
    torch.manual_seed(seed)
    # Building the reader, vocabulary and model logs every parameter at INFO: held back, as
    # tune-compare holds them back before training.
    with quiet_loggers(*QUIET_READER_LOGGERS, *QUIET_MODEL_LOGGERS):
        reader = DatasetReader.from_params(Params(dict(config["dataset_reader"])))
        instances = first_instances(reader, config["train_data_path"], max_instances)
        if not instances:
            raise ConfigurationError(
                f"{config['train_data_path']} gave no training instances; the RGN needs some."
            )
        vocabulary = Params(dict(config.get("vocabulary") or {}))
        vocab = Vocabulary.from_params(vocabulary, instances=instances)
        model = Model.from_params(vocab=vocab, params=Params(dict(config["model"])))
    size = batch_size or loader_batch_size(config) or 32
    loader = SimpleDataLoader(instances, batch_size=size, shuffle=True, vocab=vocab)
    batches = [move_to_device(batch, cuda_device) for batch in loader]
    if cuda_device >= 0:
        model = model.cuda(cuda_device)
    signals = measure_rgn(model, batches, steps=steps, seed=seed)
    names = [signal.name for signal in signals]
    return {
        "method": METHOD.format(steps=steps, instances=len(instances)),
        "steps": steps,
        "instances": len(instances),
        "batch_size": size,
        "seed": seed,
        "groups": [signal.as_dict() for signal in signals],
        "blocks": predict_blocks([signal.rgn for signal in signals], names),
    }


__all__ = [
    "DEFAULT_MAX_INSTANCES",
    "DEFAULT_STEPS",
    "GroupSignal",
    "encoder_groups",
    "group_norms",
    "group_rgn",
    "layer_signal",
    "measure_rgn",
    "predict_blocks",
]
