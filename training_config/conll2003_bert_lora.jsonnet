// CoNLL-2003 NER (span F1), LoRA.
// BERT-base frozen with trained low-rank adapters (LoRA: r 8, alpha 16); first wordpiece + softmax; warmup + linear decay, lr 1.5e-3.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("conll2003", "bert", "lora")
