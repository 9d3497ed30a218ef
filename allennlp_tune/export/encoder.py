"""
The trained encoder of a `tune_transformer` run as a `transformers` folder: `config.json` and
the weights as safetensors, written by the model's own `save_pretrained`, with the tokenizer
saved beside them by its own `save_pretrained`, so that `AutoModel.from_pretrained(folder)` and
`AutoTokenizer.from_pretrained(folder)` load them. Used for every mode but LoRA (whose encoder
is the pretrained one plus an adapter, see `lora.py`): fine-tuning, stack-then-finetune and
BitFit change the encoder's weights; feature extraction leaves them as they were, and the
export says so by comparing them with `model_name`'s.

The embedder drops the model's pooler (no layer output uses it). The export puts the pretrained
pooler of `model_name` back, so that loading the folder finds every weight the model class
expects instead of initialising the pooler at random with a warning; the run never used it.
"""

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import torch
from allennlp.common.checks import ConfigurationError

logger = logging.getLogger(__name__)


@dataclass
class EncoderExport:
    """
    What `export_encoder` wrote.

    # Parameters

    model_class : `str`
        The transformers class, e.g. `BertModel`.
    tensors : `int`
        The encoder's `state_dict()` entries (the pooler not counted).
    changed : `int`
        How many of them differ from `model_name`'s pretrained weights (0: the encoder is the
        pretrained one).
    compared : `int`
        How many of them `model_name`'s weights have (the others could not be compared).
    pooler_restored : `bool`
        Whether the pretrained pooler was added back.
    """

    model_class: str
    tensors: int
    changed: int
    compared: int
    pooler_restored: bool


def load_pretrained(model_name: str):
    """`AutoModel.from_pretrained(model_name)` on the CPU, in eval mode."""
    from transformers import AutoModel

    try:
        model = AutoModel.from_pretrained(model_name)
    except (OSError, ValueError) as error:
        raise ConfigurationError(
            f"Cannot load the pretrained encoder {model_name!r} that the archive's config names "
            f"({type(error).__name__}: {error}); run tune-export where that name or folder "
            "resolves, as it did for training."
        ) from None
    return model.eval()


def save_tokenizer(
    model_name: str, tokenizer_kwargs: Optional[Dict[str, Any]], directory: Path
) -> None:
    """Saves `model_name`'s tokenizer (with the embedder's `tokenizer_kwargs`) into `directory`."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_name, **(tokenizer_kwargs or {}))
    tokenizer.save_pretrained(str(directory))


def count_changed(
    state: Dict[str, torch.Tensor], pretrained: Dict[str, torch.Tensor]
) -> Tuple[int, int]:
    """
    `(changed, compared)`: how many entries of `state` differ from the same-named entries of
    `pretrained` (in shape or value), and how many have a same-named entry at all.
    """
    changed = compared = 0
    for name, tensor in state.items():
        other = pretrained.get(name)
        if other is None:
            continue
        compared += 1
        if tensor.shape != other.shape or not torch.equal(tensor, other):
            changed += 1
    return changed, compared


def check_reloaded(state: Dict[str, torch.Tensor], reloaded: Dict[str, torch.Tensor], what: str):
    """
    Raises a `ConfigurationError` unless every entry of `state` is in `reloaded` with the same
    values: the exported folder must give back exactly the run's encoder.
    """
    missing = [name for name in state if name not in reloaded]
    different = [
        name
        for name, tensor in state.items()
        if name in reloaded
        and (tensor.shape != reloaded[name].shape or not torch.equal(tensor, reloaded[name]))
    ]
    if missing or different:
        raise ConfigurationError(
            f"{what} does not give back the run's encoder: {len(missing)} weights missing "
            f"({missing[:3]}), {len(different)} different ({different[:3]}). The embedder's "
            "model is probably a sub_module or a model class that AutoModel does not build; "
            "export with --head-only and load the encoder from the archive instead."
        )


def export_encoder(embedder: torch.nn.Module, directory: Path) -> EncoderExport:
    """
    Writes the embedder's `transformers` model and its tokenizer into `directory`, then loads
    the folder back with `AutoModel.from_pretrained` and checks that it holds the run's weights.

    # Parameters

    embedder : `torch.nn.Module`
        A loaded `TuneTransformerEmbedder` (any mode but `lora`).
    directory : `Path`
        A new folder (created).
    """
    from transformers import AutoModel, PreTrainedModel

    model = embedder.transformer_model
    model_name = embedder._model_name
    if not isinstance(model, PreTrainedModel):
        raise ConfigurationError(
            f"The archive's encoder is a {type(model).__name__} (a sub_module of "
            f"{model_name!r}), not a transformers model that save_pretrained writes; export "
            "with --head-only."
        )
    model.eval()
    # Shape of each entry: the parameter's own; read before the pooler is put back.
    state = {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
    pretrained = load_pretrained(model_name)
    changed, compared = count_changed(state, pretrained.state_dict())
    pooler = getattr(pretrained, "pooler", None)
    restore = getattr(model, "pooler", False) is None and isinstance(pooler, torch.nn.Module)
    directory.mkdir(parents=True)
    if restore:
        model.pooler = pooler
    try:
        model.save_pretrained(str(directory))
    finally:
        if restore:
            model.pooler = None
    save_tokenizer(model_name, embedder._tokenizer_kwargs, directory)
    reloaded = AutoModel.from_pretrained(str(directory))
    check_reloaded(state, reloaded.state_dict(), f"The exported folder {directory}")
    logger.info(
        "tune-export: %s encoder (%d of %d compared tensors differ from %s)",
        type(model).__name__,
        changed,
        compared,
        model_name,
    )
    return EncoderExport(type(model).__name__, len(state), changed, compared, restore)
