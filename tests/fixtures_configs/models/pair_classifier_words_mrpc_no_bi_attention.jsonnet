// The Table 3 ablation "w/o bi-attn." on MRPC with word embeddings and a BiLSTM: each sentence
// mean- and max-pooled on its own, feedforward, softmax; F1 of "1" as in MRPC.
local common = import "common.libsonnet";

{
  dataset_reader: {type: "mrpc", tokenizer: common.fast_tokenizer},
  train_data_path: common.data_dir + "/mrpc/msr_paraphrase_train.txt",
  validation_data_path: common.data_dir + "/mrpc/msr_paraphrase_test.txt",
  model: {
    type: "pair_classifier",
    text_field_embedder: {token_embedders: {tokens: common.words_embedder(8)}},
    encoder: {type: "lstm", input_size: 8, hidden_size: 4, bidirectional: true},
    pair_encoder: {type: "bi_attention_pair", input_dim: 8, bi_attention: false},
    feedforward: {input_dim: 32, num_layers: 1, hidden_dims: 8, activations: "tanh"},
    dropout: 0.1,
    positive_label: "1",
  },
  data_loader: common.data_loader,
  trainer: common.trainer + {validation_metric: "+f1"},
}
