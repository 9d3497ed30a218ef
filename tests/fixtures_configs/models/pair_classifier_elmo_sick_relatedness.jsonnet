// ELMo fine-tuning for SICK-R as in the paper: each sentence through ELMo, cross-sentence
// bi-attention + ESIM's enhanced mean/max pooling (no parameters), linear regression.
local common = import "common.libsonnet";

{
  dataset_reader: {
    type: "sick",
    task: "relatedness",
    split: "train",
    tokenizer: common.fast_tokenizer,
    token_indexers: {elmo_chars: common.elmo_indexer},
  },
  validation_dataset_reader: self.dataset_reader + {split: "trial"},
  train_data_path: common.data_dir + "/sick/SICK.txt",
  validation_data_path: common.data_dir + "/sick/SICK.txt",
  model: {
    type: "pair_classifier",
    text_field_embedder: {token_embedders: {elmo_chars: common.elmo_embedder(requires_grad=true)}},
    pair_encoder: {type: "bi_attention_pair", input_dim: 16},
    regression: true,
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+pearson"},
}
