// SICK-E feature extraction with BERT as in the paper: the pair encoded jointly by frozen BERT,
// split back into its two sentences for ESIM.
local common = import "common.libsonnet";
local esim = import "esim.libsonnet";

{
  dataset_reader: {
    type: "sick",
    task: "entailment",
    split: "train",
    pair_encoding: "joint",
    tokenizer: common.bert_tokenizer(common.bert_uncased),
    token_indexers: {tokens: common.bert_indexer(common.bert_uncased)},
  },
  validation_dataset_reader: self.dataset_reader + {split: "trial"},
  train_data_path: common.data_dir + "/sick/SICK.txt",
  validation_data_path: common.data_dir + "/sick/SICK.txt",
  model: esim(16, 3) + {
    type: "tune_esim",
    text_field_embedder: {
      token_embedders: {tokens: common.bert_embedder(common.bert_uncased)},
    },
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+accuracy"},
}
