from typing import Tuple

import torch
from allennlp.nn.util import masked_max, masked_softmax, weighted_sum

from allennlp_tune.modules.pair_encoders.pair_encoder import PairEncoder


@PairEncoder.register("bi_attention_pair")
class BiAttentionPair(PairEncoder):
    """
    The paper's ELMo fine-tuning head for sentence pairs, without any parameters of its own:
    cross-sentence bi-attention between the two encoded sentences, then ESIM's "enhanced"
    pooling (Chen et al., 2017).

    For premise states `a` (length m) and hypothesis states `b` (length n):

    1. similarities `e_ij = a_i . b_j` (dot product, as ESIM's default);
    2. `a~_i = sum_j softmax_j(e_ij) b_j` and `b~_j = sum_i softmax_i(e_ij) a_i`, each softmax
       over the other sentence's unmasked positions only;
    3. enhancement `m_a = [a; a~; a - a~; a * a~]`, `m_b = [b; b~; b - b~; b * b~]`;
    4. mean and max of `m_a` and `m_b` over their unmasked positions, concatenated as in ESIM:
       `[mean(m_a); max(m_a); mean(m_b); max(m_b)]`.

    Output dimension: `16 * input_dim` (with `bi_attention: false`, `4 * input_dim`).

    Padding positions are zeroed first, get exactly zero attention, and are left out of both
    poolings, so whatever an encoder leaves there cannot change the result.

    Registered as a `PairEncoder` with name "bi_attention_pair" (the default `PairEncoder`).

    ```jsonnet
    // in pair_classifier, which supplies input_dim
    "pair_encoder": {"type": "bi_attention_pair", "bi_attention": true}
    ```

    # Parameters

    input_dim : `int`
        Dimension of each sentence's encoded states (the embedder's output, or the pair
        model's `encoder` output). `pair_classifier` passes it when it builds the pair encoder,
        so its config leaves it out; a config that gives it must match.
    bi_attention : `bool`, optional (default = `True`)
        `false` gives the paper's Table 3 ablation ("w/o bi-attn."): each sentence is only
        mean- and max-pooled on its own, `[mean(a); max(a); mean(b); max(b)]`.
    """

    def __init__(self, input_dim: int, bi_attention: bool = True) -> None:
        super().__init__()
        self._input_dim = input_dim
        self._bi_attention = bi_attention

    def get_input_dim(self) -> int:
        return self._input_dim

    def get_output_dim(self) -> int:
        return self._input_dim * (16 if self._bi_attention else 4)

    def attend(
        self,
        premise: torch.Tensor,
        premise_mask: torch.BoolTensor,
        hypothesis: torch.Tensor,
        hypothesis_mask: torch.BoolTensor,
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """
        The bi-attention step alone. Returns `(attended_hypothesis, attended_premise,
        premise_to_hypothesis, hypothesis_to_premise)`: `a~` `(batch, m, dim)`, `b~`
        `(batch, n, dim)`, and the attention weights `(batch, m, n)` and `(batch, n, m)`.
        """
        premise_mask, hypothesis_mask = premise_mask.bool(), hypothesis_mask.bool()
        premise = premise.masked_fill(~premise_mask.unsqueeze(-1), 0.0)
        hypothesis = hypothesis.masked_fill(~hypothesis_mask.unsqueeze(-1), 0.0)
        similarities = premise.bmm(hypothesis.transpose(1, 2))
        # memory_efficient: masked scores are replaced before the softmax, so large negative
        # similarities cannot underflow the unmasked ones to zero.
        premise_to_hypothesis = masked_softmax(similarities, hypothesis_mask, memory_efficient=True)
        hypothesis_to_premise = masked_softmax(
            similarities.transpose(1, 2), premise_mask, memory_efficient=True
        )
        attended_hypothesis = weighted_sum(hypothesis, premise_to_hypothesis)
        attended_premise = weighted_sum(premise, hypothesis_to_premise)
        return attended_hypothesis, attended_premise, premise_to_hypothesis, hypothesis_to_premise

    def forward(  # type: ignore[override]
        self,
        premise: torch.Tensor,
        premise_mask: torch.BoolTensor,
        hypothesis: torch.Tensor,
        hypothesis_mask: torch.BoolTensor,
    ) -> torch.Tensor:
        premise_mask, hypothesis_mask = premise_mask.bool(), hypothesis_mask.bool()
        if self._bi_attention:
            attended_hypothesis, attended_premise, _, _ = self.attend(
                premise, premise_mask, hypothesis, hypothesis_mask
            )
            premise = _enhance(premise, attended_hypothesis)
            hypothesis = _enhance(hypothesis, attended_premise)
        return torch.cat(
            [*_mean_and_max(premise, premise_mask), *_mean_and_max(hypothesis, hypothesis_mask)],
            dim=-1,
        )


def _enhance(states: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
    return torch.cat([states, attended, states - attended, states * attended], dim=-1)


def _mean_and_max(states: torch.Tensor, mask: torch.BoolTensor) -> Tuple[torch.Tensor, ...]:
    # masked_fill, not multiplication: a non-finite value at a padding position must not leak.
    states = states.masked_fill(~mask.unsqueeze(-1), 0.0)
    lengths = mask.sum(dim=1, keepdim=True).clamp(min=1)
    mean = states.sum(dim=1) / lengths
    maximum = masked_max(states, mask.unsqueeze(-1), dim=1) * mask.any(dim=1, keepdim=True)
    return mean, maximum
