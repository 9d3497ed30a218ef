// One cell of the grid: `cell(task, encoder, mode, options)`, with encoder "bert" or "elmo",
// mode "fe" (feature extraction), "ft" (fine-tuning), "sf" (stack-then-finetune), "bitfit" (only
// the encoder's bias terms train), "lora" (low-rank adapters train, BERT-family encoders only)
// or a block, "topK" / "bottomK" (only the K highest / lowest layer groups fine-tune), and task
// either the name of a shipped task (tasks.libsonnet: conll2003, sst2, mnli, sick_e, sick_r,
// mrpc, sts_b, cola) or a task object, such as `import "tasks/sick_e.jsonnet"` or your own:
//
//   name        [a-z0-9_]+, the run names' first part (sick_e_bert_ft)
//   kind        classification | pair_classification | regression | pair_regression | tagging
//   reader      the dataset reader's config (its token indexers and tokenizer are the encoder's)
//   train, validation   data paths, as AllenNLP reads them (relative to the working directory)
//   metric      the trainer's validation_metric, e.g. "+accuracy", "+pearson", "+mcc"
//   optional:   test (a data path: test_data_path, never read in training), num_labels
//               (classification: required, the feature-extraction networks' output size),
//               positive_label (also report its precision, recall and F1), cased (BERT NER:
//               the cased default model), validation_reader (merged into reader for validation),
//               allow_outside_links (tune-compare: follow symbolic links in the task file's
//               folder that point out of it; default false, such a link is refused unread)
//
// `allennlp tune-compare` writes such a call for a task file of your own, with its paths resolved
// against the task file's folder and num_labels read from the reader's labels or labels_file.
// Before that it refuses a task file with a key not listed here, a reader parameter its reader
// does not take, a num_labels that its labels disagree with, or a metric its kind does not
// report: classification accuracy, mcc (with positive_label also precision, recall, f1),
// regression pearson, spearman, -mse, tagging f1-measure-overall, precision-overall,
// recall-overall, accuracy, accuracy3, and -loss for all (+ for those that rise, - for those
// that fall).
//
// `options` picks the paper's ablations:
//   pair_encoding: "separate"  BERT pairs encoded one sentence at a time (Table 4)
//   bi_attention: false        ELMo fine-tuning on pairs without bi-attention (Table 3)
//   bilstm: true / false       NER with or without the BiLSTM before the CRF (Table 5)
//   gradual_unfreezing: bool   ELMo fine-tuning (default: SST-2 and NER only, as in the paper)
local vars = import "vars.libsonnet";
local tasks = import "tasks.libsonnet";
local encoders = import "encoders.libsonnet";
local models = import "models.libsonnet";
local trainers = import "trainers.libsonnet";

// cell() mode -> the embedder's mode. bitfit and lora are parameter-efficient fine-tuning: the
// encoder's pretrained weights stay frozen except its biases (bitfit), or gain trained low-rank
// matrices (lora); the head trains as in fine-tuning.
local encoder_modes = {
  fe: "feature_extraction",
  ft: "fine_tuning",
  sf: "feature_extraction",
  bitfit: "bitfit",
  lora: "lora",
};
local parameter_efficient = ["bitfit", "lora"];

// Block modes: "topK" / "bottomK" fine-tune only the K highest / lowest layer groups (0 = the
// embeddings or ELMo's char CNN) with the fine-tuning head and recipe; the other groups stay
// frozen (the embedder's `tuned_groups`). Anything else is null.
local digits(text) = std.length(text) > 0
                     && std.all([std.member("0123456789", c) for c in std.stringChars(text)]);
local block_groups(mode) =
  local rest(prefix) = std.substr(mode, std.length(prefix), std.length(mode) - std.length(prefix));
  if std.startsWith(mode, "top") && digits(rest("top")) then "top:" + rest("top")
  else if std.startsWith(mode, "bottom") && digits(rest("bottom")) then "bottom:" + rest("bottom")
  else null;

