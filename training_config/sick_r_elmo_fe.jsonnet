// SICK-R relatedness (Pearson), feature extraction.
// ELMo frozen, all layers mixed, each sentence encoded on its own; ESIM (regression) on top.
(import "common/experiment.libsonnet").cell("sick_r", "elmo", "fe")
