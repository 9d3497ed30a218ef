// STS-B similarity (Pearson), BitFit.
// ELMo with only its bias terms trained (BitFit); bi-attention + enhanced pooling + regression; warmup + linear decay, lr 3e-3.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sts_b", "elmo", "bitfit")
