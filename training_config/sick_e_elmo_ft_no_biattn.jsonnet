// Table 3 ablation, SICK-E entailment (accuracy): ELMo fine-tuned without cross-sentence bi-attention: each
// sentence mean- and max-pooled on its own.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("sick_e", "elmo", "ft", {bi_attention: false})
