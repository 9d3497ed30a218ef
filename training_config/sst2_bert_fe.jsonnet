// SST-2 sentiment (accuracy), feature extraction.
// BERT-base frozen, all layers mixed; BCN on top.
(import "common/experiment.libsonnet").cell("sst2", "bert", "fe")
