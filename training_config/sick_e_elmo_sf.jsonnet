// SICK-E entailment (accuracy), stack-then-finetune.
// ELMo: the fine-tuning head trained on the frozen encoder first, then everything fine-tuned.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sick_e", "elmo", "sf")
