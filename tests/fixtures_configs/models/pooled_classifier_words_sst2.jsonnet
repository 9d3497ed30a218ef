// SST-2 with word embeddings, max pooling, softmax: a fast archive for the predictor tests.
local common = import "common.libsonnet";

{
  dataset_reader: {type: "sst2", tokenizer: common.fast_tokenizer},
  train_data_path: common.data_dir + "/sst-2/train.tsv",
  validation_data_path: common.data_dir + "/sst-2/dev.tsv",
  model: {
    type: "pooled_classifier",
    text_field_embedder: {token_embedders: {tokens: common.words_embedder(4)}},
    pooling: "max",
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+accuracy"},
}
