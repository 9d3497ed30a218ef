// esim_regression_bert_joint_stsb without the encoder's input_size: esim_regression takes it
// from the embedder (BERT's hidden size).
std.mergePatch(import "esim_regression_bert_joint_stsb.jsonnet", {model: {encoder: {input_size: null}}})
