// SICK-R relatedness (Pearson), BitFit.
// BERT-base with only its bias terms trained (BitFit); [CLS] + linear regression (TUNE_POOLING=mean for sentence-embedding models); warmup + linear decay, lr 3e-3.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sick_r", "bert", "bitfit")
