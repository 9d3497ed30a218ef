from typing import Dict, Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models.model import Model

from allennlp_tune.models.reading_esim import ReadingEsim
from allennlp_tune.training.metrics import RegressionMetrics


@Model.register("esim_regression")
class EsimRegression(ReadingEsim):
    """
    allennlp-models' ESIM for a score instead of a label, as the paper uses it on frozen features
    for SICK-R and STS-B ("the ESIM model, modified as needed to support regression"). Everything
    up to `output_logit` is ESIM's own; `output_logit` must output one value, which is the score,
    trained with mean squared error against the reader's float label. Like `tune_esim`, it
    reads separately encoded pairs or a jointly encoded one (split by token type id, or at the
    separator for tokenizers without type ids).

    Metrics: `pearson` (primary, as in the paper: `"validation_metric": "+pearson"`),
    `spearman`, `mse`. Output: `score`, one float per pair. The default predictor,
    `tune_text_classifier`, reads `{"premise": ..., "hypothesis": ...}` or
    `{"sentence1": ..., "sentence2": ...}`.

    Registered as a `Model` with name "esim_regression".

    ```jsonnet
    "dataset_reader": {"type": "sts_b", "pair_encoding": "separate"},
    "model": {
      "type": "esim_regression",
      "text_field_embedder": {...},
      // no input_size: it is the text_field_embedder's output dim
      "encoder": {"type": "lstm", "hidden_size": 300, "bidirectional": true},
      "matrix_attention": {"type": "dot_product"},
      "projection_feedforward": {"input_dim": 2400, "hidden_dims": 300, "num_layers": 1,
                                 "activations": "relu"},
      "inference_encoder": {"type": "lstm", "input_size": 300, "hidden_size": 300,
                            "bidirectional": true},
      "output_feedforward": {"input_dim": 2400, "num_layers": 1, "hidden_dims": 300,
                             "activations": "relu", "dropout": 0.5},
      "output_logit": {"input_dim": 300, "num_layers": 1, "hidden_dims": 1,
                       "activations": "linear"}
    }
    ```

    # Parameters

    (`text_field_embedder`, and `encoder` without its input size: see `ReadingEsim`,
    models/reading_esim.py; every other parameter of `esim`: `matrix_attention`,
    `projection_feedforward`, `inference_encoder`, `output_feedforward`, `output_logit` with
    `hidden_dims: 1`, `dropout`, `initializer`)
    """

    def __init__(self, vocab: Vocabulary, **kwargs) -> None:
        super().__init__(vocab, **kwargs)
        outputs = self._output_logit.get_output_dim()
        if outputs != 1:
            raise ConfigurationError(
                f"esim_regression predicts one score, but model.output_logit outputs {outputs} "
                "values. Set output_logit.hidden_dims to 1 (with activations 'linear')."
            )
        self._metrics = RegressionMetrics()
        self._mse = torch.nn.MSELoss()

    scores = True

    def _scored(
        self, esim_output: Dict[str, torch.Tensor], label: Optional[torch.Tensor]
    ) -> Dict[str, torch.Tensor]:
        """
        `score` `(batch_size,)`, and `loss` (mean squared error) when `label` (float scores) is
        given.
        """
        # ESIM ran without a label (the network only); its softmax over one value is dropped.
        score = esim_output["label_logits"].squeeze(-1)
        output_dict = {"score": score}
        if label is not None:
            label = label.float().view(-1)
            output_dict["loss"] = self._mse(score, label)
            self._metrics(score, label)
        return output_dict

    def make_output_human_readable(
        self, output_dict: Dict[str, torch.Tensor]
    ) -> Dict[str, torch.Tensor]:
        return output_dict

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        return self._metrics.get_metric(reset)
