"""
What the planner knows of a config's encoder without loading a weight: the token embedder in
the rendered model config (`find_embedder`), and its layers, width and parameters from the
encoder's `config.json` (`transformer_size`) or ELMo's options file (`elmo_size`). A folder
holding `config.json` and the tokenizer files is enough to plan a cell.
"""

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Optional

TRANSFORMER_EMBEDDERS = (
    "tune_transformer",
    "tune_transformer_mismatched",
    "pretrained_transformer",
    "pretrained_transformer_mismatched",
)
ELMO_EMBEDDERS = ("tune_elmo", "elmo_token_embedder")


@dataclass
class EncoderSize:
    """What the planner knows of an encoder, from its config.json (or ELMo options) alone."""

    name: str
    family: str  # "transformer" or "elmo"
    num_layers: int  # hidden layers (transformer) or biLSTM layers (ELMo)
    hidden_size: int  # the width of one layer's features
    params: Optional[int] = None  # estimated from the config; None where unknown
    # The most wordpieces one input may have (a transformer's `max_position_embeddings`).
    max_positions: Optional[int] = None

    @property
    def work_scale(self) -> Optional[float]:
        """L x H^2, the FLOP scale of one wordpiece through the encoder (transformers only)."""
        if self.family != "transformer":
            return None
        return float(self.num_layers * self.hidden_size**2)

    @property
    def linear_work_scale(self) -> Optional[float]:
        """
        L x H, the scale of the per-wordpiece work that grows with the width, not its square
        (attention over the sequence, layer norms, activations, what a narrow encoder's small
        matrix products lose to overhead): the cost model's second term (transformers only).
        """
        if self.family != "transformer":
            return None
        return float(self.num_layers * self.hidden_size)


def _bert_layout_params(config) -> int:
    """
    Parameters of a BERT-layout encoder from its configuration, without the pooler: the
    embeddings (with ALBERT's or ELECTRA-small's projection when they are narrower than the
    layers) plus `L` x (attention, feed-forward, layer norms). Exact for BERT and MiniLM; close
    for the other families, whose layers differ in small parts.
    """
    hidden = int(config.hidden_size)
    layers = int(config.num_hidden_layers)
    inner = int(getattr(config, "intermediate_size", None) or 4 * hidden)
    embedding = int(getattr(config, "embedding_size", None) or hidden)
    vocab = int(getattr(config, "vocab_size", 0) or 0)
    positions = int(getattr(config, "max_position_embeddings", 0) or 0)
    types = int(getattr(config, "type_vocab_size", 0) or 0)
    embeddings = (vocab + positions + types) * embedding + 2 * embedding
    if embedding != hidden:  # ALBERT / ELECTRA-small project the embeddings
        embeddings += embedding * hidden + hidden
    per_layer = 4 * hidden * hidden + 4 * hidden + 2 * hidden * inner + inner + hidden + 4 * hidden
    return embeddings + layers * per_layer


def transformer_size(model_name: str) -> EncoderSize:
    """The encoder's layers, width and (estimated) parameters from its config.json only."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_name)
    return EncoderSize(
        name=model_name,
        family="transformer",
        num_layers=int(config.num_hidden_layers),
        hidden_size=int(config.hidden_size),
        params=_bert_layout_params(config),
        max_positions=getattr(config, "max_position_embeddings", None) or None,
    )


def elmo_size(options_file: str) -> Optional[EncoderSize]:
    """ELMo's biLSTM layers and feature width (2 x projection) from a local options file."""
    if not options_file or "://" in options_file or not os.path.isfile(options_file):
        return None
    with open(options_file, encoding="utf-8") as options:
        lstm = json.load(options)["lstm"]
    return EncoderSize(
        name=options_file,
        family="elmo",
        num_layers=int(lstm["n_layers"]),
        hidden_size=2 * int(lstm["projection_dim"]),
    )


def find_embedder(config: Any) -> Optional[Dict[str, Any]]:
    """The first transformer or ELMo token embedder in a rendered model config."""
    if isinstance(config, dict):
        if config.get("type") in TRANSFORMER_EMBEDDERS + ELMO_EMBEDDERS and (
            "model_name" in config or "options_file" in config
        ):
            return config
        values: Iterable[Any] = config.values()
    elif isinstance(config, list):
        values = config
    else:
        return None
    for value in values:
        found = find_embedder(value)
        if found is not None:
            return found
    return None


__all__ = [
    "ELMO_EMBEDDERS",
    "TRANSFORMER_EMBEDDERS",
    "EncoderSize",
    "elmo_size",
    "find_embedder",
    "transformer_size",
]
