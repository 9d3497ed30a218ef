// CoNLL-2003 English NER (span F1): the paper's tagging task. Files relative to TUNE_DATA_DIR.
local vars = import "../vars.libsonnet";

{
  name: "conll2003",
  kind: "tagging",
  cased: true,  // the only task with BERT-base-cased (paper, appendix A)
  reader: {type: "tune_conll2003", coding_scheme: "IOB1"},
  train: vars.data("conll2003/eng.train"),
  validation: vars.data("conll2003/eng.testa"),
  metric: "+f1-measure-overall",
}
