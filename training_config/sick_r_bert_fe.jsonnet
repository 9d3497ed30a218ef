// SICK-R relatedness (Pearson), feature extraction.
// BERT-base frozen, all layers mixed, the pair encoded jointly; ESIM (regression) on top.
(import "common/experiment.libsonnet").cell("sick_r", "bert", "fe")
