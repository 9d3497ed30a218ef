// CoNLL-2003 NER (span F1), feature extraction.
// BERT-base frozen, all layers mixed; BiLSTM over wordpieces, first wordpiece + softmax on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("conll2003", "bert", "fe")
