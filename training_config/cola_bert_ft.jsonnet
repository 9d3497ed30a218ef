// CoLA acceptability (Matthews correlation), fine-tuning: not in the paper's grid; the
// fine-tuned archive for probing (Figure 1). BERT-base fine-tuned; [CLS] + softmax.
(import "../allennlp_tune/configs/experiment.libsonnet").cell("cola", "bert", "ft")
