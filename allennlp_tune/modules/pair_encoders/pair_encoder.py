import torch
from allennlp.common import Registrable


class PairEncoder(torch.nn.Module, Registrable):
    """
    Turns two encoded sentences into one vector for a pair classifier or regressor: the part of
    a sentence-pair model between the (separately run) encoder and the output layer.

    `forward(premise, premise_mask, hypothesis, hypothesis_mask)` takes two sequences of shape
    `(batch_size, length, input_dim)` with their masks and returns `(batch_size, output_dim)`;
    an implementation defines it (torch's `Module.forward` raises until then).

    The base class is not a component itself; the default implementation is
    `bi_attention_pair`. An implementation takes its input size as `input_dim`: the model that
    builds it (`pair_classifier`) passes the width of the states it reads unless the config
    gives one.
    """

    default_implementation = "bi_attention_pair"

    def get_input_dim(self) -> int:
        raise NotImplementedError

    def get_output_dim(self) -> int:
        raise NotImplementedError
