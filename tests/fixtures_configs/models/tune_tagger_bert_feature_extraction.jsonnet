// BERT feature extraction for NER (paper, A.1): frozen BERT, a BiLSTM over all wordpieces, the
// state of each word's first wordpiece, softmax. IOB2 files, span F1 with "BIO".
local common = import "common.libsonnet";

{
  dataset_reader: {
    type: "tune_conll2003",
    coding_scheme: "IOB2",
    token_indexers: {tokens: common.bert_mismatched_indexer(common.bert_cased)},
  },
  train_data_path: common.data_dir + "/conll2003/iob2/train.txt",
  validation_data_path: common.data_dir + "/conll2003/iob2/valid.txt",
  model: {
    type: "tune_tagger",
    text_field_embedder: {token_embedders: {tokens: common.bert_embedder(common.bert_cased)}},
    first_wordpiece: true,
    wordpiece_encoder: {
      type: "lstm", input_size: 16, hidden_size: 4, num_layers: 2, bidirectional: true,
    },
    label_encoding: "BIO",
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+f1-measure-overall"},
}
