// MRPC paraphrase (accuracy, F1), LoRA.
// BERT-base frozen with trained low-rank adapters (LoRA: r 8, alpha 16); [CLS] + softmax (TUNE_POOLING=mean for sentence-embedding models); warmup + linear decay, lr 1.5e-3.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("mrpc", "bert", "lora")
