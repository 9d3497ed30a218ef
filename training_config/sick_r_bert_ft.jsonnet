// SICK-R relatedness (Pearson), fine-tuning.
// BERT-base fine-tuned; [CLS] + linear regression (TUNE_POOLING=mean for sentence-embedding models); warmup + linear decay.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sick_r", "bert", "ft")
