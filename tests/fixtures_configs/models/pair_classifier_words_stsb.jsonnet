// STS-B regression with word embeddings and the default pair encoder (bi_attention_pair over the
// embeddings): a fast archive for the predictor tests.
local common = import "common.libsonnet";

{
  dataset_reader: {type: "sts_b", tokenizer: common.fast_tokenizer},
  train_data_path: common.data_dir + "/sts-b/sts-train.csv",
  validation_data_path: common.data_dir + "/sts-b/sts-dev.csv",
  model: {
    type: "pair_classifier",
    text_field_embedder: {token_embedders: {tokens: common.words_embedder(4)}},
    regression: true,
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+pearson"},
}
