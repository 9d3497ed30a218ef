import logging
import re
from typing import Any, Dict, List, Optional, Tuple

import torch
from allennlp.common import Lazy
from allennlp.common.checks import ConfigurationError
from allennlp.training.optimizers import Optimizer

from allennlp_tune.host_access import lazy_params
from allennlp_tune.modules.layer_groups import (
    group_label,
    named_groups,
    named_mode_groups,
    providers_owning,
)

logger = logging.getLogger(__name__)

ENCODER_PREFIX = "__tune_encoder__"


@Optimizer.register("discriminative", constructor="build")
class DiscriminativeOptimizer(Optimizer):
    """
    Discriminative (per-layer) learning rates for any AllenNLP optimizer (Howard & Ruder 2018;
    Peters et al. 2019 use `decay` 0.4 for ELMo): the top encoder group trains at `lr`, the one
    below at `lr * decay`, and so on down to the embeddings at `lr * decay ** (n - 1)`. The task
    head (everything that is not in an encoder group, the scalar mix included) trains at
    `head_lr`, or `lr` when it is not given.

    The encoder groups come from the embedder's `layer_groups()` (allennlp-tune's `tune_*`
    embedders), found by parameter identity; for a plain AllenNLP embedder give `groups`, one
    list of regexes per group, bottom to top. Frozen encoder parameters are included too, so a
    callback that unfreezes them later (`gradual_unfreezing`, `stack_then_finetune`) trains them
    at their rate (and `no_decay` matches them by their names in the model). A model with
    several such embedders (one per sentence, say) gets the same rates in each: every encoder's
    top group at `lr`, decaying downwards within that encoder; their groups are then named
    `<module path>.<group>` (e.g. `_text_field_embedder.token_embedder_premise.layer_0`), in
    module order, and `adaptation.jsonl` uses the same names. An embedder in `mode: "bitfit"`
    or `mode: "lora"` contributes only the parameters its mode trains (`mode_parameters()`: the
    biases, the LoRA matrices), each at its layer's rate; its other weights never train and stay
    out of the optimizer, and a layer with none of them (the embeddings in `lora`) gets no
    parameter group (the rates of the others are as if it had one). The inner optimizer is
    built with one parameter group per layer (named `layer_group_name` in
    `optimizer.param_groups`), so every AllenNLP learning-rate scheduler (`slanted_triangular`,
    `linear_with_warmup`, ...) scales each group from its own rate. Do not combine with the
    scheduler's own `discriminative_fine_tuning` or `gradual_unfreezing`, nor with `noam`,
    which sets one absolute rate for every group and so undoes the per-layer rates.

    Registered as an `Optimizer` with name "discriminative".

    ```jsonnet
    "optimizer": {
        "type": "discriminative",
        "decay": 0.4,
        "head_lr": 1e-3,
        "no_decay": ["bias", "LayerNorm.weight"],
        "optimizer": {"type": "adamw", "lr": 2e-5, "weight_decay": 0.01},
    },
    ```

    # Parameters

    optimizer : `Lazy[Optimizer]`
        The optimizer to use, with its `lr` (the top encoder group's rate). It must not set
        `parameter_groups`: this wrapper owns them (see `no_decay`).
    decay : `float`, optional (default = `0.4`)
        Each encoder group's rate is `decay` times the rate of the group above it.
    head_lr : `float`, optional (default = `None`)
        The rate of all non-encoder parameters; `None` means the optimizer's `lr`.
    groups : `List[List[str]]`, optional (default = `None`)
        Regexes over parameter names, one list per encoder group, bottom to top, for embedders
        that have no `layer_groups()`. Only trainable parameters can be matched this way.
    no_decay : `List[str]`, optional (default = `None`)
        Regexes of parameter names (as in `model.named_parameters()`, frozen ones included)
        that get `weight_decay: 0` (BERT's usual rule: `["bias", "LayerNorm\\.weight"]`); each
        group is split in two, `<group>` and `<group>/no_decay`, at the same rate.
    """

    @classmethod
    def build(
        cls,
        model_parameters: List[Tuple[str, torch.nn.Parameter]],
        optimizer: Lazy[Optimizer],
        decay: float = 0.4,
        head_lr: Optional[float] = None,
        groups: Optional[List[List[str]]] = None,
        no_decay: Optional[List[str]] = None,
    ) -> Optimizer:
        inner = lazy_params(optimizer)  # the inner config, read for its `lr`
        if "parameter_groups" in inner:
            raise ConfigurationError(
                "trainer.optimizer.optimizer.parameter_groups cannot be combined with the "
                "'discriminative' optimizer, which builds one group per encoder layer. Use "
                "'no_decay' for weight-decay exclusions and 'head_lr' for the task head."
            )
        if "lr" not in inner:
            raise ConfigurationError(
                "trainer.optimizer.optimizer.lr is required: it is the top encoder group's rate."
            )
        if not 0.0 < decay <= 1.0:
            raise ConfigurationError(f"trainer.optimizer.decay is {decay}; expected 0 < decay <= 1")
        lr = float(inner["lr"])

        encoders = cls._encoder_groups(model_parameters, groups)
        if not encoders:
            raise ConfigurationError(
                "The 'discriminative' optimizer found no encoder layer groups among the "
                "trainable parameters AllenNLP gives it. Either the model has no "
                "tune_transformer / tune_transformer_mismatched / tune_elmo embedder (for "
                "another embedder, give trainer.optimizer.groups: regexes, one list per layer, "
                "bottom to top), or that embedder starts frozen with a single layer "
                '(mode "feature_extraction" with layers "top" or one index), so none of its '
                'parameters is trainable: use layers "all" (the trainable scalar mix links it '
                'to the optimizer) or mode "fine_tuning".'
            )
        # Name every encoder parameter by its group, so one regex selects a group; after the
        # prefix comes the parameter's name in the model (frozen ones too), for `no_decay`.
        named: List[Tuple[str, torch.nn.Parameter]] = []
        specs: List[Tuple[List[str], Dict[str, Any]]] = []
        encoder_ids = set()
        if groups is None:
            # An encoder weight that its mode never trains (bitfit, lora) is not the head's either.
            for _, provider in providers_owning(model_parameters):
                encoder_ids.update(id(p) for _, ps in named_groups(provider) for p in ps)
        index = 0
        for encoder_groups in encoders:  # each encoder decays from its own top group
            depth = len(encoder_groups)
            for position, (group_name, params) in enumerate(encoder_groups):
                if not params:  # nothing in this layer that the mode trains
                    continue
                group_lr = lr * decay ** (depth - 1 - position)
                prefix = f"{ENCODER_PREFIX}.{index}."
                index += 1
                named += [(prefix + name, param) for name, param in params]
                encoder_ids.update(id(param) for _, param in params)
                specs.append(
                    ([f"^{re.escape(prefix)}"], {"lr": group_lr, "layer_group_name": group_name})
                )
        named += [(n, p) for n, p in model_parameters if id(p) not in encoder_ids]
        head = {"lr": head_lr if head_lr is not None else lr, "layer_group_name": "head"}
        specs.append(([f"^(?!{re.escape(ENCODER_PREFIX)})"], head))
        if no_decay:
            specs = cls._split_no_decay(specs, no_decay)
        for _, options in specs:
            logger.info("discriminative: %s at lr %.3g", options["layer_group_name"], options["lr"])
        return optimizer.construct(model_parameters=named, parameter_groups=specs)

    @staticmethod
    def _encoder_groups(
        model_parameters: List[Tuple[str, torch.nn.Parameter]],
        groups: Optional[List[List[str]]],
    ) -> List[List[Tuple[str, List[Tuple[str, torch.nn.Parameter]]]]]:
        """
        Per encoder (in module order), its groups bottom to top as `(group name, [(parameter
        name in the model, parameter), ...])`.
        """
        if groups is not None:
            result = []
            for index, regexes in enumerate(groups):
                params = [
                    (n, p) for n, p in model_parameters if any(re.search(r, n) for r in regexes)
                ]
                if not params:
                    raise ConfigurationError(
                        f"trainer.optimizer.groups[{index}] ({regexes}) matches no trainable "
                        "parameter name."
                    )
                result.append((f"group_{index}", params))
            return [result]
        providers = providers_owning(model_parameters)
        encoders = []
        for path, provider in providers:
            names = {id(p): f"{path}.{n}" if path else n for n, p in provider.named_parameters()}
            encoders.append(
                [
                    (group_label(path, name, len(providers)), [(names[id(p)], p) for p in params])
                    for name, params in named_mode_groups(provider)
                ]
            )
        return encoders

    @staticmethod
    def _split_no_decay(specs, no_decay: List[str]):
        # Parameters matching `no_decay` get their own group (weight_decay 0) next to each group.
        exclude = "|".join(f"(?:{regex})" for regex in no_decay)
        split = []
        for regexes, options in specs:
            (regex,) = regexes
            split.append(([f"{regex}(?!.*(?:{exclude}))"], dict(options)))
            no_decay_options = dict(options, weight_decay=0.0)
            no_decay_options["layer_group_name"] = options["layer_group_name"] + "/no_decay"
            split.append(([f"{regex}(?=.*(?:{exclude}))"], no_decay_options))
        return split
