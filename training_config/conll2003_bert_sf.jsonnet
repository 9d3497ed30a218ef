// CoNLL-2003 NER (span F1), stack-then-finetune.
// BERT-base: the fine-tuning head trained on the frozen encoder first, then everything fine-tuned.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("conll2003", "bert", "sf")
