// SICK-R relatedness (Pearson), feature extraction.
// BERT-base frozen, all layers mixed, the pair encoded jointly; ESIM (regression) on top.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sick_r", "bert", "fe")
