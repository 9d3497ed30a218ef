// Table 4 ablation, STS-B similarity (Pearson): BERT features for each sentence extracted on its own
// (not jointly as [CLS] a [SEP] b [SEP]); ESIM on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sts_b", "bert", "fe", {pair_encoding: "separate"})
