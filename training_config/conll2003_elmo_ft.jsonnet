// CoNLL-2003 NER (span F1), fine-tuning.
// ELMo fine-tuned; CRF on the LSTM states; discriminative rates (0.4x), slanted triangular, gradual unfreezing.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("conll2003", "elmo", "ft")
