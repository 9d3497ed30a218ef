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
CONLL = FIXTURE_DATA_DIR / "conll2003"


class TestTuneCrfTaggerElmo(ModelTestCase):
    """ELMo feature extraction: frozen ELMo + BiLSTM + CRF, BIOUL tags."""

    def setup_method(self):
        super().setup_method()
        self.set_up_model(CONFIGS / "tune_crf_tagger_elmo.jsonnet", CONLL / "eng.testa")

    def test_train_save_load_and_batch_consistency(self, stateless):
        model, _ = self.ensure_model_can_train_save_and_load(self.param_file)
        # Frozen ELMo weights get no gradient (checked by allennlp: grad stays None); its scalar
        # mix trains.
        for name, parameter in model.named_parameters():
            if "_elmo_lstm" in name:
                assert not parameter.requires_grad, name
            if "scalar_mix" in name:
                assert parameter.requires_grad, name
        stateless(self.model)
        self.ensure_batch_predictions_are_consistent()
        metrics = self.model.get_metrics()
        assert "f1-measure-overall" in metrics

    def test_label_encoding_must_match_the_tags(self):
        params = Params.from_file(self.param_file)
        model_params = params["model"].as_dict()
        model_params["label_encoding"] = "BIO"  # the reader converts to BIOUL
        with pytest.raises(ConfigurationError, match="L/U- prefixes"):
            Model.from_params(vocab=self.vocab, params=Params(model_params))


class TestTuneCrfTaggerBertFineTuning(ModelTestCase):
    """Table 5 "+ CRF" with BERT fine-tuned: first wordpiece of each word, CRF, IOB1."""

    def setup_method(self):
        super().setup_method()
        self.set_up_model(CONFIGS / "tune_crf_tagger_bert_fine_tuning.jsonnet", CONLL / "eng.testa")

    test_model_batch_norm_verification = None  # run for the ELMo config above

    def test_gradients_and_batch_consistency(self):
        # Saving and loading is tested once per model class (with ELMo above); here only that
        # every fine-tuned BERT weight gets a gradient through the first wordpieces and the CRF.
        # BERT's pooler is not used by a tagger, so it legitimately gets no gradient.
        pooler = {n for n, _ in self.model.named_parameters() if ".pooler." in n}
        assert pooler
        batch = self.dataset.as_tensor_dict()
        self.check_model_computes_gradients_correctly(self.model, batch, pooler)
        self.ensure_batch_predictions_are_consistent()


class TestCrfTaggerOnTuneConll2003(ModelTestCase):
    """allennlp-models' `crf_tagger` works unchanged with the `tune_conll2003` reader."""

    def setup_method(self):
        super().setup_method()
        self.set_up_model(CONFIGS / "crf_tagger_words.jsonnet", CONLL / "eng.testa")

    def test_train_save_load(self):
        self.ensure_model_can_train_save_and_load(self.param_file)
        assert self.model.label_encoding == "BIO"
