// basic_classifier over `tune_elmo` (all three layers mixed, averaged bag of words) on the tiny
// ELMo. Run from the repository root with TUNE_MODELS_DIR=fixtures/models.
local elmo = std.extVar("TUNE_MODELS_DIR") + "/elmo";
local data = "tests/fixtures_configs/embedders/text_classification.jsonl";

{
  dataset_reader: {
    type: "text_classification_json",
    tokenizer: {type: "whitespace"},
    // "tokens" only gives basic_classifier the word ids it reports; it is embedded as nothing.
    token_indexers: {tokens: {type: "single_id"}, elmo: {type: "elmo_characters"}},
  },
  train_data_path: data,
  validation_data_path: data,
  model: {
    type: "basic_classifier",
    text_field_embedder: {
      token_embedders: {
        tokens: {type: "empty"},
        elmo: {
          type: "tune_elmo",
          options_file: elmo + "/options.json",
          weight_file: elmo + "/weights.hdf5",
          mode: "feature_extraction",
          layers: "all",
          dropout: 0.1,
          feature_cache: {},
        },
      },
    },
    seq2vec_encoder: {type: "bag_of_embeddings", embedding_dim: 16, averaged: true},
  },
  data_loader: {batch_size: 4, shuffle: true},
  trainer: {optimizer: {type: "adam", lr: 0.01}, num_epochs: 2, cuda_device: -1},
}
