// MultiNLI (matched accuracy, as in the paper). Files relative to TUNE_DATA_DIR.
local vars = import "../vars.libsonnet";

{
  name: "mnli",
  kind: "pair_classification",
  reader: {type: "mnli"},
  train: vars.data("mnli/multinli_1.0_train.jsonl"),
  validation: vars.data("mnli/multinli_1.0_dev_matched.jsonl"),
  metric: "+accuracy",
  num_labels: 3,
}
