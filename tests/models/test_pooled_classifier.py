from pathlib import Path

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.testing import ModelTestCase
from allennlp.models import Model

import allennlp_tune  # noqa: F401
import allennlp_tune.models  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_DATA_DIR

CONFIGS = Path(__file__).parents[1] / "fixtures_configs" / "models"


def pooler_parameters(model):
    # BERT's pooler layer (dense + tanh on [CLS]) is not used: the paper's head is linear on the
    # [CLS] state itself, so the pooler legitimately gets no gradient.
    return {name for name, _ in model.named_parameters() if ".pooler." in name}


class TestPooledClassifierBertCls(ModelTestCase):
    """BERT fine-tuning, SST-2: [CLS] + linear softmax."""

    def setup_method(self):
        super().setup_method()
        self.set_up_model(
            CONFIGS / "pooled_classifier_bert_sst2.jsonnet",
            FIXTURE_DATA_DIR / "sst-2" / "dev.tsv",
        )

    def test_train_save_load_and_batch_consistency(self):
        model, _ = self.ensure_model_can_train_save_and_load(
            self.param_file, gradients_to_ignore=pooler_parameters(self.model)
        )
        # Fine-tuning: the encoder's own weights train.
        assert any(p.requires_grad for n, p in model.named_parameters() if "encoder.layer" in n)
        self.ensure_batch_predictions_are_consistent()

    def test_human_readable_output_has_the_label(self):
        output = self.model.forward_on_instance(self.instances[0])
        assert output["label"] in {"0", "1"}
        assert output["probs"].shape == (2,)

    def test_cls_pooling_uses_the_first_position_only(self):
        batch = self.dataset.as_tensor_dict()
        embedded = self.model._text_field_embedder(batch["tokens"])
        mask = batch["tokens"]["tokens"]["mask"]
        torch.testing.assert_close(self.model._pooler(embedded, mask), embedded[:, 0])

    def test_unknown_pooling_names_the_choices(self):
        params = Params.from_file(self.param_file)["model"].as_dict()
        params["pooling"] = "first"
        with pytest.raises(ConfigurationError, match="'cls' for BERT fine-tuning"):
            Model.from_params(vocab=self.vocab, params=Params(params))


class TestPooledClassifierMeanRegression(ModelTestCase):
    """STS-B, joint pair, mean pooling, one score."""

    def setup_method(self):
        super().setup_method()
        self.set_up_model(
            CONFIGS / "pooled_classifier_bert_stsb_mean.jsonnet",
            FIXTURE_DATA_DIR / "sts-b" / "sts-dev.csv",
        )

    test_model_batch_norm_verification = None  # run for the [CLS] config above

    def test_gradients_metrics_and_batch_consistency(self):
        # Saving and loading is tested with the [CLS] config above.
        batch = self.dataset.as_tensor_dict()
        self.check_model_computes_gradients_correctly(
            self.model, batch, pooler_parameters(self.model)
        )
        assert set(self.model.get_metrics()) == {"pearson", "spearman", "mse"}
        self.ensure_batch_predictions_are_consistent()

    def test_one_float_score_per_pair(self):
        outputs = self.model.forward_on_instances(self.instances[:2])
        assert all(output["score"].shape == () for output in outputs)

    def test_score_task_without_regression_says_what_to_set(self):
        params = Params.from_file(self.param_file)["model"].as_dict()
        params["regression"] = False
        with pytest.raises(ConfigurationError, match="regression: true"):
            Model.from_params(vocab=self.vocab, params=Params(params))


class TestPooledClassifierElmoMax(ModelTestCase):
    """ELMo fine-tuning, CoLA: max pooling over the LM states + softmax; Matthews correlation."""

    def setup_method(self):
        super().setup_method()
        self.set_up_model(
            CONFIGS / "pooled_classifier_elmo_cola_max.jsonnet",
            FIXTURE_DATA_DIR / "cola" / "in_domain_dev.tsv",
        )

    test_model_batch_norm_verification = None  # run for the [CLS] config above

    def test_gradients_metrics_and_batch_consistency(self, stateless):
        # Fine-tuning: every ELMo weight gets a gradient through the max pooling.
        batch = self.dataset.as_tensor_dict()
        self.check_model_computes_gradients_correctly(self.model, batch)
        assert all(p.requires_grad for p in self.model.parameters())
        assert {"accuracy", "mcc"} == set(self.model.get_metrics())
        stateless(self.model)
        self.ensure_batch_predictions_are_consistent()
