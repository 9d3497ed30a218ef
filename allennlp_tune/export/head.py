"""
What sits on top of the encoder, written for every mode: the scalar mix (`scalar_mix.json`, when
the embedder mixes several layers) and the task head (`head.safetensors` with `head.json`).

The head is the model's `state_dict()` without the `tune_*` embedder (its encoder and scalar
mix), saved with safetensors; `head.json` names the model type and class, where the embedder sat
(`embedder`), each tensor's shape and dtype, the model's config (to rebuild it with AllenNLP)
and the label vocabulary in index order (row `i` of the output layer is label `i`).
"""

from pathlib import Path
from typing import Any, Dict, List, Optional

import torch
from allennlp.data import Vocabulary
from allennlp.data.vocabulary import DEFAULT_PADDING_TOKEN

from allennlp_tune.export.archive import LoadedRun, write_json
from allennlp_tune.modules.token_embedders import TuneTransformerMismatchedEmbedder

SCALAR_MIX_NAME = "scalar_mix.json"
HEAD_WEIGHTS_NAME = "head.safetensors"
HEAD_INFO_NAME = "head.json"
# Token indexers whose vocabulary namespace holds wordpieces (not labels), with its default.
WORDPIECE_INDEXERS = {"pretrained_transformer": "tags", "pretrained_transformer_mismatched": "tags"}


def _layer_meaning(loaded: LoadedRun) -> str:
    if loaded.is_elmo:
        return (
            "index into ELMo's layers: 0 the character CNN, 1 and 2 the biLSTM layers (forward "
            "and backward concatenated)"
        )
    return (
        "index into the encoder's hidden_states (output_hidden_states=True): 0 the embedding "
        "output, the last one last_hidden_state"
    )


def export_scalar_mix(loaded: LoadedRun, directory: Path) -> Optional[Dict[str, Any]]:
    """
    Writes `scalar_mix.json` (the selected layers, the mix's raw and softmax-normalised weights,
    gamma and `do_layer_norm`) when the embedder mixes layers, and returns what it wrote;
    `None` when it selects a single layer (nothing to mix).
    """
    embedder = loaded.embedder
    mix = embedder._scalar_mix
    if mix is None:
        return None
    # Shape: (num_selected_layers,)
    raw = torch.cat([parameter.detach().reshape(1) for parameter in mix.scalar_parameters])
    data = {
        "layers": list(embedder._layers),
        "layer_meaning": _layer_meaning(loaded),
        "scalar_parameters": [float(value) for value in raw],
        "weights": [float(value) for value in torch.softmax(raw, dim=0)],
        "gamma": float(mix.gamma.detach()),
        "do_layer_norm": bool(mix.do_layer_norm),
        "formula": (
            "output = gamma * sum_k weights[k] * layer[layers[k]]"
            + (
                ", each layer normalised over its unmasked positions first (do_layer_norm)"
                if mix.do_layer_norm
                else ""
            )
            + "; weights = softmax(scalar_parameters)"
        ),
    }
    write_json(directory / SCALAR_MIX_NAME, data)
    return data


def _indexer_namespaces(config: Dict[str, Any]) -> List[str]:
    """The vocabulary namespaces that the readers' wordpiece indexers fill."""
    namespaces = []
    for key in ("dataset_reader", "validation_dataset_reader"):
        reader = config.get(key)
        indexers = reader.get("token_indexers") if isinstance(reader, dict) else None
        for indexer in (indexers or {}).values() if isinstance(indexers, dict) else []:
            if isinstance(indexer, dict) and indexer.get("type") in WORDPIECE_INDEXERS:
                namespaces.append(indexer.get("namespace", WORDPIECE_INDEXERS[indexer["type"]]))
    return namespaces


def label_vocabulary(vocab: Vocabulary, config: Dict[str, Any]) -> Dict[str, List[str]]:
    """
    The label namespaces of `vocab` (those without padding, as AllenNLP keeps `*labels` and
    `*tags`, less the wordpiece namespace of a `pretrained_transformer` indexer), each as its
    tokens in index order.
    """
    skip = set(_indexer_namespaces(config))
    labels = {}
    for namespace in sorted(vocab.get_namespaces()):
        tokens = vocab.get_token_to_index_vocabulary(namespace)
        if namespace in skip or DEFAULT_PADDING_TOKEN in tokens:
            continue
        by_index = vocab.get_index_to_token_vocabulary(namespace)
        labels[namespace] = [by_index[index] for index in range(len(by_index))]
    return labels


def export_head(loaded: LoadedRun, directory: Path) -> Dict[str, Any]:
    """
    Writes `head.safetensors` (the model's weights outside the `tune_*` embedder) and
    `head.json` (see the module docstring); returns `head.json`'s content.
    """
    from safetensors.torch import save_file

    model = loaded.archive.model
    prefix = loaded.embedder_path + "."
    # Cloned: safetensors refuses tensors that share storage, and views of larger tensors.
    head = {
        name: tensor.detach().cpu().contiguous().clone()
        for name, tensor in model.state_dict().items()
        if not name.startswith(prefix)
    }
    save_file(head, str(directory / HEAD_WEIGHTS_NAME), metadata={"embedder": loaded.embedder_path})
    config = loaded.config
    model_config = config.get("model") if isinstance(config.get("model"), dict) else {}
    outer = model.get_submodule(loaded.embedder_path)
    info = {
        "model": model_config.get("type"),
        "model_class": f"{type(model).__module__}.{type(model).__name__}",
        "weights": HEAD_WEIGHTS_NAME,
        "embedder": loaded.embedder_path,
        "embedder_class": type(outer).__name__,
        "embedder_layers": list(loaded.embedder._layers),
        "scalar_mix": SCALAR_MIX_NAME if loaded.embedder._scalar_mix is not None else None,
        "input": (
            "the head reads the embedder's output: the scalar mix of the encoder layers in "
            f"{SCALAR_MIX_NAME} (or the one selected layer)"
            + (
                ", pooled over each word's wordpieces (`pooling` in the config)"
                if isinstance(outer, TuneTransformerMismatchedEmbedder)
                else ""
            )
            + "; load the weights into the model built from `config` with strict=False (the "
            "embedder's weights are in the encoder export)"
        ),
        "tensors": {
            name: {"shape": list(tensor.shape), "dtype": str(tensor.dtype).replace("torch.", "")}
            for name, tensor in head.items()
        },
        "labels": label_vocabulary(model.vocab, config),
        "config": model_config,
    }
    write_json(directory / HEAD_INFO_NAME, info)
    return info
