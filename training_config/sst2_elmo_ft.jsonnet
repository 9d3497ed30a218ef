// SST-2 sentiment (accuracy), fine-tuning.
// ELMo fine-tuned; max pooling + softmax; discriminative rates (0.4x), slanted triangular, gradual unfreezing.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sst2", "elmo", "ft")
