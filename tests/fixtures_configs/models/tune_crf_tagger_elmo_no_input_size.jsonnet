// tune_crf_tagger_elmo without the encoder's input_size: tune_crf_tagger takes it from the embedder.
std.mergePatch(import "tune_crf_tagger_elmo.jsonnet", {model: {encoder: {input_size: null}}})
