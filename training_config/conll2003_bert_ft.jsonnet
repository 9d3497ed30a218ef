// CoNLL-2003 NER (span F1), fine-tuning.
// BERT-base fine-tuned; first wordpiece + softmax; warmup + linear decay.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("conll2003", "bert", "ft")
