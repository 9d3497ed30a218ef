// Table 4 ablation, MRPC paraphrase (accuracy, F1): BERT features for each sentence extracted on its own
// (not jointly as [CLS] a [SEP] b [SEP]); ESIM on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("mrpc", "bert", "fe", {pair_encoding: "separate"})
