"""How the adaptation schedules find an encoder's ordered parameter groups.

An embedder that can be adapted layer by layer (allennlp-tune's `tune_transformer`,
`tune_transformer_mismatched`, `tune_elmo`) is a *layer-group provider*: a `torch.nn.Module`
with

- `layer_groups()`: the encoder's parameters in groups, bottom to top (embeddings, layer 0 ..
  layer n-1), every encoder parameter exactly once; the scalar mix is not part of any group;
- `freeze()`, `unfreeze(top_k_groups)` and `trainable_groups()`.

Optimizers receive only parameter lists, not the model, so providers also announce themselves
in a weak registry (`register_layer_group_provider`) that `discriminative` searches by parameter
identity. Callbacks, which see the model, walk its modules instead.
"""

import weakref
from typing import Iterable, List, Sequence, Tuple

import torch

NamedGroup = Tuple[str, List[torch.nn.Parameter]]

_PROVIDERS: "weakref.WeakSet[torch.nn.Module]" = weakref.WeakSet()


def register_layer_group_provider(provider: torch.nn.Module) -> None:
    _PROVIDERS.add(provider)


def is_provider(module: object) -> bool:
    return all(callable(getattr(module, name, None)) for name in ("layer_groups", "freeze"))


def providers_in(model: torch.nn.Module) -> List[torch.nn.Module]:
    """The layer-group providers among a model's submodules, in module order."""
    return [module for module in model.modules() if is_provider(module)]


def providers_owning(parameters: Iterable[torch.nn.Parameter]) -> List[torch.nn.Module]:
    """Registered providers that own at least one of `parameters` (e.g. their scalar mix)."""
    ids = {id(parameter) for parameter in parameters}
    found = [p for p in list(_PROVIDERS) if any(id(q) in ids for q in p.parameters())]
    return sorted(found, key=lambda provider: min(id(q) for q in provider.parameters()))


def named_groups(provider: torch.nn.Module) -> List[NamedGroup]:
    """
    `provider.layer_groups()` as `(group_name, parameters)` pairs, bottom to top. Accepts groups
    given as `(name, [(param_name, param), ...])`, `[(param_name, param), ...]` or `[param, ...]`.
    """
    result: List[NamedGroup] = []
    for index, group in enumerate(provider.layer_groups()):
        name = f"group_{index}"
        if isinstance(group, tuple) and len(group) == 2 and isinstance(group[0], str):
            name, group = group
        result.append((name, [_parameter(item) for item in group]))
    return result


def _parameter(item) -> torch.nn.Parameter:
    if isinstance(item, torch.nn.Parameter):
        return item
    if isinstance(item, Sequence) and len(item) == 2:
        return item[1]
    raise TypeError(f"layer_groups() returned {type(item).__name__}; expected a parameter")
