"""Pair encoders: two encoded sentences -> one vector (`bi_attention_pair`)."""

from allennlp_tune.modules.pair_encoders.bi_attention_pair import BiAttentionPair
from allennlp_tune.modules.pair_encoders.pair_encoder import PairEncoder

__all__ = ["BiAttentionPair", "PairEncoder"]
