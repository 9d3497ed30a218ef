// tune_tagger_bert_feature_extraction without the wordpiece_encoder's input_size: tune_tagger
// takes it from the embedder (BERT's hidden size).
std.mergePatch(
  import "tune_tagger_bert_feature_extraction.jsonnet",
  {model: {wordpiece_encoder: {input_size: null}}},
)
