// STS-B similarity (Pearson), fine-tuning.
// ELMo fine-tuned; bi-attention + enhanced pooling + regression; discriminative rates (0.4x), slanted triangular.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sts_b", "elmo", "ft")
