// SICK-R relatedness (Pearson), stack-then-finetune.
// BERT-base: the fine-tuning head trained on the frozen encoder first, then everything fine-tuned.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sick_r", "bert", "sf")
