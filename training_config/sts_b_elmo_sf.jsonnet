// STS-B similarity (Pearson), stack-then-finetune.
// ELMo: the fine-tuning head trained on the frozen encoder first, then everything fine-tuned.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sts_b", "elmo", "sf")
