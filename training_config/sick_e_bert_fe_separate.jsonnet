// Table 4 ablation, SICK-E entailment (accuracy): BERT features for each sentence extracted on its own
// (not jointly as [CLS] a [SEP] b [SEP]); ESIM on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sick_e", "bert", "fe", {pair_encoding: "separate"})
