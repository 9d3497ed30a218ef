// STS-B similarity (Pearson), feature extraction.
// ELMo frozen, all layers mixed, each sentence encoded on its own; ESIM (regression) on top.
(import "common/experiment.libsonnet").cell("sts_b", "elmo", "fe")
