// CoNLL-2003 NER (span F1), BitFit.
// ELMo with only its bias terms trained (BitFit); CRF on the LSTM states; warmup + linear decay, lr 3e-3.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("conll2003", "elmo", "bitfit")
