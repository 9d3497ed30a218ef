"""
The feature cache under a tuned block: a `fine_tuning` transformer embedder whose `tuned_groups`
leaves the embeddings and at least one layer frozen (`"top:2"` of a 6-layer encoder) computes
the frozen layers once per sequence, not once per epoch.

The frozen groups below the lowest tuned one are in eval mode and never change, so their output,
the hidden state that enters the lowest tuned layer, is a function of the input ids alone: the
same as a frozen encoder's features, and cached the same way (`FeatureCache`, one float16 entry
`(1, length, dim)` per sequence). Its key covers the frozen groups' weights only
(`prefix_fingerprint`), since the tuned ones change at every step, and the lowest tuned layer
(another block gets other entries). A row that is missing is computed by running the encoder
without gradients and stopping it as soon as the last frozen layer has given its output (a
forward hook captures it and ends the forward pass: `_Captured`), so the first epoch costs one
frozen forward pass through the prefix on top of the block's own work. Every row goes through
float16, in the epoch that computes it and in those that read it, so all epochs see the same
values; against a run without the cache the block's input differs by float16's rounding.

The block itself runs the transformer's own forward pass, with its frozen layers swapped for a
`ReplayLayer` that returns the cached state (`replayed_prefix`): the model still builds its
attention mask, position embeddings and any relative position bias (MPNet's, DeBERTa's) as it
always does, and the layers above the prefix get exactly what the frozen layers would have
given them. The replay answers in the structure the real layer answers in (a tensor, or a tuple
whose first item is the state: it varies between families and `transformers` releases), read
from the real layer when a row is computed, or from one probe of a single row otherwise.

What it needs: a list of per-layer modules (BERT's `encoder.layer`, DistilBERT's
`transformer.layer`, ModernBERT's `layers`; not ALBERT, whose layers share weights), the top
layer alone as the embedder's output (`layers: "top"`, as the block modes of the experiment
library use), and no folding of long inputs (`max_length`). `check_prefix_cache` refuses the
rest before training.
"""

import logging
from contextlib import contextmanager
from typing import Any, Callable, Iterator, List, Optional, Tuple

import torch
from allennlp.common.checks import ConfigurationError

logger = logging.getLogger(__name__)


class _Captured(Exception):
    """Ends a forward pass once the hooked layer has given its output."""

    def __init__(self, output: Any) -> None:
        super().__init__("captured")
        self.output = output


class ReplayLayer(torch.nn.Module):
    """
    Stands in for the frozen layers below a tuned block during one forward pass: whatever it is
    given, it returns `state` in the real layer's output structure (`structure`: `None` for a
    bare tensor, else the length of the tuple whose first item is the state).
    """

    def __init__(self, state: torch.Tensor, structure: Optional[int]) -> None:
        super().__init__()
        self.state = state
        self.structure = structure

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self.structure is None:
            return self.state
        return (self.state,) + (None,) * (self.structure - 1)


def output_structure(output: Any) -> Optional[int]:
    """`ReplayLayer`'s `structure` of a layer's `output`; a `ConfigurationError` for others."""
    if isinstance(output, torch.Tensor):
        return None
    if isinstance(output, tuple) and output and isinstance(output[0], torch.Tensor):
        return len(output)
    raise ConfigurationError(
        f"a transformer layer returned {type(output).__name__}, not a tensor or a tuple that "
        "starts with one, so the frozen layers below the tuned block cannot be replayed from "
        "the feature cache. Remove feature_cache from this embedder."
    )


def state_of(output: Any) -> torch.Tensor:
    """The hidden state in a layer's output (`output_structure`)."""
    return output if isinstance(output, torch.Tensor) else output[0]


def capture_layer_output(
    layer: torch.nn.Module, run: Callable[[], Any]
) -> Tuple[torch.Tensor, Optional[int]]:
    """
    Runs `run()` (a forward pass of the whole encoder) until `layer` has given its output, and
    returns that output's hidden state and structure; the layers above it do not run.
    """

    def hook(module: torch.nn.Module, inputs: Any, output: Any) -> None:
        raise _Captured(output)

    handle = layer.register_forward_hook(hook)
    try:
        run()
    except _Captured as captured:
        return state_of(captured.output), output_structure(captured.output)
    finally:
        handle.remove()
    raise ConfigurationError(
        "the encoder's forward pass never ran the frozen layer below the tuned block, so its "
        "output cannot be cached. Remove feature_cache from this embedder."
    )


@contextmanager
def replayed_prefix(
    layer_list: torch.nn.ModuleList, count: int, state: torch.Tensor, structure: Optional[int]
) -> Iterator[None]:
    """The first `count` layers of `layer_list` replaced by one `ReplayLayer` of `state`."""
    originals: List[torch.nn.Module] = [layer_list[index] for index in range(count)]
    replay = ReplayLayer(state, structure)
    try:
        for index in range(count):
            layer_list[index] = replay
        yield
    finally:
        for index, layer in enumerate(originals):
            layer_list[index] = layer


def check_prefix_cache(
    owner: str,
    layer_list: Optional[str],
    shared_layers: bool,
    top_layer_only: bool,
    max_length: Optional[int],
) -> None:
    """Refuses a `feature_cache` on a `fine_tuning` embedder that it cannot serve."""
    problem = None
    if shared_layers:
        problem = "its layers share weights (ALBERT), so no frozen layer is apart from the block"
    elif layer_list is None:
        problem = "no list of per-layer modules was found in the encoder"
    elif not top_layer_only:
        problem = 'it mixes layers below the top one (only layers: "top" is served)'
    elif max_length is not None:
        problem = "it folds long inputs (max_length), which the cache does not serve here"
    if problem is not None:
        raise ConfigurationError(
            f"{owner}.feature_cache is set with mode 'fine_tuning', where the cache holds the "
            f"output of the frozen groups below the tuned block; but {problem}. Remove "
            "feature_cache."
        )
