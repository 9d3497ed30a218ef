"""
The pooled-feature cache: per sentence, every selected layer pooled, for heads that pool first.

A head that pools each sentence before anything else (the light frozen heads,
`tune_frozen_head`) needs from a frozen encoder only, per sentence and selected layer, the mean
of its wordpieces' states and the first wordpiece's state: an entry of shape
`(2, num_layers, dim)` (`POOLINGS` order) in place of the token-level cache's
`(num_layers, num_wordpieces, dim)`, about `2 / wordpieces` of its size. The entries live in
the same `FeatureCache` store (same folder, format, checks, disk budget and tidy rules), under
keys of their own (`POOLED_SELECTION` prefixed to the embedder's layer selection), so a token
entry and a pooled entry of one sentence never collide. For the disk size, an entry counts as
`len(POOLINGS)` wordpieces in `budget.estimated_cache_bytes`.

Why this is exact: the scalar mix is linear, `mix(h)_t = gamma * sum_k w_k h_{k,t}`, so for mean
pooling `mean_t mix(h)_t = gamma * sum_k w_k mean_t h_{k,t}` and for the first token
`mix(h)_0 = gamma * sum_k w_k h_{k,0}`: mixing the pooled layer vectors equals pooling the mixed
sequence. It does not hold with the mix's layer norm (which normalises each layer over the
sequence) or with dropout on the mixed sequence, which `tune_transformer.mix_pooled` refuses and
documents. As with the token-level cache, every pooled vector goes through float16 whether it was
read or computed, so a run gives the same numbers however much is cached.
"""

from typing import Callable, List, Optional, Sequence

import numpy
import torch

from allennlp_tune.modules.feature_cache.store import FeatureCache

# The poolings an entry holds, in its first dimension's order.
POOLINGS = ("mean", "first")
POOLED_SELECTION = "pooled|"


def pool_layers(layers: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:
    """
    Every layer pooled both ways.

    # Parameters

    layers : `torch.Tensor`
        Shape: `(num_layers, batch_size, num_wordpieces, dim)`.
    mask : `torch.BoolTensor`
        Shape: `(batch_size, num_wordpieces)`; `num_wordpieces` may be below the layers' width.

    # Returns

    `(batch_size, 2, num_layers, dim)`: the masked mean over the wordpieces, then the first
    wordpiece's state (`POOLINGS`).
    """
    width = mask.size(1)
    layers = layers[:, :, :width]
    weights = mask.to(layers.dtype)
    # (num_layers, batch_size, dim)
    mean = torch.einsum("lbtd,bt->lbd", layers, weights) / weights.sum(-1).clamp(min=1)[:, None]
    first = layers[:, :, 0]
    # (batch_size, 2, num_layers, dim)
    return torch.stack([mean, first]).permute(2, 0, 1, 3)


def pooled_through_cache(
    cache: Optional[FeatureCache],
    keys: Sequence[str],
    shape: Sequence[int],
    compute: Callable[[List[int]], torch.Tensor],
) -> torch.Tensor:
    """
    The pooled entries of a batch, `(batch_size, 2, num_layers, dim)` float32 on the CPU, each
    through float16. Rows without a usable entry (all rows without a cache) are computed together
    by `compute(rows)`, which returns `(len(rows), 2, num_layers, dim)`, and stored.
    """
    entries: List[Optional[torch.Tensor]] = [
        cache.get(key, shape) if cache is not None else None for key in keys
    ]
    missing = [row for row, entry in enumerate(entries) if entry is None]
    if missing:
        with torch.no_grad():
            computed = compute(missing).to(device="cpu", dtype=torch.float16).numpy()
        for position, row in enumerate(missing):
            if cache is not None:
                entries[row] = cache.put(keys[row], computed[position])
            else:
                entries[row] = torch.from_numpy(computed[position].astype(numpy.float32))
    return torch.stack(entries)  # type: ignore[arg-type]
