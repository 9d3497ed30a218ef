// MRPC feature extraction with ELMo: each sentence encoded separately, ESIM, accuracy + F1 of "1".
local common = import "common.libsonnet";
local esim = import "esim.libsonnet";

{
  dataset_reader: {
    type: "mrpc",
    pair_encoding: "separate",
    tokenizer: common.fast_tokenizer,
    token_indexers: {elmo_chars: common.elmo_indexer},
  },
  train_data_path: common.data_dir + "/mrpc/msr_paraphrase_train.txt",
  validation_data_path: common.data_dir + "/mrpc/msr_paraphrase_test.txt",
  model: esim(16, 2) + {
    type: "tune_esim",
    positive_label: "1",
    text_field_embedder: {token_embedders: {elmo_chars: common.elmo_embedder()}},
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+accuracy"},
}
