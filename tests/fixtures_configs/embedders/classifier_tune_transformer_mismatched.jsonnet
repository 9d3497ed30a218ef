// basic_classifier over `tune_transformer_mismatched` (word level, first-wordpiece pooling,
// averaged bag of words) on the tiny BERT. Run from the repository root with
// TUNE_MODELS_DIR=fixtures/models.
local model = std.extVar("TUNE_MODELS_DIR") + "/bert-cased";
local data = "tests/fixtures_configs/embedders/text_classification.jsonl";

{
  dataset_reader: {
    type: "text_classification_json",
    tokenizer: {type: "whitespace"},
    token_indexers: {tokens: {type: "pretrained_transformer_mismatched", model_name: model}},
  },
  train_data_path: data,
  validation_data_path: data,
  model: {
    type: "basic_classifier",
    namespace: "tags",  // the wordpiece vocabulary, as the indexer fills it
    text_field_embedder: {
      token_embedders: {
        tokens: {
          type: "tune_transformer_mismatched",
          model_name: model,
          pooling: "first",
          mode: "feature_extraction",
          layers: "all",
          feature_cache: {},
        },
      },
    },
    seq2vec_encoder: {type: "bag_of_embeddings", embedding_dim: 16, averaged: true},
  },
  data_loader: {batch_size: 4, shuffle: true},
  trainer: {optimizer: {type: "adam", lr: 0.01}, num_epochs: 2, cuda_device: -1},
}
