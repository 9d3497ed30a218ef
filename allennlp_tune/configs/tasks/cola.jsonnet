// CoLA acceptability (Matthews correlation). Not in the paper's grid: CoLA is one of its probing
// tasks (Figure 1), so a fine-tuned archive for `allennlp probe` / `mi` comes from
// training_config/cola_bert_ft.jsonnet. Files relative to TUNE_DATA_DIR.
local vars = import "../vars.libsonnet";

{
  name: "cola",
  kind: "classification",
  reader: {type: "cola"},
  train: vars.data("cola/in_domain_train.tsv"),
  validation: vars.data("cola/in_domain_dev.tsv"),
  metric: "+mcc",
  num_labels: 2,
}
