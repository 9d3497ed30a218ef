// SST-2 sentiment (accuracy), BitFit.
// ELMo with only its bias terms trained (BitFit); max pooling + softmax; warmup + linear decay, lr 3e-3.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sst2", "elmo", "bitfit")
