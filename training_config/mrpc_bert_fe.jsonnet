// MRPC paraphrase (accuracy, F1), feature extraction.
// BERT-base frozen, all layers mixed, the pair encoded jointly; ESIM on top.
(import "common/experiment.libsonnet").cell("mrpc", "bert", "fe")
