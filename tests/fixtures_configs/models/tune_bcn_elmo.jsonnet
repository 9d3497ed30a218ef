// SST-2 feature extraction with ELMo: frozen ELMo (scalar mix trains) + the bi-attentive
// classification network. The embedder key must not be "elmo" (BCN reserves it).
local common = import "common.libsonnet";

{
  dataset_reader: {type: "sst2", tokenizer: common.fast_tokenizer, token_indexers: {elmo_chars: common.elmo_indexer}},
  train_data_path: common.data_dir + "/sst-2/train.tsv",
  validation_data_path: common.data_dir + "/sst-2/dev.tsv",
  model: {
    type: "tune_bcn",
    positive_label: "1",
    text_field_embedder: {token_embedders: {elmo_chars: common.elmo_embedder()}},
    embedding_dropout: 0.0,
    pre_encode_feedforward: {input_dim: 16, num_layers: 1, hidden_dims: 8, activations: "relu"},
    encoder: {type: "lstm", input_size: 8, hidden_size: 4, bidirectional: true},
    integrator: {type: "lstm", input_size: 24, hidden_size: 4, bidirectional: true},
    integrator_dropout: 0.1,
    output_layer: {input_dim: 32, num_layers: 1, hidden_dims: 2, activations: "linear"},
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+accuracy"},
}
