// The shipped tasks by name: the paper's seven and CoLA, one task file each in tasks/ (the
// schema is in experiment.libsonnet). Their files are relative to TUNE_DATA_DIR. Test splits are
// never read here: develop on dev, evaluate on test with `allennlp evaluate`.
{
  conll2003: import "tasks/conll2003.jsonnet",
  sst2: import "tasks/sst2.jsonnet",
  mnli: import "tasks/mnli.jsonnet",
  sick_e: import "tasks/sick_e.jsonnet",
  sick_r: import "tasks/sick_r.jsonnet",
  mrpc: import "tasks/mrpc.jsonnet",
  cola: import "tasks/cola.jsonnet",
  sts_b: import "tasks/sts_b.jsonnet",
}
