"""
LoRA (Hu et al. 2022) for the `tune_transformer` embedders (`mode: "lora"`), through `peft`.

Not a registered component: `tune_transformer` (and so `tune_transformer_mismatched`) checks its
`lora` options with `check_lora_options` before any weight is loaded, and injects the adapters
into its `transformers` model with `inject_lora` before it splits the encoder into layer groups,
so every LoRA matrix belongs to the group of the layer it adapts. `peft` replaces each targeted
`torch.nn.Linear` in place by a LoRA layer around it: `<name>.weight` becomes
`<name>.base_layer.weight` (frozen), and `<name>.lora_A.default.weight` (`r x in`, random) and
`<name>.lora_B.default.weight` (`out x r`, zeros) are added, so the adapted encoder computes
exactly what the pretrained one does until `lora_B` has trained. The output of a layer is
`base(x) + alpha / r * B A dropout(x)`.

`peft` is imported only when an embedder uses LoRA. It is the plugin's `lora` extra, not a
requirement (every peft release needs torch >= 1.13; stock AllenNLP 2.10.1 pins torch < 1.13):
without it `mode: "lora"` fails with a `ConfigurationError` naming the extra.
"""

from typing import Any, Dict, List, Optional

import torch
from allennlp.common.checks import ConfigurationError

from allennlp_tune.modules.checks import refuse_unknown_keys

LORA_DEFAULTS: Dict[str, Any] = {"r": 8, "alpha": 16, "dropout": 0.1, "target_modules": None}

# Families that peft's own mapping (`TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`) does
# not list, with the same choice it makes for BERT: the attention's query and value projections.
EXTRA_TARGET_MODULES: Dict[str, List[str]] = {
    "albert": ["query", "value"],
    "distilbert": ["q_lin", "v_lin"],
    # MPNet's linear modules per layer: `attention.attn.q`, `k`, `v`, `o` (the attention's
    # output projection), `intermediate.dense` and `output.dense` (the feed-forward pair), so
    # `target_modules: ["q", "k", "v", "o", "intermediate.dense", "output.dense"]` adapts them
    # all. Its relative position bias is an embedding table, not a linear layer.
    "mpnet": ["q", "v"],
    # ModernBERT (transformers >= 4.48) projects query, key and value with one fused Linear.
    "modernbert": ["Wqkv"],
}


def _peft():
    # With this torch, `torch.distributed.tensor` is an attribute of `torch.distributed` only once
    # the submodule has been imported; peft's `_get_in_out_features` uses it and otherwise fails
    # with "module 'torch.distributed' has no attribute 'tensor'" while injecting the adapters.
    try:
        import peft
    except ImportError as error:
        raise ConfigurationError(
            f'mode: "lora" needs peft, which is not installed ({error}). Install the plugin\'s '
            "lora extra: pip install 'allennlp-tune[lora]' (from a checkout: "
            "pip install -e '.[lora]'). peft requires torch >= 1.13, so on a stock AllenNLP "
            "2.10.1 environment (torch 1.12) pip would replace torch: use the pinned install "
            "(make install) for LoRA, or the other modes (fe, ft, sf, bitfit), which need no "
            "extra."
        ) from None
    try:
        import torch.distributed.tensor  # noqa: F401
    except ImportError:  # torch < 2.4 has no such module, and peft does not look for it there
        pass

    return peft


def check_lora_options(
    lora: Optional[Dict[str, Any]], mode: str, owner: str
) -> Optional[Dict[str, Any]]:
    """
    The complete LoRA options (`LORA_DEFAULTS` updated with `lora`) when `mode` is `"lora"`,
    else `None`. Raises `ConfigurationError` for unknown keys, invalid values, or `lora` given
    with another mode (it would be ignored silently).
    """
    if mode != "lora":
        if lora is not None:
            raise ConfigurationError(
                f"{owner}.lora is set but {owner}.mode is {mode!r}: the LoRA options apply only "
                'with mode: "lora". Set mode: "lora", or remove lora.'
            )
        return None
    options = dict(lora or {})
    refuse_unknown_keys(
        options,
        list(LORA_DEFAULTS),
        f"{owner}.lora",
        " (rank, scaling numerator, dropout on the LoRA input, and the names of the linear "
        "modules to adapt)",
    )
    options = {**LORA_DEFAULTS, **options}
    r, alpha, dropout = options["r"], options["alpha"], options["dropout"]
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise ConfigurationError(f"{owner}.lora.r is {r!r}; expected a rank >= 1 (e.g. 8).")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or alpha <= 0:
        raise ConfigurationError(
            f"{owner}.lora.alpha is {alpha!r}; expected a number > 0 (the update is scaled by "
            "alpha / r; e.g. 16 with r 8)."
        )
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        raise ConfigurationError(f"{owner}.lora.dropout is {dropout!r}; expected 0 <= dropout < 1.")
    targets = options["target_modules"]
    if targets is not None and (
        isinstance(targets, str)
        or not isinstance(targets, (list, tuple))
        or not targets
        or not all(isinstance(target, str) and target for target in targets)
    ):
        raise ConfigurationError(
            f"{owner}.lora.target_modules is {targets!r}; expected null (the family's default) "
            'or a non-empty list of linear module names, e.g. ["query", "value"].'
        )
    if targets is not None:
        options["target_modules"] = list(targets)
    return options


def linear_module_names(model: torch.nn.Module) -> List[str]:
    """The distinct last name parts of `model`'s `torch.nn.Linear` modules, sorted."""
    return sorted(
        {
            name.rsplit(".", 1)[-1]
            for name, module in model.named_modules()
            if name and isinstance(module, torch.nn.Linear)
        }
    )


def default_target_modules(model_type: str) -> Optional[List[str]]:
    """peft's default LoRA targets for a `config.model_type`, else ours, else `None`."""
    mapping = _peft().utils.constants.TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING
    targets = mapping.get(model_type) or EXTRA_TARGET_MODULES.get(model_type)
    return list(targets) if targets else None


def inject_lora(
    model: torch.nn.Module, options: Dict[str, Any], model_type: str, owner: str
) -> List[str]:
    """
    Injects LoRA adapters into `model` in place (`peft.inject_adapter_in_model`) with the
    options of `check_lora_options`, and returns the target module names used. A target is
    matched as peft matches it: a module whose name is the target or ends with `.<target>`;
    every target must match at least one `torch.nn.Linear`.
    """
    linear = [
        name
        for name, module in model.named_modules()
        if name and isinstance(module, torch.nn.Linear)
    ]
    valid = linear_module_names(model)
    targets = options["target_modules"]
    if targets is None:
        targets = default_target_modules(model_type)
        if targets is None:
            raise ConfigurationError(
                f"{owner}.lora.target_modules is null, but neither peft nor allennlp-tune has a "
                f"default for the model type {model_type!r}. Name the linear modules to adapt, "
                f'e.g. target_modules: ["{valid[0] if valid else "query"}"]; this encoder\'s '
                f"linear modules are {valid}."
            )
    for target in targets:
        if not any(name == target or name.endswith("." + target) for name in linear):
            raise ConfigurationError(
                f"{owner}.lora.target_modules contains {target!r}, which names no linear module "
                f"of this {type(model).__name__}; its linear modules are {valid} (LoRA adapts "
                "torch.nn.Linear layers)."
            )
    peft = _peft()
    config = peft.LoraConfig(
        r=options["r"],
        lora_alpha=options["alpha"],
        lora_dropout=options["dropout"],
        target_modules=list(targets),
        bias="none",
    )
    peft.inject_adapter_in_model(config, model)
    return list(targets)
