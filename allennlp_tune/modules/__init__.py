"""
Modules: the freezable token embedders (`tune_transformer`, `tune_transformer_mismatched`,
`tune_elmo`), the pair encoders (`bi_attention_pair`) and the extra seq2vec encoders
(`max_pooling`). Importing this package registers all of them.
"""

from allennlp_tune.modules import pair_encoders, seq2vec_encoders, token_embedders  # noqa: F401
