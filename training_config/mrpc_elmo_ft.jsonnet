// MRPC paraphrase (accuracy, F1), fine-tuning.
// ELMo fine-tuned; bi-attention + enhanced pooling + softmax; discriminative rates (0.4x), slanted triangular.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("mrpc", "elmo", "ft")
