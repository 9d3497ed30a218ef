// STS-B fine-tuning of a sentence-embedding-style checkpoint: the joint pair, mean pooling,
// linear regression (one score, MSE), Pearson as the validation metric.
local common = import "common.libsonnet";

{
  dataset_reader: {
    type: "sts_b",
    tokenizer: common.bert_tokenizer(common.bert_uncased),
    token_indexers: {tokens: common.bert_indexer(common.bert_uncased)},
  },
  train_data_path: common.data_dir + "/sts-b/sts-train.csv",
  validation_data_path: common.data_dir + "/sts-b/sts-dev.csv",
  model: {
    type: "pooled_classifier",
    text_field_embedder: {
      token_embedders: {tokens: common.bert_embedder(common.bert_uncased, train=true)},
    },
    pooling: "mean",
    regression: true,
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+pearson"},
}
