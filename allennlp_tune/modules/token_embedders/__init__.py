"""Freezable pretrained token embedders: BERT-family (wordpiece and word level) and ELMo."""

from allennlp_tune.modules.feature_cache import FeatureCache
from allennlp_tune.modules.token_embedders.tune_elmo import TuneElmoEmbedder
from allennlp_tune.modules.token_embedders.tune_transformer import TuneTransformerEmbedder
from allennlp_tune.modules.token_embedders.tune_transformer_mismatched import (
    TuneTransformerMismatchedEmbedder,
)

__all__ = [
    "FeatureCache",
    "TuneElmoEmbedder",
    "TuneTransformerEmbedder",
    "TuneTransformerMismatchedEmbedder",
]
