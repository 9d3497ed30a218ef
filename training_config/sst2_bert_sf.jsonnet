// SST-2 sentiment (accuracy), stack-then-finetune.
// BERT-base: the fine-tuning head trained on the frozen encoder first, then everything fine-tuned.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sst2", "bert", "sf")
