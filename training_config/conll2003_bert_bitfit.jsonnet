// CoNLL-2003 NER (span F1), BitFit.
// BERT-base with only its bias terms trained (BitFit); first wordpiece + softmax; warmup + linear decay, lr 3e-3.
// For tagging, 5 epochs at the sentence-pair rate under-train this mode (docs/results/NOTEBOOK.md
// section 9):
// search TUNE_LR and TUNE_EPOCHS (allennlp tune-search) before reading its score.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("conll2003", "bert", "bitfit")
