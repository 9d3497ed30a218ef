// MultiNLI (matched accuracy), feature extraction.
// ELMo frozen, all layers mixed, each sentence encoded on its own; ESIM on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("mnli", "elmo", "fe")
