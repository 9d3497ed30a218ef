// pair_classifier_elmo_sick_relatedness without the pair encoder's input_dim: pair_classifier
// takes it from the embedder.
std.mergePatch(
  import "pair_classifier_elmo_sick_relatedness.jsonnet",
  {model: {pair_encoder: {input_dim: null}}},
)
