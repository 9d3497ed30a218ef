"""A toy layered embedder with the layer-group API, for testing the adaptation schedules on their
own (the real embedders are tested with them through configs). Not imported by `allennlp_tune`:
import `allennlp_tune.testing` (or `--include-package allennlp_tune.testing`) to register it."""

from typing import List, Optional

import torch
from allennlp.data import Vocabulary
from allennlp.modules import ScalarMix
from allennlp.modules.token_embedders import TokenEmbedder

from allennlp_tune.modules.layer_groups import register_layer_group_provider


@TokenEmbedder.register("tune_toy_layered", exist_ok=True)
class ToyLayeredEmbedder(TokenEmbedder):
    """Embedding + `num_layers` linear layers, all layers mixed; groups bottom to top."""

    def __init__(self, vocab: Vocabulary, dim: int = 4, num_layers: int = 3, frozen: bool = False):
        super().__init__()
        self.embeddings = torch.nn.Embedding(vocab.get_vocab_size("tokens"), dim)
        self.layers = torch.nn.ModuleList(torch.nn.Linear(dim, dim) for _ in range(num_layers))
        self.scalar_mix = ScalarMix(num_layers + 1)
        self.dim = dim
        register_layer_group_provider(self)
        if frozen:
            self.freeze()

    def layer_groups(self):
        groups = [("embeddings", list(self.embeddings.named_parameters()))]
        groups += [
            (f"layer_{i}", list(layer.named_parameters())) for i, layer in enumerate(self.layers)
        ]
        return groups

    def freeze(self) -> None:
        for _, params in self.layer_groups():
            for _, param in params:
                param.requires_grad_(False)

    def unfreeze(self, top_k_groups: Optional[int] = None) -> None:
        groups = self.layer_groups()
        k = len(groups) if top_k_groups is None else top_k_groups
        for _, params in groups[len(groups) - k :]:
            for _, param in params:
                param.requires_grad_(True)

    def trainable_groups(self) -> List[int]:
        return [i for i, (_, ps) in enumerate(self.layer_groups()) if ps[0][1].requires_grad]

    def get_output_dim(self) -> int:
        return self.dim

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden = [self.embeddings(tokens)]
        for layer in self.layers:
            hidden.append(torch.tanh(layer(hidden[-1])))
        return self.scalar_mix(hidden)
