// Table 3 ablation, SICK-R relatedness (Pearson): ELMo fine-tuned without cross-sentence bi-attention: each
// sentence mean- and max-pooled on its own.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sick_r", "elmo", "ft", {bi_attention: false})
