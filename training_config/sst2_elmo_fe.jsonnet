// SST-2 sentiment (accuracy), feature extraction.
// ELMo frozen, all layers mixed; BCN on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sst2", "elmo", "fe")
