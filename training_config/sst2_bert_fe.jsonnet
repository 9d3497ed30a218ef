// SST-2 sentiment (accuracy), feature extraction.
// BERT-base frozen, all layers mixed; BCN on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sst2", "bert", "fe")
