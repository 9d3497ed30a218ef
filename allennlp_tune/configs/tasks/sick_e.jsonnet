// SICK entailment (accuracy): train on SICK's TRAIN rows, validate on its TRIAL rows, from the
// one file SICK.txt in TUNE_DATA_DIR.
local vars = import "../vars.libsonnet";

{
  name: "sick_e",
  kind: "pair_classification",
  reader: {type: "sick", task: "entailment", split: "train"},
  validation_reader: {split: "trial"},
  train: vars.data("sick/SICK.txt"),
  validation: vars.data("sick/SICK.txt"),
  metric: "+accuracy",
  num_labels: 3,
}
