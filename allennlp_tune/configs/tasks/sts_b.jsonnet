// STS-B semantic similarity (Pearson), a score from 0 to 5. Files relative to TUNE_DATA_DIR.
local vars = import "../vars.libsonnet";

{
  name: "sts_b",
  kind: "pair_regression",
  reader: {type: "sts_b"},
  train: vars.data("sts-b/sts-train.csv"),
  validation: vars.data("sts-b/sts-dev.csv"),
  metric: "+pearson",
}
