// Table 5 ablation: ELMo fine-tuning + BiLSTM + CRF, with gradual unfreezing.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("conll2003", "elmo", "ft", {bilstm: true})
