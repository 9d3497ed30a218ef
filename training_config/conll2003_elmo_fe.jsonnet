// CoNLL-2003 NER (span F1), feature extraction.
// ELMo frozen, all layers mixed; BiLSTM + CRF on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("conll2003", "elmo", "fe")
