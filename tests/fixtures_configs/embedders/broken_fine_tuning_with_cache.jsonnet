// Broken on purpose: a feature cache with a trained encoder. Building it must fail with a
// ConfigurationError that names feature_cache and the fix.
(import "classifier_tune_transformer.jsonnet") + {
  model+: {
    text_field_embedder+: {
      token_embedders+: {tokens+: {mode: "fine_tuning", feature_cache: {}}},
    },
  },
}
