// BERT fine-tuning for SST-2 as in the paper: [CLS] + linear softmax, the whole encoder trains.
local common = import "common.libsonnet";

{
  dataset_reader: {
    type: "sst2",
    tokenizer: common.bert_tokenizer(common.bert_uncased),
    token_indexers: {tokens: common.bert_indexer(common.bert_uncased)},
  },
  train_data_path: common.data_dir + "/sst-2/train.tsv",
  validation_data_path: common.data_dir + "/sst-2/dev.tsv",
  model: {
    type: "pooled_classifier",
    text_field_embedder: {
      token_embedders: {tokens: common.bert_embedder(common.bert_uncased, train=true)},
    },
    pooling: "cls",
    dropout: 0.1,
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+accuracy"},
}
