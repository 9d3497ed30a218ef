// MRPC paraphrase (accuracy; F1 of the paraphrase class too). Files relative to TUNE_DATA_DIR.
local vars = import "../vars.libsonnet";

{
  name: "mrpc",
  kind: "pair_classification",
  // GLUE's split: train = the release's train file without the 408 dev pairs.
  reader: {type: "mrpc", ids_file: vars.data("mrpc/glue/dev_ids.tsv"), ids: "exclude"},
  validation_reader: {ids_file: null, ids: null},
  train: vars.data("mrpc/glue/msr_paraphrase_train.txt"),
  validation: vars.data("mrpc/glue/dev.tsv"),
  metric: "+accuracy",
  num_labels: 2,
  positive_label: "1",  // also reports precision, recall and F1
}
