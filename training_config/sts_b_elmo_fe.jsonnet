// STS-B similarity (Pearson), feature extraction.
// ELMo frozen, all layers mixed, each sentence encoded on its own; ESIM (regression) on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sts_b", "elmo", "fe")
