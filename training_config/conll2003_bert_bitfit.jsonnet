// CoNLL-2003 NER (span F1), BitFit.
// BERT-base with only its bias terms trained (BitFit); first wordpiece + softmax; warmup + linear decay, lr 1e-3.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("conll2003", "bert", "bitfit")
