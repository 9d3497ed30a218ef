// MultiNLI (matched accuracy), BitFit.
// BERT-base with only its bias terms trained (BitFit); [CLS] + softmax (TUNE_POOLING=mean for sentence-embedding models); warmup + linear decay, lr 3e-3.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("mnli", "bert", "bitfit")
