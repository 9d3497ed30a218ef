// The two pretrained encoders, each frozen (`feature_extraction`), trained (`fine_tuning`), or
// trained parameter-efficiently (`bitfit`: only bias terms; `lora`: low-rank adapters, BERT-family
// only): tokenizer, indexer and allennlp-tune's freezable embedder with an all-layer scalar mix.
// The frozen-feature cache is set for `feature_extraction` and for a BERT-family block that
// tunes the top groups only (`tuned_groups: "top:K"`), where it holds the output of the frozen
// layers below the block (the embedder's `prefix_cache`; with K reaching the lowest layer the
// embedder leaves it unused). In every other mode the encoder's output changes as it trains,
// and the embedders refuse a cache there.
local vars = import "vars.libsonnet";

local cache = if vars.feature_cache then {feature_cache: {}} else {};

// LoRA (Hu et al. 2021): rank r, scaling alpha / r, dropout on the adapters' input; the
// embedder's defaults, written out so that config.json records them (the LoRA paper's RoBERTa-base
// GLUE runs used rank 8). target_modules is left to the embedder, which knows each transformer
// family's projection names. r and alpha are TUNE_LORA_R and TUNE_LORA_ALPHA.
local lora = {r: vars.lora_r, alpha: vars.lora_alpha, dropout: 0.1};

{
  bert(task, mode, layers="all", word_level=false, tuned_groups="all"):: {
    local model = vars.bert_model(std.get(task, "cased", false)),
    name: "bert",
    key: "tokens",
    tokenizer: {type: "pretrained_transformer", model_name: model},
    // NER reads words and takes each word's first wordpiece in the model.
    indexer: {
      type: if word_level then "pretrained_transformer_mismatched" else "pretrained_transformer",
      model_name: model,
    },
    embedder: {
      type: "tune_transformer",
      model_name: model,
      mode: mode,
      layers: layers,
    } + (if mode == "feature_extraction" || std.startsWith(tuned_groups, "top:") then cache else {})
      + (if mode == "lora" then {lora: lora} else {})
      + (if tuned_groups != "all" then {tuned_groups: tuned_groups} else {}),
  },

  elmo(mode, layers="all", tuned_groups="all"):: {
    name: "elmo",
    key: "elmo_chars",  // not "elmo": BCN reserves that key for its own ELMo
    tokenizer: null,  // the readers' default, spaCy's rule-based English tokenizer
    indexer: {type: "elmo_characters"},
    embedder: {
      type: "tune_elmo",
      options_file: vars.elmo_options,
      weight_file: vars.elmo_weights,
      mode: mode,
      layers: layers,
      // AllenNLP's Elmo default, kept under the fine-tuning heads (they drop out the pooled
      // vector); ESIM, BCN and the CRF tagger drop out their input themselves and set it to 0.0
      // (models.libsonnet), as allennlp-models' published ELMo configs do.
      dropout: 0.5,
    } + (if mode == "feature_extraction" then cache else {})
      + (if tuned_groups != "all" then {tuned_groups: tuned_groups} else {}),
  },
}
