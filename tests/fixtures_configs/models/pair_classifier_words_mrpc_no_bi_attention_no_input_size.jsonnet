// pair_classifier_words_mrpc_no_bi_attention without any input size: the encoder's comes from the
// embedder, the pair encoder's from the encoder's output.
std.mergePatch(
  import "pair_classifier_words_mrpc_no_bi_attention.jsonnet",
  {model: {encoder: {input_size: null}, pair_encoder: {input_dim: null}}},
)
