// Table 5 ablation: ELMo fine-tuning + CRF, without gradual unfreezing.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("conll2003", "elmo", "ft", {gradual_unfreezing: false})
