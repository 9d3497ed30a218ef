// MRPC paraphrase (accuracy, F1), feature extraction.
// BERT-base frozen, all layers mixed, the pair encoded jointly; ESIM on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("mrpc", "bert", "fe")
