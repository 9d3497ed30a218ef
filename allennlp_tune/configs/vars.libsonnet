// The ext vars every config reads, with the real run's defaults. AllenNLP fills ext vars from
// environment variables; the plugin sets every TUNE_* variable the user left unset to "" (see
// allennlp_tune/config_vars.py), which `get` reads as "use the default".
//   TUNE_DATA_DIR=fixtures/data TUNE_EPOCHS=1 allennlp train training_config/sst2_bert_ft.jsonnet ...
local get(name, default) =
  local value = std.extVar(name);
  if value == "" then default else value;

// JSON number syntax, checked before std.parseJson, whose own error names no variable:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
local isDigits(s) = std.length(s) > 0 && std.all([std.member("0123456789", c) for c in std.stringChars(s)]);
local isNumberText(text) =
  local unsigned = if std.startsWith(text, "-") then text[1:] else text;
  local parts = std.split(std.asciiLower(unsigned), "e");
  local mantissa = std.split(parts[0], ".");
  local exponent =
    if std.length(parts) != 2 then "0"
    else if std.startsWith(parts[1], "+") || std.startsWith(parts[1], "-") then parts[1][1:]
    else parts[1];
  std.length(parts) <= 2 && std.length(mantissa) <= 2 && isDigits(exponent)
  && isDigits(mantissa[0]) && (mantissa[0] == "0" || !std.startsWith(mantissa[0], "0"))
  && (std.length(mantissa) == 1 || isDigits(mantissa[1]));

// A number from the environment, or `default` when unset. `integer`, `min` and `max`
// (inclusive), `above` and `below` (exclusive) say what the setting accepts; a value outside them
// is an error naming the variable, its value and what it expects, before AllenNLP fails on it
// further down (TUNE_EPOCHS=0: "best.th does not exist"; TUNE_BATCH_SIZE=0: ZeroDivisionError).
local number(name, default, integer=false, min=null, above=null, max=null, below=null) =
  local raw = std.extVar(name);
  local text = std.stripChars(raw, " \t\n");
  local bounds = std.prune([
    if min != null then ">= " + min,
    if above != null then "> " + above,
    if max != null then "<= " + max,
    if below != null then "< " + below,
  ]);
  local expected = (if integer then "an integer" else "a number")
                   + (if bounds == [] then "" else " " + std.join(" and ", bounds));
  local fail = error name + " is '" + raw + "'; expected " + expected
                     + " (unset it for the config's default)";
  if raw == "" then default
  else if !isNumberText(text) then fail
  else
    local value = std.parseJson(text);
    if integer && std.floor(value) != value then fail
    else if min != null && value < min then fail
    else if above != null && value <= above then fail
    else if max != null && value > max then fail
    else if below != null && value >= below then fail
    else value;

// A JSON list of integers (TUNE_CUDA_DEVICES='[0,1]'), checked item by item like `number`.
local integers(name, default, min=null) =
  local raw = std.extVar(name);
  local text = std.stripChars(raw, " \t\n");
  local inner = if std.startsWith(text, "[") && std.endsWith(text, "]") then text[1:std.length(text) - 1] else null;
  local items = if inner == null then [] else [std.stripChars(item, " \t\n") for item in std.split(inner, ",")];
  local fail = error name + " is '" + raw + "'; expected a JSON list of integers"
                     + (if min != null then " >= " + min else "") + ", e.g. [0,1]";
  if raw == "" then default
  else if inner == null || std.stripChars(inner, " \t\n") == "" then fail
  else if !std.all([isNumberText(item) for item in items]) then fail
  else
    local values = [std.parseJson(item) for item in items];
    if std.all([std.floor(v) == v && (min == null || v >= min) for v in values]) then values
    else fail;

local boolean(name, default) =
  local value = std.asciiLower(std.extVar(name));
  if value == "" then default
  else if value == "true" || value == "1" then true
  else if value == "false" || value == "0" then false
  else error name + " is '" + value + "'; expected true or false";

// One of `allowed` (strings), or `default` when unset.
local choice(name, default, allowed) =
  local value = std.extVar(name);
  if value == "" then default
  else if std.member(allowed, value) then value
  else error name + " is '" + value + "'; expected one of " + std.join(", ", allowed)
             + " (unset it for the config's default)";

{
  get:: get,
  number:: number,
  integers:: integers,
  boolean:: boolean,
  choice:: choice,

  data_dir:: get("TUNE_DATA_DIR", "data"),
  data(path):: self.data_dir + "/" + path,

  // BERT-base, uncased for every task but NER (paper, appendix A).
  bert_model(cased=false):: get("TUNE_BERT_MODEL", if cased then "bert-base-cased" else "bert-base-uncased"),
  // The original ELMo (2x4096_512_2048cnn_2xhighway, 5.5B), as AllenNLP publishes it.
  elmo_options:: get("TUNE_ELMO_OPTIONS", "https://allennlp.s3.amazonaws.com/models/elmo/2x4096_512_2048cnn_2xhighway_5.5B/elmo_2x4096_512_2048cnn_2xhighway_5.5B_options.json"),
  elmo_weights:: get("TUNE_ELMO_WEIGHTS", "https://allennlp.s3.amazonaws.com/models/elmo/2x4096_512_2048cnn_2xhighway_5.5B/elmo_2x4096_512_2048cnn_2xhighway_5.5B_weights.hdf5"),

  epochs(default):: number("TUNE_EPOCHS", default, integer=true, min=1),
  batch_size(default):: number("TUNE_BATCH_SIZE", default, integer=true, min=1),
  max_instances:: number("TUNE_MAX_INSTANCES", null, integer=true, min=1),
  cuda_device:: number("TUNE_CUDA_DEVICE", -1, integer=true, min=-1),
  // numpy takes seeds in [0, 2**32 - 1].
  seed:: number("TUNE_SEED", 13370, integer=true, min=0, max=4294967295),
  lr(default):: number("TUNE_LR", default, above=0),
  head_lr(default):: number("TUNE_HEAD_LR", default, above=0),
  dropout(default):: number("TUNE_DROPOUT", default, min=0, below=1),
  weight_decay(default):: number("TUNE_WEIGHT_DECAY", default, min=0),
  pooling:: get("TUNE_POOLING", "cls"),
  feature_cache:: boolean("TUNE_FEATURE_CACHE", true),
  frozen_epochs(default):: number("TUNE_FROZEN_EPOCHS", default, integer=true, min=0),
  max_gap(default):: number("TUNE_MAX_GAP", default),
  patience(default):: number("TUNE_PATIENCE", default, integer=true, min=1),
  // The frozen arm's network: the task kind's paper network (BCN, ESIM, the CRF / BiLSTM
  // tagger), or a light head on the pooled layers (models.libsonnet `frozen_head`).
  fe_head:: choice("TUNE_FE_HEAD", "paper", ["paper", "linear", "mlp"]),
  lora_r:: number("TUNE_LORA_R", 8, integer=true, min=1),
  lora_alpha:: number("TUNE_LORA_ALPHA", 16, above=0),
  // Issue #20's accelerator switches, all off by default (trainers.libsonnet's `fast_path`).
  autocast:: choice("TUNE_AUTOCAST", null, ["bfloat16"]),
  compile:: choice("TUNE_COMPILE", null, ["default", "reduce-overhead"]),
  static_shapes:: boolean("TUNE_STATIC_SHAPES", false),
  fused_adam:: boolean("TUNE_FUSED_ADAM", false),
}
