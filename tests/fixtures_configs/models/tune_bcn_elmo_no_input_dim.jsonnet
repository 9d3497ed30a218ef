// tune_bcn_elmo without pre_encode_feedforward's input_dim: tune_bcn takes it from the embedder.
std.mergePatch(import "tune_bcn_elmo.jsonnet", {model: {pre_encode_feedforward: {input_dim: null}}})
