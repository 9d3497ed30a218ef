"""How the adaptation schedules find an encoder's ordered parameter groups.

An embedder that can be adapted layer by layer (allennlp-tune's `tune_transformer`,
`tune_transformer_mismatched`, `tune_elmo`) is a *layer-group provider*: a `torch.nn.Module`
with

- `layer_groups()`: the encoder's parameters in groups, bottom to top (embeddings, layer 0 ..
  layer n-1), every encoder parameter exactly once; the scalar mix is not part of any group;
- `freeze()`, `unfreeze(top_k_groups)` and `trainable_groups()`;
- optionally `mode_parameters()`: the encoder parameters its mode can ever train (only the
  biases in `mode: "bitfit"`, only the LoRA matrices in `mode: "lora"`); an unfrozen group
  trains those of its parameters only. `named_mode_groups` gives the groups restricted to them,
  which is what the optimizer must hold and what the callbacks check and mask.

Optimizers receive only parameter lists, not the model, so providers also announce themselves
in a weak registry (`register_layer_group_provider`) that `discriminative` searches by parameter
identity. Callbacks, which see the model, walk its modules instead.
"""

import weakref
from typing import List, Sequence, Tuple

import torch

NamedGroup = Tuple[str, List[torch.nn.Parameter]]
NamedProvider = Tuple[str, torch.nn.Module]

_PROVIDERS: "weakref.WeakSet[torch.nn.Module]" = weakref.WeakSet()


def register_layer_group_provider(provider: torch.nn.Module) -> None:
    _PROVIDERS.add(provider)


def is_provider(module: object) -> bool:
    return all(callable(getattr(module, name, None)) for name in ("layer_groups", "freeze"))


def providers_in(model: torch.nn.Module) -> List[NamedProvider]:
    """
    The layer-group providers among a model's submodules as `(module path, provider)`, in
    module order (`named_modules()`). A provider that only delegates to a provider inside it
    (`tune_transformer_mismatched` around its `tune_transformer`) counts once, as the inner one,
    which is the one that registers itself for the optimizer.
    """
    found = [(name, module) for name, module in model.named_modules() if is_provider(module)]
    return [
        (name, module)
        for name, module in found
        if not any(other.startswith(name + ".") or (not name and other) for other, _ in found)
    ]


def providers_owning(
    named_parameters: Sequence[Tuple[str, torch.nn.Parameter]],
) -> List[NamedProvider]:
    """
    The registered providers that own at least one of `named_parameters` (the trainable ones
    AllenNLP gives the optimizer; the scalar mix at least), as `(module path, provider)` in
    module order, the path read off a parameter's name in the model.
    """
    position = {id(parameter): index for index, (_, parameter) in enumerate(named_parameters)}
    names = {id(parameter): name for name, parameter in named_parameters}
    found = []
    for provider in list(_PROVIDERS):
        owned = [(n, p) for n, p in provider.named_parameters() if id(p) in position]
        if not owned:
            continue
        relative, parameter = owned[0]
        full = names[id(parameter)]
        path = full[: len(full) - len(relative)].rstrip(".")
        if not full.endswith(relative):  # not named as in the model: keep it distinct anyway
            path = full
        found.append((min(position[id(p)] for _, p in owned), path, provider))
    return [(path, provider) for _, path, provider in sorted(found, key=lambda f: f[0])]


def group_label(path: str, group_name: str, num_providers: int) -> str:
    """
    The name of a provider's group in the optimizer's parameter groups and in the logs: the
    group's own name (`layer_0`) with one provider, prefixed by the provider's module path
    (`_text_field_embedder.token_embedder_premise.layer_0`) with several, so names never collide.
    """
    return f"{path}.{group_name}" if num_providers > 1 and path else group_name


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


def named_mode_groups(provider: torch.nn.Module) -> List[NamedGroup]:
    """
    `named_groups(provider)` restricted to the parameters its mode can ever train
    (`provider.mode_parameters()`: the biases in `bitfit`, the LoRA matrices in `lora`; all of
    them for a provider without that method or in feature extraction / fine-tuning). The group
    names and their number do not change; a group may be empty (the embeddings hold no LoRA
    matrix).
    """
    groups = named_groups(provider)
    mode_parameters = getattr(provider, "mode_parameters", None)
    if not callable(mode_parameters):
        return groups
    selected = {id(_parameter(item)) for item in mode_parameters()}
    return [(name, [p for p in params if id(p) in selected]) for name, params in groups]


def _parameter(item) -> torch.nn.Parameter:
    if isinstance(item, torch.nn.Parameter):
        return item
    if isinstance(item, Sequence) and len(item) == 2:
        return item[1]
    raise TypeError(f"layer_groups() returned {type(item).__name__}; expected a parameter")
