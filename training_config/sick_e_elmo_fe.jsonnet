// SICK-E entailment (accuracy), feature extraction.
// ELMo frozen, all layers mixed, each sentence encoded on its own; ESIM on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sick_e", "elmo", "fe")
