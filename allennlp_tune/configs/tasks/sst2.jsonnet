// SST-2 binary sentiment (accuracy). Files relative to TUNE_DATA_DIR.
local vars = import "../vars.libsonnet";

{
  name: "sst2",
  kind: "classification",
  reader: {type: "sst2"},
  train: vars.data("sst-2/train.tsv"),
  validation: vars.data("sst-2/dev.tsv"),
  metric: "+accuracy",
  num_labels: 2,
}
