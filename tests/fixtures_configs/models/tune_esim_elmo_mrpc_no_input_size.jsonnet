// tune_esim_elmo_mrpc without the encoder's input_size: tune_esim takes it from the embedder.
std.mergePatch(import "tune_esim_elmo_mrpc.jsonnet", {model: {encoder: {input_size: null}}})
