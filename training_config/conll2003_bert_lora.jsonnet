// CoNLL-2003 NER (span F1), LoRA.
// BERT-base frozen with trained low-rank adapters (LoRA: r 8, alpha 16); first wordpiece + softmax; warmup + linear decay, lr 1.5e-3.
// For tagging, 5 epochs at the sentence-pair rate under-train this mode (docs/results/NOTEBOOK.md
// section 9):
// search TUNE_LR and TUNE_EPOCHS (allennlp tune-search) before reading its score.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("conll2003", "bert", "lora")
