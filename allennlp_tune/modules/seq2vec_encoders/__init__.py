"""Seq2VecEncoders AllenNLP lacks: `max_pooling`."""

from allennlp_tune.modules.seq2vec_encoders.max_pooling import MaxPoolingEncoder

__all__ = ["MaxPoolingEncoder"]
