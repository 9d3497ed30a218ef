// ELMo fine-tuning for text classification as in the paper: max pooling over the LM states +
// softmax; CoLA, so Matthews correlation is the validation metric.
local common = import "common.libsonnet";

{
  dataset_reader: {type: "cola", tokenizer: common.fast_tokenizer, token_indexers: {elmo_chars: common.elmo_indexer}},
  train_data_path: common.data_dir + "/cola/in_domain_train.tsv",
  validation_data_path: common.data_dir + "/cola/in_domain_dev.tsv",
  model: {
    type: "pooled_classifier",
    text_field_embedder: {token_embedders: {elmo_chars: common.elmo_embedder(requires_grad=true)}},
    pooling: "max",
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+mcc"},
}
