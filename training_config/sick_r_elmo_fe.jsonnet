// SICK-R relatedness (Pearson), feature extraction.
// ELMo frozen, all layers mixed, each sentence encoded on its own; ESIM (regression) on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sick_r", "elmo", "fe")
