"""
Builds the first layer of a model that reads the embeddings (ESIM's and the taggers' LSTMs,
BCN's `pre_encode_feedforward`, the pair classifier's `pair_encoder`) with its input size taken
from the embedder, in the process that builds the model, so a config need not spell the
encoder's width out (BERT-base 768, BERT-large 1024, DistilBERT's `dim`, ELMo 1024, ...).
Not registered itself.

The models take such a layer as `Lazy[...]` and call `build_reading`: a size left out of the
config is supplied as a constructor extra (`input_size` and `input_dim`, whichever the layer
takes); a size the config gives is used as it stands (AllenNLP's `Lazy.construct` lets the
config win over an extra), so older configs and archives build exactly the same modules, and a
size that disagrees with the embedder is a `ConfigurationError` naming both.
"""

from typing import Optional, TypeVar, Union

import torch
from allennlp.common import Lazy
from allennlp.common.checks import ConfigurationError

from allennlp_tune.host_access import lazy_params

# The constructor arguments that name a layer's input size: `input_size` for AllenNLP's RNN
# encoders (lstm, gru, stacked_bidirectional_lstm, ...), `input_dim` for FeedForward,
# pass_through, pytorch_transformer, gated-cnn-encoder and the pair encoders.
SIZE_KEYS = ("input_size", "input_dim")

ModuleT = TypeVar("ModuleT", bound=torch.nn.Module)


def build_reading(
    module: Union[Lazy[ModuleT], ModuleT, None], input_dim: int, name: str, source: str
) -> Optional[ModuleT]:
    """
    Builds `module` to read `input_dim`-dimensional vectors and checks that it does.

    # Parameters

    module : `Lazy[ModuleT]`, `ModuleT` or `None`
        The layer from the config (`Lazy`), an already built layer (Python callers), or `None`
        (returned as is).
    input_dim : `int`
        The width of what the layer reads: the embedder's `get_output_dim()` (plus ELMo's for
        BCN with `use_input_elmo`), or the output of the layer before it.
    name : `str`
        The layer's key under `model`, for the error message (e.g. `"encoder"`).
    source : `str`
        What produces the vectors, for the error message (e.g. `"text_field_embedder"`).

    # Returns

    The built layer, whose `get_input_dim()` is `input_dim`.
    """
    if module is None:
        return None
    given_key = None
    if isinstance(module, Lazy):
        config = lazy_params(module)
        given = [key for key in SIZE_KEYS if key in config]
        given_key = given[0] if given else None
        # Only the sizes the config leaves out: for one it gives, the config wins anyway, and
        # AllenNLP would log that the key is "found in both **extras and in params".
        module = module.construct(**{key: input_dim for key in SIZE_KEYS if key not in given})
    size = module.get_input_dim()  # type: ignore[operator]
    if size != input_dim:
        where = f"model.{name}.{given_key}" if given_key else f"model.{name}'s input dim"
        raise ConfigurationError(
            f"{where} is {size}, but the {source} outputs {input_dim}: {name} input dim must "
            f"match {source} output dim. Leave {given_key or 'the input size'} out of "
            f"model.{name} (it is then taken from the {source}), or set it to {input_dim}."
        )
    return module