// A task kind as the networks see it: one text, a pair or tagging (`shape`), and whether the
// label is a score.
local kinds = {
  classification: {shape: "single", regression: false},
  pair_classification: {shape: "pair", regression: false},
  regression: {shape: "single", regression: true},
  pair_regression: {shape: "pair", regression: true},
  tagging: {shape: "tagging", regression: false},
};

local positive_label(task) =
  if std.objectHas(task, "positive_label") then {positive_label: task.positive_label} else {};

// A task name or object -> the task object with `shape` and `regression`, after the checks.
local task_object(task) =
  if std.isString(task) then (
    assert std.objectHas(tasks, task) :
           "unknown task " + task + "; a shipped task (" + std.join(", ", std.objectFields(tasks))
           + ") or a task object";
    task_object(tasks[task])
  ) else (
    assert std.isObject(task) : "a task is a task name or a task object, not " + std.type(task);
    local name = std.get(task, "name", "(no name)");
    local missing = [field for field in ["name", "kind", "reader", "train", "validation", "metric"]
                     if !std.objectHas(task, field)];
    assert missing == [] : "task " + name + " lacks " + std.join(", ", missing);
    assert std.objectHas(kinds, task.kind) :
           "task " + name + ": kind must be " + std.join(", ", std.objectFields(kinds))
           + ", not " + task.kind;
    local shape = kinds[task.kind];
    assert shape.regression || shape.shape == "tagging" || std.objectHas(task, "num_labels") :
           "task " + name + " (kind " + task.kind + ") lacks num_labels, the number of classes";
    task + shape
  );

