// The task networks. Feature extraction (`fe`) puts a task-specific network on the frozen,
// mixed layers; fine-tuning (`ft`) puts a light head on the trained encoder (paper, section 3.2
// and appendix A).
local vars = import "vars.libsonnet";

// `input` null: the model sets `input_size` from its embedder (it reads the encoder's size
// off the model it loads), so no config variable carries the encoder's width.
local lstm(input, hidden, layers=1, dropout=0.0) = {
  type: "lstm", hidden_size: hidden, num_layers: layers, bidirectional: true,
} + (if input != null then {input_size: input} else {})
  + (if dropout > 0 then {dropout: dropout} else {});

// For the networks that drop out their embedded input themselves (ESIM, BCN, the CRF tagger):
// ELMo's own output dropout is off, so the embeddings are dropped out once, by the network, as in
// allennlp-models' published ELMo configs (esim_elmo, biattentive_classification_network_elmo,
// ner_elmo: ELMo "dropout": 0.0 beside the network's 0.5). BERT's embedder has no dropout.
local embedders(encoder, network_drops_out_input=true) = {
  token_embedders: {
    [encoder.key]: encoder.embedder
      + (if network_drops_out_input && encoder.name == "elmo" then {dropout: 0.0} else {}),
  },
};

// allennlp-models' training_config/pair_classification/esim.jsonnet (and esim_elmo.jsonnet).
local esim_initializer = {
  regexes: [
    [".*linear_layers.*weight", {type: "xavier_uniform"}],
    [".*linear_layers.*bias", {type: "zero"}],
    [".*weight_ih.*", {type: "xavier_uniform"}],
    [".*weight_hh.*", {type: "orthogonal"}],
    [".*bias_ih.*", {type: "zero"}],
    [".*bias_hh.*", {type: "lstm_hidden_bias"}],
  ],
};
local outputs(task) = if std.get(task, "regression", false) then 1 else task.num_labels;
local classification_extras(task) =
  if std.objectHas(task, "positive_label") then {positive_label: task.positive_label} else {};

{
  // ESIM (Chen et al. 2017) with its published sizes; esim_regression for SICK-R and STS-B.
  esim(task, encoder):: {
    type: if std.get(task, "regression", false) then "esim_regression" else "tune_esim",
    text_field_embedder: embedders(encoder),
    encoder: lstm(null, 300),
    matrix_attention: {type: "dot_product"},
    projection_feedforward: {
      input_dim: 2400, hidden_dims: 300, num_layers: 1, activations: "relu",
    },
    inference_encoder: lstm(300, 300),
    output_feedforward: {
      input_dim: 2400, num_layers: 1, hidden_dims: 300, activations: "relu",
      dropout: vars.dropout(0.5),
    },
    output_logit: {
      input_dim: 300, num_layers: 1, hidden_dims: outputs(task), activations: "linear",
    },
    dropout: vars.dropout(0.5),
    initializer: esim_initializer,
  } + (if std.get(task, "regression", false) then {} else classification_extras(task)),

  // The bi-attentive classification network (McCann et al. 2017) with allennlp-models' sizes.
  bcn(task, encoder):: {
    type: "tune_bcn",
    text_field_embedder: embedders(encoder),
    embedding_dropout: vars.dropout(0.5),
    pre_encode_feedforward: {
      num_layers: 1, hidden_dims: [300], activations: ["relu"],
      dropout: [0.25],
    },
    encoder: lstm(300, 300),
    integrator: lstm(1800, 300),
    integrator_dropout: 0.1,
    output_layer: {
      input_dim: 2400, num_layers: 3, output_dims: [1200, 600, task.num_labels], pool_sizes: 4,
      dropout: [0.2, 0.3, 0.0],
    },
  },

  // ELMo NER: a two-layer BiLSTM (optional) and a CRF over BIOUL tags, with the settings of
  // allennlp-models' training_config/tagging/ner_elmo.jsonnet: no start/end transitions, LSTM
  // dropout 0.5 between the layers, and L2 (0.1) on the ELMo scalar mix weights.
  crf_tagger(encoder, bilstm=true):: {
    type: "tune_crf_tagger",
    text_field_embedder: embedders(encoder),
    label_encoding: "BIOUL",
    include_start_end_transitions: false,
    dropout: vars.dropout(0.5),
    regularizer: {regexes: [["scalar_parameters", {type: "l2", alpha: 0.1}]]},
  } + (if bilstm then {encoder: lstm(null, 200, 2, dropout=0.5)} else {}),

  // BERT NER: each word's first wordpiece and a softmax; for frozen features, a two-layer
  // BiLSTM runs over all wordpieces first (paper, appendix A.1).
  first_wordpiece_tagger(encoder, bilstm=true):: {
    type: "tune_tagger",
    text_field_embedder: embedders(encoder, network_drops_out_input=false),
    first_wordpiece: true,
    label_encoding: "BIO",
  } + (if bilstm then {wordpiece_encoder: lstm(null, 200, 2)} else {}),

  // The light frozen heads (TUNE_FE_HEAD linear or mlp): each sentence's mean-pooled layers,
  // mixed, then a linear layer or one hidden layer of 256; a pair (read as two sentences) as
  // [u; v; |u - v|; u * v]. Regression and classification alike.
  // The frozen encoder's weights stay out of its checkpoints and archive (read again from the
  // model when it loads): an epoch's checkpoint is the head's few numbers.
  frozen_head(task, encoder, head):: {
    type: "tune_frozen_head",
    text_field_embedder: {
      token_embedders: {[encoder.key]: encoder.embedder + {store_frozen_weights: false}},
    },
    head: head,
    hidden_dim: 256,
    pooling: "mean",
    dropout: vars.dropout(0.1),
    regression: std.get(task, "regression", false),
    pair: task.shape == "pair",
  } + classification_extras(task),

  // One text or a jointly encoded pair: pooled states + softmax / regression. BERT: [CLS]
  // (TUNE_POOLING=mean for sentence-embedding models); ELMo: max pooling over the LM states.
  pooled(task, encoder, pooling):: {
    type: "pooled_classifier",
    text_field_embedder: embedders(encoder, network_drops_out_input=false),
    pooling: pooling,
    dropout: vars.dropout(0.1),
    regression: std.get(task, "regression", false),
  } + classification_extras(task),

  // ELMo on a separately encoded pair: cross-sentence bi-attention and ESIM's enhanced pooling,
  // no parameters of their own (bi_attention false: the Table 3 ablation).
  bi_attention(task, encoder, bi_attention=true):: {
    type: "pair_classifier",
    text_field_embedder: embedders(encoder, network_drops_out_input=false),
    pair_encoder: {type: "bi_attention_pair", bi_attention: bi_attention},
    dropout: vars.dropout(0.1),
    regression: std.get(task, "regression", false),
  } + classification_extras(task),
}
