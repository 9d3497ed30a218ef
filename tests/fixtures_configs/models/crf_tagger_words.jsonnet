// allennlp-models' own crf_tagger on the tune_conll2003 reader (IOB1 -> IOB2, span F1 "BIO").
local common = import "common.libsonnet";

{
  dataset_reader: {
    type: "tune_conll2003",
    coding_scheme: "IOB1",
    convert_to_coding_scheme: "IOB2",
  },
  train_data_path: common.data_dir + "/conll2003/eng.train",
  validation_data_path: common.data_dir + "/conll2003/eng.testa",
  model: {
    type: "crf_tagger",
    text_field_embedder: {token_embedders: {tokens: common.words_embedder(8)}},
    encoder: {type: "lstm", input_size: 8, hidden_size: 4, bidirectional: true},
    label_encoding: "BIO",
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+f1-measure-overall"},
}