{
  cell(task_spec, encoder_name, mode, options={})::
    local block = block_groups(mode);
    assert std.objectHas(encoder_modes, mode) || block != null :
           "mode must be fe, ft, sf, bitfit, lora, topK or bottomK (K layer groups fine-tuned), "
           + "not " + mode;
    assert !(encoder_name == "elmo" && mode == "lora") :
           "mode lora adapts a transformer's attention and feed-forward layers (low-rank "
           + "matrices beside their projection weights, peft); ELMo's character CNN and LSTMs have "
           + "none: use bitfit (ELMo's bias terms train) or ft with elmo";
    local task = task_object(task_spec);
    local tagging = task.shape == "tagging";
    // TUNE_FE_HEAD: the frozen network, the paper's or a light head on the pooled layers.
    local light = mode == "fe" && vars.fe_head != "paper";
    assert !(light && tagging) :
           "TUNE_FE_HEAD=" + vars.fe_head + ": the light frozen heads pool each sentence, and task "
           + task.name + " tags words; use TUNE_FE_HEAD=paper (the CRF / BiLSTM tagger)";
    assert !(light && encoder_name != "bert") :
           "TUNE_FE_HEAD=" + vars.fe_head + ": the light frozen heads read a transformer's "
           + "pooled layers; with elmo use TUNE_FE_HEAD=paper";
    assert !(mode == "fe" && !light && task.shape == "single" && task.regression) :
           "task " + task.name + ": kind regression has no paper feature-extraction network (BCN "
           + "classifies); use TUNE_FE_HEAD=linear or mlp, the ft or sf mode, or kind "
           + "pair_regression for pairs";
    // Fine-tuned BERT predicts from its top layer ([CLS] or first wordpiece), as in the paper,
    // and so does BERT under bitfit or lora, fine-tuning with fewer trained weights.
    // Everything else mixes all layers, as ELMo always does; stack-then-finetune too, so that
    // its frozen phase trains a head on the mix (a frozen single layer would leave the
    // `discriminative` optimizer nothing trainable of the encoder's to find it by).
    local tuned = mode == "ft" || block != null || std.member(parameter_efficient, mode);
    local layers = if encoder_name == "bert" && tuned then "top" else "all";
    local encoder_mode = if block != null then "fine_tuning" else encoder_modes[mode];
    local groups = if block != null then block else "all";
    local encoder =
      if encoder_name == "bert" then encoders.bert(task, encoder_mode, layers, tagging, groups)
      else if encoder_name == "elmo" then encoders.elmo(encoder_mode, layers, groups)
      else error "encoder must be bert or elmo, not " + encoder_name;
    // A light head pools each sentence on its own.
    local pair_encoding = if light then "separate"
                          else std.get(options, "pair_encoding",
                                       if encoder_name == "bert" then "joint" else "separate");
    // A tune_table reader reads the task's kind unless it names its own, which must agree.
    local table = std.get(task.reader, "type") == "tune_table";
    assert !table || std.get(task.reader, "kind", task.kind) == task.kind :
           "task " + task.name + ": reader.kind " + std.get(task.reader, "kind") + " differs "
           + "from the task's kind " + task.kind + "; give it once, as the task's kind";
    local reader = task.reader + (if table then {kind: task.kind} else {}) + {
      token_indexers: {[encoder.key]: encoder.indexer},
      max_instances: vars.max_instances,
    } + (if encoder.tokenizer != null && !tagging then {tokenizer: encoder.tokenizer} else {})
      + (if task.shape == "pair" then {pair_encoding: pair_encoding} else {})
      + (if tagging then {
           convert_to_coding_scheme: if encoder_name == "elmo" then "BIOUL" else "IOB2",
         } else {});
    // ft, sf, bitfit and lora share the fine-tuning heads.
    local bilstm = std.get(options, "bilstm", mode == "fe");
    local model =
      if tagging then (
        if encoder_name == "elmo" then models.crf_tagger(encoder, bilstm)
        else models.first_wordpiece_tagger(encoder, bilstm)
      ) else if light then models.frozen_head(task, encoder, vars.fe_head)
      else if mode == "fe" then (
        // BCN reports positive_label's precision, recall and F1 too, as every classifier does.
        if task.shape == "single" then models.bcn(task, encoder) + positive_label(task)
        else models.esim(task, encoder)
      ) else if encoder_name == "bert" || task.shape == "single" then
        models.pooled(task, encoder, if encoder_name == "bert" then vars.pooling else "max")
      else models.bi_attention(task, encoder, std.get(options, "bi_attention", true));
    // A block mode keeps its groups: no schedule unfreezes the others.
    local gradual = block == null && std.get(options, "gradual_unfreezing",
                                             task.name == "sst2" || task.name == "conll2003");
    {
      dataset_reader: reader,
      [if std.objectHas(task, "validation_reader") then "validation_dataset_reader"]:
        std.mergePatch(reader, task.validation_reader),
      train_data_path: task.train,
      validation_data_path: task.validation,
      // Recorded for `allennlp evaluate`, --test and tune-test; training never reads it, not even
      // for the vocabulary (AllenNLP's train read it whole all the same: allennlp_tune/compat.py,
      // fix 16).
      [if std.objectHas(task, "test") then "test_data_path"]: task.test,
      [if std.objectHas(task, "test") then "datasets_for_vocab_creation"]: ["train", "validation"],
      model: model,
      data_loader: {batch_sampler: {type: "bucket", batch_size: vars.batch_size(32)}}
                   + trainers.fast_path_loader(task, vars.batch_size(32)),
      // fast_path: the opt-in accelerator switches (TUNE_AUTOCAST, ...; trainers.libsonnet).
      trainer: trainers.fast_path(
        if light then trainers.frozen_head(task)
        else if mode == "fe" then trainers.feature_extraction(task)
        else if mode == "sf" then trainers.stack_then_finetune(task, encoder)
        else if std.member(parameter_efficient, mode) then trainers.parameter_efficient(task, mode)
        else if encoder_name == "bert" then trainers.bert_fine_tuning(task)
        else trainers.elmo_fine_tuning(task, gradual)
      ),
      random_seed: vars.seed,
      numpy_seed: vars.seed,
      pytorch_seed: vars.seed,
    },
}
