// SICK relatedness (Pearson), a score from 1 to 5: SICK-E's rows and split, another column.
local vars = import "../vars.libsonnet";

{
  name: "sick_r",
  kind: "pair_regression",
  reader: {type: "sick", task: "relatedness", split: "train"},
  validation_reader: {split: "trial"},
  train: vars.data("sick/SICK.txt"),
  validation: vars.data("sick/SICK.txt"),
  metric: "+pearson",
}
