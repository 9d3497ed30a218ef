// basic_classifier over `tune_transformer` (wordpiece level, [CLS] pooling) on the tiny BERT.
// Frozen with the feature cache as written; the tests override `mode` for fine-tuning.
// Run from the repository root with TUNE_MODELS_DIR=fixtures/models.
local model = std.extVar("TUNE_MODELS_DIR") + "/bert-cased";
local data = "tests/fixtures_configs/embedders/text_classification.jsonl";

{
  dataset_reader: {
    type: "text_classification_json",
    tokenizer: {type: "pretrained_transformer", model_name: model},
    token_indexers: {tokens: {type: "pretrained_transformer", model_name: model}},
  },
  train_data_path: data,
  validation_data_path: data,
  model: {
    type: "basic_classifier",
    namespace: "tags",  // the wordpiece vocabulary, as the indexer fills it
    text_field_embedder: {
      token_embedders: {
        tokens: {
          type: "tune_transformer",
          model_name: model,
          mode: "feature_extraction",
          layers: "all",
          dropout: 0.1,
          feature_cache: {},
        },
      },
    },
    seq2vec_encoder: {type: "cls_pooler", embedding_dim: 16},
  },
  data_loader: {batch_size: 4, shuffle: true},
  trainer: {optimizer: {type: "adam", lr: 0.01}, num_epochs: 2, cuda_device: -1},
}
