"""Predictors for `allennlp predict` on every allennlp-tune archive, with checked JSON input."""

from allennlp_tune.predictors.tune_sentence_tagger import TuneSentenceTaggerPredictor
from allennlp_tune.predictors.tune_text_classifier import TuneTextClassifierPredictor

__all__ = ["TuneSentenceTaggerPredictor", "TuneTextClassifierPredictor"]
