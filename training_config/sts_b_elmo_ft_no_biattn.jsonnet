// Table 3 ablation, STS-B similarity (Pearson): ELMo fine-tuned without cross-sentence bi-attention: each
// sentence mean- and max-pooled on its own.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sts_b", "elmo", "ft", {bi_attention: false})
