// Table 4 ablation, SICK-R relatedness (Pearson): BERT features for each sentence extracted on its own
// (not jointly as [CLS] a [SEP] b [SEP]); ESIM on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sick_r", "bert", "fe", {pair_encoding: "separate"})
