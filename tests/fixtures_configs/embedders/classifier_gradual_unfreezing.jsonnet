// The word-level classifier, frozen with the feature cache in epoch 0, then unfrozen one layer
// group per epoch from the top by allennlp-tune's `gradual_unfreezing` callback, with the
// `discriminative` optimizer (per-group learning rates; frozen groups are in it from the start).
(import "classifier_tune_transformer_mismatched.jsonnet") + {
  trainer+: {
    optimizer: {type: "discriminative", decay: 0.4, optimizer: {type: "adam", lr: 0.01}},
    callbacks: [{type: "gradual_unfreezing", groups_per_epoch: 1}],
    num_epochs: 3,
  },
}
