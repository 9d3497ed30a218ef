// SICK-E entailment (accuracy), fine-tuning.
// ELMo fine-tuned; bi-attention + enhanced pooling + softmax; discriminative rates (0.4x), slanted triangular.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sick_e", "elmo", "ft")
