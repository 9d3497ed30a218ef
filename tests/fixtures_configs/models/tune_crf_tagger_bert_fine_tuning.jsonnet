// Table 5 "+ CRF" for BERT, fine-tuned: the first wordpiece of each word, CRF, IOB1 tags as read.
local common = import "common.libsonnet";

{
  dataset_reader: {
    type: "tune_conll2003",
    coding_scheme: "IOB1",
    token_indexers: {tokens: common.bert_mismatched_indexer(common.bert_cased)},
  },
  train_data_path: common.data_dir + "/conll2003/eng.train",
  validation_data_path: common.data_dir + "/conll2003/eng.testa",
  model: {
    type: "tune_crf_tagger",
    text_field_embedder: {
      token_embedders: {tokens: common.bert_embedder(common.bert_cased, train=true)},
    },
    first_wordpiece: true,
    label_encoding: "IOB1",
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+f1-measure-overall"},
}
