// Paths and tiny settings shared by the model test configs. TUNE_DATA_DIR is the fixture data
// folder (the tests set it); the tiny pretrained models live beside it in fixtures/models.
local data_dir = std.extVar("TUNE_DATA_DIR");
local models_dir = data_dir + "/../models";

{
  data_dir: data_dir,
  bert_cased: models_dir + "/bert-cased",
  bert_uncased: models_dir + "/bert-uncased",

  // Keeps the tests fast: the readers' default tokenizer, spaCy's blank English pipeline, takes
  // about half a second to build, and every test builds several readers. The fixture sentences
  // need no more than whitespace splitting.
  fast_tokenizer: {type: "whitespace"},

  elmo_indexer: {type: "elmo_characters"},
  // The tiny ELMo: 2 layers, output dim 16. requires_grad false = frozen features.
  elmo_embedder(requires_grad=false):: {
    type: "elmo_token_embedder",
    options_file: models_dir + "/elmo/options.json",
    weight_file: models_dir + "/elmo/weights.hdf5",
    do_layer_norm: false,
    dropout: 0.0,
    requires_grad: requires_grad,
  },
  bert_tokenizer(model):: {type: "pretrained_transformer", model_name: model},
  bert_indexer(model):: {type: "pretrained_transformer", model_name: model},
  bert_mismatched_indexer(model):: {type: "pretrained_transformer_mismatched", model_name: model},
  // train_parameters false = frozen features (feature extraction).
  bert_embedder(model, train=false):: {
    type: "pretrained_transformer",
    model_name: model,
    train_parameters: train,
  },
  words_embedder(dim=8):: {type: "embedding", embedding_dim: dim},

  data_loader: {batch_size: 4, shuffle: false},
  trainer: {
    optimizer: {type: "adam", lr: 0.01},
    num_epochs: 1,
    cuda_device: -1,
  },
}
