// MultiNLI (matched accuracy), fine-tuning.
// BERT-base fine-tuned; [CLS] + softmax (TUNE_POOLING=mean for sentence-embedding models); warmup + linear decay.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("mnli", "bert", "ft")
