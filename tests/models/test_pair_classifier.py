from pathlib import Path

import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.testing import ModelTestCase
from allennlp.models import Model

import allennlp_tune  # noqa: F401
import allennlp_tune.models  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_DATA_DIR

CONFIGS = Path(__file__).parents[1] / "fixtures_configs" / "models"


class TestPairClassifierElmoBiAttention(ModelTestCase):
    """ELMo fine-tuning, SICK-R: bi-attention + enhanced pooling, linear regression."""

    def setup_method(self):
        super().setup_method()
        self.set_up_model(
            CONFIGS / "pair_classifier_elmo_sick_relatedness.jsonnet",
            FIXTURE_DATA_DIR / "sick" / "SICK.txt",
        )

    def test_train_save_load_and_batch_consistency(self, stateless):
        model, _ = self.ensure_model_can_train_save_and_load(self.param_file)
        # The pair encoder adds no parameters: besides ELMo, only the output layer trains.
        own = {n for n, _ in model.named_parameters() if "text_field_embedder" not in n}
        assert own == {"_head._output_layer.weight", "_head._output_layer.bias"}
        assert model._head._output_layer.in_features == 16 * 16
        stateless(self.model)
        self.ensure_batch_predictions_are_consistent()

    def test_pair_encoder_dimension_is_checked(self):
        params = Params.from_file(self.param_file)["model"].as_dict()
        params["pair_encoder"]["input_dim"] = 32
        with pytest.raises(
            ConfigurationError,
            match=r"pair_encoder\.input_dim is 32, but the text_field_embedder outputs 16",
        ):
            Model.from_params(vocab=self.vocab, params=Params(params))


class TestPairClassifierWithoutBiAttention(ModelTestCase):
    """Table 3's "w/o bi-attn." ablation, MRPC with F1 of the paraphrase label."""

    def setup_method(self):
        super().setup_method()
        self.set_up_model(
            CONFIGS / "pair_classifier_words_mrpc_no_bi_attention.jsonnet",
            FIXTURE_DATA_DIR / "mrpc" / "msr_paraphrase_test.txt",
        )

    def test_train_save_load_and_batch_consistency(self):
        model, _ = self.ensure_model_can_train_save_and_load(self.param_file)
        assert {"accuracy", "mcc", "precision", "recall", "f1"} == set(model.get_metrics())
        self.ensure_batch_predictions_are_consistent()

    def test_unknown_positive_label_lists_the_labels(self):
        params = Params.from_file(self.param_file)["model"].as_dict()
        params["positive_label"] = "paraphrase"
        with pytest.raises(ConfigurationError, match=r"holds \['0', '1'\]"):
            Model.from_params(vocab=self.vocab, params=Params(params))
