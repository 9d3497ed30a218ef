"""
Task models: the paper's feature-extraction networks (`tune_bcn`, `tune_esim`,
`esim_regression`, `tune_crf_tagger`, `tune_tagger` with a wordpiece BiLSTM), the light frozen
heads (`tune_frozen_head`: a layer mix of pooled sentences, then linear or one hidden layer) and
the light fine-tuning heads (`pooled_classifier`, `pair_classifier`, `tune_tagger`,
`tune_crf_tagger`).
"""

from allennlp_tune.models.esim_regression import EsimRegression
from allennlp_tune.models.frozen_head import FrozenHead
from allennlp_tune.models.pair_classifier import PairClassifier
from allennlp_tune.models.pooled_classifier import PooledClassifier
from allennlp_tune.models.tune_bcn import TuneBcn
from allennlp_tune.models.tune_crf_tagger import TuneCrfTagger
from allennlp_tune.models.tune_esim import TuneEsim
from allennlp_tune.models.tune_tagger import TuneTagger

__all__ = [
    "EsimRegression",
    "FrozenHead",
    "PairClassifier",
    "PooledClassifier",
    "TuneBcn",
    "TuneCrfTagger",
    "TuneEsim",
    "TuneTagger",
]
