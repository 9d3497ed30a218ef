// CoNLL-2003 NER (span F1), feature extraction.
// ELMo frozen, all layers mixed; BiLSTM + CRF on top.
(import "common/experiment.libsonnet").cell("conll2003", "elmo", "fe")
