// One cell of the grid: `cell(task, encoder, mode, options)`, with task one of tasks.libsonnet,
// encoder "bert" or "elmo", mode "fe" (feature extraction), "ft" (fine-tuning) or "sf"
// (stack-then-finetune). `options` picks the paper's ablations:
//   pair_encoding: "separate"  BERT pairs encoded one sentence at a time (Table 4)
//   bi_attention: false        ELMo fine-tuning on pairs without bi-attention (Table 3)
//   bilstm: true / false       NER with or without the BiLSTM before the CRF (Table 5)
//   gradual_unfreezing: bool   ELMo fine-tuning (default: SST-2 and NER only, as in the paper)
local vars = import "vars.libsonnet";
local tasks = import "tasks.libsonnet";
local encoders = import "encoders.libsonnet";
local models = import "models.libsonnet";
local trainers = import "trainers.libsonnet";

local encoder_modes = {fe: "feature_extraction", ft: "fine_tuning", sf: "feature_extraction"};

{
  cell(task_name, encoder_name, mode, options={})::
    assert std.objectHas(tasks, task_name) : "unknown task " + task_name;
    assert std.objectHas(encoder_modes, mode) : "mode must be fe, ft or sf, not " + mode;
    local task = tasks[task_name];
    local tagging = task.kind == "tagging";
    // Fine-tuned BERT predicts from its top layer ([CLS] or first wordpiece), as in the paper.
    // Everything else mixes all layers, as ELMo always does; stack-then-finetune too, so that
    // its frozen phase trains a head on the mix (a frozen single layer would leave the
    // `discriminative` optimizer nothing trainable of the encoder's to find it by).
    local layers = if encoder_name == "bert" && mode == "ft" then "top" else "all";
    local encoder =
      if encoder_name == "bert" then encoders.bert(task, encoder_modes[mode], layers, tagging)
      else if encoder_name == "elmo" then encoders.elmo(encoder_modes[mode], layers)
      else error "encoder must be bert or elmo, not " + encoder_name;
    local pair_encoding = std.get(options, "pair_encoding",
                                  if encoder_name == "bert" then "joint" else "separate");
    local reader = task.reader + {
      token_indexers: {[encoder.key]: encoder.indexer},
      max_instances: vars.max_instances,
    } + (if encoder.tokenizer != null && !tagging then {tokenizer: encoder.tokenizer} else {})
      + (if task.kind == "pair" then {pair_encoding: pair_encoding} else {})
      + (if tagging then {
           convert_to_coding_scheme: if encoder_name == "elmo" then "BIOUL" else "IOB2",
         } else {});
    local bilstm = std.get(options, "bilstm", mode == "fe");
    local model =
      if tagging then (
        if encoder_name == "elmo" then models.crf_tagger(encoder, bilstm)
        else models.first_wordpiece_tagger(encoder, bilstm)
      ) else if mode == "fe" then (
        if task.kind == "single" then models.bcn(task, encoder) else models.esim(task, encoder)
      ) else if encoder_name == "bert" || task.kind == "single" then
        models.pooled(task, encoder, if encoder_name == "bert" then vars.pooling else "max")
      else models.bi_attention(task, encoder, std.get(options, "bi_attention", true));
    local gradual = std.get(options, "gradual_unfreezing",
                            task_name == "sst2" || task_name == "conll2003");
    {
      dataset_reader: reader,
      [if std.objectHas(task, "validation_reader") then "validation_dataset_reader"]:
        std.mergePatch(reader, task.validation_reader),
      train_data_path: vars.data(task.train),
      validation_data_path: vars.data(task.validation),
      model: model,
      data_loader: {batch_sampler: {type: "bucket", batch_size: vars.batch_size(32)}},
      trainer:
        if mode == "fe" then trainers.feature_extraction(task)
        else if mode == "sf" then trainers.stack_then_finetune(task, encoder)
        else if encoder_name == "bert" then trainers.bert_fine_tuning(task)
        else trainers.elmo_fine_tuning(task, gradual),
      random_seed: vars.seed,
      numpy_seed: vars.seed,
      pytorch_seed: vars.seed,
    },
}
