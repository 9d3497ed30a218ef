// ELMo feature extraction for NER: frozen ELMo (scalar mix trains), BiLSTM + CRF, BIOUL tags.
local common = import "common.libsonnet";

{
  dataset_reader: {
    type: "tune_conll2003",
    coding_scheme: "IOB1",
    convert_to_coding_scheme: "BIOUL",
    token_indexers: {elmo_chars: common.elmo_indexer},
  },
  train_data_path: common.data_dir + "/conll2003/eng.train",
  validation_data_path: common.data_dir + "/conll2003/eng.testa",
  model: {
    type: "tune_crf_tagger",
    text_field_embedder: {token_embedders: {elmo_chars: common.elmo_embedder()}},
    encoder: {type: "lstm", input_size: 16, hidden_size: 4, num_layers: 2, bidirectional: true},
    label_encoding: "BIOUL",
    dropout: 0.2,
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+f1-measure-overall"},
}
