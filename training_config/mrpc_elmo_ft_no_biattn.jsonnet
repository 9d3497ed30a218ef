// Table 3 ablation, MRPC paraphrase (accuracy, F1): ELMo fine-tuned without cross-sentence bi-attention: each
// sentence mean- and max-pooled on its own.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("mrpc", "elmo", "ft", {bi_attention: false})
