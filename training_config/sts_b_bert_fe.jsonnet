// STS-B similarity (Pearson), feature extraction.
// BERT-base frozen, all layers mixed, the pair encoded jointly; ESIM (regression) on top.
(import "common/experiment.libsonnet").cell("sts_b", "bert", "fe")
