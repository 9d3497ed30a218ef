from typing import Optional

import torch
from allennlp.modules.seq2vec_encoders.seq2vec_encoder import Seq2VecEncoder
from allennlp.nn.util import masked_max


@Seq2VecEncoder.register("max_pooling")
class MaxPoolingEncoder(Seq2VecEncoder):
    """
    Element-wise max over the time dimension of the unmasked positions: the paper's ELMo
    fine-tuning head for text classification ("we max-pool over the LM states and add a softmax
    layer"). Padding never wins the max; a sequence with no unmasked position gives zeros. No
    parameters. AllenNLP has `boe` (sum or mean) and `cls_pooler`, but no max pooling.

    Input `(batch_size, num_tokens, embedding_dim)`, output `(batch_size, embedding_dim)`.

    Registered as a `Seq2VecEncoder` with name "max_pooling".

    ```jsonnet
    "seq2vec_encoder": {"type": "max_pooling", "embedding_dim": 1024}
    ```

    # Parameters

    embedding_dim : `int`
        The input (and output) dimension.
    """

    def __init__(self, embedding_dim: int) -> None:
        super().__init__()
        self._embedding_dim = embedding_dim

    def get_input_dim(self) -> int:
        return self._embedding_dim

    def get_output_dim(self) -> int:
        return self._embedding_dim

    def forward(
        self, tokens: torch.Tensor, mask: Optional[torch.BoolTensor] = None
    ) -> torch.Tensor:
        if mask is None:
            return tokens.max(dim=1)[0]
        mask = mask.bool()
        pooled = masked_max(tokens, mask.unsqueeze(-1), dim=1)
        # An empty sequence would otherwise give the dtype's minimum value.
        return pooled * mask.any(dim=1, keepdim=True)
