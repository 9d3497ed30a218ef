// STS-B feature extraction with BERT: joint encoding by frozen BERT, ESIM with one output.
local common = import "common.libsonnet";
local esim = import "esim.libsonnet";

{
  dataset_reader: {
    type: "sts_b",
    tokenizer: common.bert_tokenizer(common.bert_uncased),
    token_indexers: {tokens: common.bert_indexer(common.bert_uncased)},
  },
  train_data_path: common.data_dir + "/sts-b/sts-train.csv",
  validation_data_path: common.data_dir + "/sts-b/sts-dev.csv",
  model: esim(16, 1) + {
    type: "esim_regression",
    text_field_embedder: {
      token_embedders: {tokens: common.bert_embedder(common.bert_uncased)},
    },
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+pearson"},
}
