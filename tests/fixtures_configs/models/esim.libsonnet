// A tiny ESIM over `dim`-dimensional embeddings with `outputs` logits (1 for regression).
// tanh rather than relu in both feedforwards: 4 relu units die easily in a tiny test (with relu
// in the projection, tune_esim's fixture build on torch 1.12 had all 4 dead, so the encoder
// below them got no gradient and AllenNLP's gradient check failed).
function(dim, outputs) {
  encoder: {type: "lstm", input_size: dim, hidden_size: 4, bidirectional: true},
  matrix_attention: {type: "dot_product"},
  projection_feedforward: {input_dim: 32, hidden_dims: 4, num_layers: 1, activations: "tanh"},
  inference_encoder: {type: "lstm", input_size: 4, hidden_size: 4, bidirectional: true},
  output_feedforward: {input_dim: 32, num_layers: 1, hidden_dims: 4, activations: "tanh"},
  output_logit: {input_dim: 4, num_layers: 1, hidden_dims: outputs, activations: "linear"},
  dropout: 0.1,
}
