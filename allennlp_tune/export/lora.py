"""
The LoRA matrices of a `mode: "lora"` run as a `peft` adapter folder (`adapter_config.json` and
`adapter_model.safetensors`, written by peft's own `save_pretrained`), with the tokenizer
beside them, so that
`PeftModel.from_pretrained(AutoModel.from_pretrained(base), folder)` rebuilds the run's encoder.

The embedder adds the adapters with `peft.inject_adapter_in_model` (see
`allennlp_tune/modules/token_embedders/lora.py`): its model is a plain `transformers` model
whose targeted linear layers are peft LoRA layers, with the LoRA config in `peft_config`, not a
`PeftModel` that could save itself. The export builds that `PeftModel` the way a user would:
`get_peft_model` over `AutoModel.from_pretrained(model_name)` with the run's LoRA config, whose
modules are named exactly as the embedder's, then loads the run's LoRA matrices into it and
saves it. The base must be the run's frozen weights: they are compared first, since an adapter
over other weights would not reproduce the run.
"""

import copy
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List

import torch
from allennlp.common.checks import ConfigurationError

from allennlp_tune.export.encoder import check_reloaded, load_pretrained, save_tokenizer
from allennlp_tune.modules.token_embedders.lora import _peft

logger = logging.getLogger(__name__)

ADAPTER_NAME = "default"  # the adapter name `inject_adapter_in_model` gives, and peft's default


@dataclass
class AdapterExport:
    """
    What `export_adapter` wrote.

    # Parameters

    model_class : `str`
        The base model's transformers class, e.g. `BertModel`.
    base_model : `str`
        `base_model_name_or_path` of the adapter: the `model_name` of the archive's config.
    lora_tensors : `int`
        The LoRA matrices saved.
    options : `Dict[str, Any]`
        `r`, `alpha`, `dropout` and `target_modules` of the run.
    """

    model_class: str
    base_model: str
    lora_tensors: int
    options: Dict[str, Any]


def _base_name(name: str) -> str:
    """The pretrained model's name of a LoRA-wrapped entry: `query.base_layer.weight` ->
    `query.weight`."""
    return name.replace(".base_layer.", ".")


def _check_base(state: Dict[str, torch.Tensor], pretrained: Dict[str, torch.Tensor], base: str):
    """The run's frozen weights must be `base`'s, else the adapter means something else."""
    different: List[str] = []
    for name, tensor in state.items():
        if "lora_" in name:
            continue
        other = pretrained.get(_base_name(name))
        if other is None or other.shape != tensor.shape or not torch.equal(other, tensor):
            different.append(name)
    if different:
        raise ConfigurationError(
            f"The run's frozen encoder weights are not those of {base!r} "
            f"({len(different)} differ, e.g. {different[:3]}; override_weights_file, "
            "reinit_modules or sub_module?), so a peft adapter over "
            f"AutoModel.from_pretrained({base!r}) would not reproduce the run. Export with "
            "--head-only and load the encoder from the archive."
        )


def export_adapter(embedder: torch.nn.Module, directory: Path) -> AdapterExport:
    """
    Writes the run's LoRA adapter and the tokenizer into `directory`, then loads it back with
    `PeftModel.from_pretrained` over a fresh base and checks that it gives the run's encoder.

    # Parameters

    embedder : `torch.nn.Module`
        A loaded `TuneTransformerEmbedder` in `mode: "lora"`.
    directory : `Path`
        A new folder (created).
    """
    peft = _peft()
    model = embedder.transformer_model
    base = embedder._model_name
    config = getattr(model, "peft_config", {}).get(ADAPTER_NAME)
    if config is None:
        raise ConfigurationError(
            f"The archive's {type(model).__name__} has no LoRA adapter {ADAPTER_NAME!r} "
            "although its embedder's mode is lora; export with --head-only."
        )
    model.eval()
    state = {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
    lora_state = {name: tensor for name, tensor in state.items() if "lora_" in name}
    pretrained = load_pretrained(base)
    _check_base(state, pretrained.state_dict(), base)

    config = copy.deepcopy(config)
    config.inference_mode = True
    peft_model = peft.get_peft_model(pretrained, config, adapter_name=ADAPTER_NAME)
    peft_model.peft_config[ADAPTER_NAME].base_model_name_or_path = base
    inner = peft_model.base_model.model
    wanted = {name for name in inner.state_dict() if "lora_" in name}
    if wanted != set(lora_state):
        raise ConfigurationError(
            f"peft built other LoRA matrices over {base!r} than the run has "
            f"({sorted(wanted ^ set(lora_state))[:3]}); export with --head-only."
        )
    inner.load_state_dict(lora_state, strict=False)
    directory.mkdir(parents=True)
    peft_model.save_pretrained(str(directory))
    save_tokenizer(base, embedder._tokenizer_kwargs, directory)

    reloaded = peft.PeftModel.from_pretrained(load_pretrained(base), str(directory))
    check_reloaded(
        state, reloaded.base_model.model.state_dict(), f"The exported adapter {directory}"
    )
    options = {
        "r": config.r,
        "alpha": config.lora_alpha,
        "dropout": config.lora_dropout,
        "target_modules": sorted(config.target_modules),
    }
    logger.info("tune-export: LoRA adapter over %s", base)
    return AdapterExport(type(model).__name__, base, len(lora_state), options)
