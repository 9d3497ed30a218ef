// SICK-E entailment (accuracy), BitFit.
// ELMo with only its bias terms trained (BitFit); bi-attention + enhanced pooling + softmax; warmup + linear decay, lr 3e-3.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sick_e", "elmo", "bitfit")
