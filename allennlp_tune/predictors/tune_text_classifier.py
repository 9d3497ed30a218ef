import inspect
from typing import Any, Dict, List

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import JsonDict, sanitize
from allennlp.data import DatasetReader, Instance
from allennlp.models import Model
from allennlp.predictors.predictor import Predictor

from allennlp_tune.predictors.json_lines import JsonLinesPredictor, require_texts

SENTENCE = '{"sentence": ...}'
PAIR_KEYS = (("premise", "hypothesis"), ("sentence1", "sentence2"))
PAIR = '{"premise": ..., "hypothesis": ...} or {"sentence1": ..., "sentence2": ...}'
# The probability outputs of allennlp-tune's models, ESIM and BCN.
PROBABILITY_KEYS = ("probs", "label_probs", "class_probabilities")


@Predictor.register("tune_text_classifier")
class TuneTextClassifierPredictor(JsonLinesPredictor):
    """
    Predicts a label (with probabilities) or a score for one sentence or a sentence pair, for
    every classification and regression model of allennlp-tune (`pooled_classifier`,
    `pair_classifier`, `tune_esim`, `esim_regression`, `tune_bcn`, `tune_frozen_head`), and for
    allennlp-models' `esim` and `bcn` too (`--predictor tune_text_classifier`).

    Input, one JSON object a line, depending on the archive's dataset reader:

    - single-sentence readers (`sst2`, `cola`): `{"sentence": "..."}`;
    - pair readers (`sick`, `mrpc`, `sts_b`, `mnli`; joint or separate encoding):
      `{"premise": "...", "hypothesis": "..."}` or `{"sentence1": "...", "sentence2": "..."}`.

    Other keys (ids, gold labels) are ignored. A line that is not JSON, lacks the keys, holds a
    non-string or empty text (whitespace and zero-width characters alone count as empty), or is
    longer than the model's transformer can read raises a `ConfigurationError` naming the line
    and the key.

    Output: the model's outputs plus, for classifiers, `label` and `probabilities`
    (`{label: probability}`); regression models give `score`, one float.

    Registered as a `Predictor` with name "tune_text_classifier".

    ```
    allennlp predict model.tar.gz pairs.jsonl --include-package allennlp_tune
    ```
    """

    def __init__(self, model: Model, dataset_reader: DatasetReader, frozen: bool = True) -> None:
        super().__init__(model, dataset_reader, frozen)
        self._pairs = reads_pairs(dataset_reader)
        self._EXPECTED = PAIR if self._pairs else SENTENCE

    def predict(self, sentence: str = None, premise: str = None, hypothesis: str = None):
        if self._pairs:
            return self.predict_json({"premise": premise, "hypothesis": hypothesis})
        return self.predict_json({"sentence": sentence})

    def check_json(self, json_dict: Any, where: str) -> None:
        self._texts(json_dict, where)

    def _texts(self, json_dict: Any, where: str) -> List[str]:
        if self._pairs:
            expected = f"{PAIR} (this model reads sentence pairs)"
            return require_texts(json_dict, PAIR_KEYS, where, expected)
        expected = f"{SENTENCE} (this model reads single sentences)"
        return require_texts(json_dict, (("sentence",),), where, expected)

    def describe_field(self, name: str) -> str:
        if name == "tokens":  # the joint pair's field, or the single sentence's
            return "the pair, encoded jointly," if self._pairs else "'sentence'"
        return f"the {name}"  # premise / hypothesis (or sentence1 / sentence2)

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        return self._dataset_reader.text_to_instance(*self._texts(json_dict, "the input"))

    def predict_instance(self, instance: Instance) -> JsonDict:
        self._dataset_reader.apply_token_indexers(instance)
        return self._readable(self._model.forward_on_instance(instance))

    def predict_batch_instance(self, instances: List[Instance]) -> List[JsonDict]:
        for instance in instances:
            self._dataset_reader.apply_token_indexers(instance)
        return [self._readable(output) for output in self._model.forward_on_instances(instances)]

    def _readable(self, output: Dict[str, Any]) -> JsonDict:
        namespace = getattr(self._model, "label_namespace", "labels")
        for key in PROBABILITY_KEYS:
            if key in output:
                labels = self._model.vocab.get_index_to_token_vocabulary(namespace)
                probabilities = [float(p) for p in output[key]]
                output["probabilities"] = {
                    labels.get(i, str(i)): p for i, p in enumerate(probabilities)
                }
                if "label" not in output:
                    output["label"] = labels.get(probabilities.index(max(probabilities)))
                break
        return sanitize(output)


def reads_pairs(dataset_reader: DatasetReader) -> bool:
    """Whether the reader's `text_to_instance` takes a sentence pair (premise, hypothesis)."""
    try:
        parameters = inspect.signature(dataset_reader.text_to_instance).parameters
    except (TypeError, ValueError):
        raise ConfigurationError(
            f"Cannot inspect {type(dataset_reader).__name__}.text_to_instance to tell single "
            "sentences from sentence pairs."
        ) from None
    return "hypothesis" in parameters or "sentence2" in parameters
