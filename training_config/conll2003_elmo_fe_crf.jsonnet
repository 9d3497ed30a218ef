// Table 5 ablation: ELMo feature extraction + CRF, without the BiLSTM.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("conll2003", "elmo", "fe", {bilstm: false})
