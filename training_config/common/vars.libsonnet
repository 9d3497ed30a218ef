// The ext vars every config reads, with the real run's defaults. AllenNLP fills ext vars from
// environment variables; the plugin sets every TUNE_* variable the user left unset to "" (see
// allennlp_tune/config_vars.py), which `get` reads as "use the default".
//   TUNE_DATA_DIR=fixtures/data TUNE_EPOCHS=1 allennlp train training_config/sst2_bert_ft.jsonnet ...
local get(name, default) =
  local value = std.extVar(name);
  if value == "" then default else value;
local number(name, default) =
  local value = std.extVar(name);
  if value == "" then default else std.parseJson(value);
local boolean(name, default) =
  local value = std.asciiLower(std.extVar(name));
  if value == "" then default
  else if value == "true" || value == "1" then true
  else if value == "false" || value == "0" then false
  else error name + " is '" + value + "'; expected true or false";

{
  get:: get,
  number:: number,
  boolean:: boolean,

  data_dir:: get("TUNE_DATA_DIR", "data"),
  data(path):: self.data_dir + "/" + path,

  // BERT-base, uncased for every task but NER (paper, appendix A).
  bert_model(cased=false):: get("TUNE_BERT_MODEL", if cased then "bert-base-cased" else "bert-base-uncased"),
  bert_dim:: number("TUNE_BERT_DIM", 768),
  // The original ELMo (2x4096_512_2048cnn_2xhighway, 5.5B), as AllenNLP publishes it.
  elmo_options:: get("TUNE_ELMO_OPTIONS", "https://allennlp.s3.amazonaws.com/models/elmo/2x4096_512_2048cnn_2xhighway_5.5B/elmo_2x4096_512_2048cnn_2xhighway_5.5B_options.json"),
  elmo_weights:: get("TUNE_ELMO_WEIGHTS", "https://allennlp.s3.amazonaws.com/models/elmo/2x4096_512_2048cnn_2xhighway_5.5B/elmo_2x4096_512_2048cnn_2xhighway_5.5B_weights.hdf5"),
  elmo_dim:: number("TUNE_ELMO_DIM", 1024),

  epochs(default):: number("TUNE_EPOCHS", default),
  batch_size(default):: number("TUNE_BATCH_SIZE", default),
  max_instances:: number("TUNE_MAX_INSTANCES", null),
  cuda_device:: number("TUNE_CUDA_DEVICE", -1),
  seed:: number("TUNE_SEED", 13370),
  lr(default):: number("TUNE_LR", default),
  head_lr(default):: number("TUNE_HEAD_LR", default),
  dropout(default):: number("TUNE_DROPOUT", default),
  weight_decay(default):: number("TUNE_WEIGHT_DECAY", default),
  pooling:: get("TUNE_POOLING", "cls"),
  feature_cache:: boolean("TUNE_FEATURE_CACHE", true),
  frozen_epochs(default):: number("TUNE_FROZEN_EPOCHS", default),
  max_gap(default):: number("TUNE_MAX_GAP", default),
}
