// The paper's seven tasks: reader, files (relative to TUNE_DATA_DIR), output and primary metric.
// Test splits are never read here: develop on dev, evaluate on test with `allennlp evaluate`.
local vars = import "vars.libsonnet";

{
  conll2003: {
    kind: "tagging",
    cased: true,  // the only task with BERT-base-cased (paper, appendix A)
    reader: {type: "tune_conll2003", coding_scheme: "IOB1"},
    train: "conll2003/eng.train",
    validation: "conll2003/eng.testa",
    metric: "+f1-measure-overall",
  },
  sst2: {
    kind: "single",
    reader: {type: "sst2"},
    train: "sst-2/train.tsv",
    validation: "sst-2/dev.tsv",
    metric: "+accuracy",
    num_labels: 2,
  },
  mnli: {
    kind: "pair",
    reader: {type: "mnli"},
    train: "mnli/multinli_1.0_train.jsonl",
    validation: "mnli/multinli_1.0_dev_matched.jsonl",  // matched accuracy, as in the paper
    metric: "+accuracy",
    num_labels: 3,
  },
  sick_e: {
    kind: "pair",
    reader: {type: "sick", task: "entailment", split: "train"},
    validation_reader: {split: "trial"},
    train: "sick/SICK.txt",
    validation: "sick/SICK.txt",
    metric: "+accuracy",
    num_labels: 3,
  },
  sick_r: self.sick_e + {
    reader+: {task: "relatedness"},
    metric: "+pearson",
    regression: true,
  },
  mrpc: {
    kind: "pair",
    // GLUE's split: train = the release's train file without the 408 dev pairs.
    reader: {type: "mrpc", ids_file: vars.data("mrpc/glue/dev_ids.tsv"), ids: "exclude"},
    validation_reader: {ids_file: null, ids: null},
    train: "mrpc/glue/msr_paraphrase_train.txt",
    validation: "mrpc/glue/dev.tsv",
    metric: "+accuracy",
    num_labels: 2,
    positive_label: "1",  // also reports precision, recall and F1
  },
  // Not in the paper's grid: CoLA is one of its probing tasks (Figure 1), so a fine-tuned
  // archive for `allennlp probe` / `mi` comes from `cola_bert_ft.jsonnet`.
  cola: {
    kind: "single",
    reader: {type: "cola"},
    train: "cola/in_domain_train.tsv",
    validation: "cola/in_domain_dev.tsv",
    metric: "+mcc",
    num_labels: 2,
  },
  sts_b: {
    kind: "pair",
    reader: {type: "sts_b"},
    train: "sts-b/sts-train.csv",
    validation: "sts-b/sts-dev.csv",
    metric: "+pearson",
    regression: true,
  },
}
