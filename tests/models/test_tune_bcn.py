from pathlib import Path

from allennlp.common.testing import ModelTestCase

import allennlp_tune  # noqa: F401
import allennlp_tune.models  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_DATA_DIR

CONFIGS = Path(__file__).parents[1] / "fixtures_configs" / "models"


class TestTuneBcnElmo(ModelTestCase):
    """SST-2 feature extraction: frozen ELMo + BCN."""

    def setup_method(self):
        super().setup_method()
        self.set_up_model(CONFIGS / "tune_bcn_elmo.jsonnet", FIXTURE_DATA_DIR / "sst-2" / "dev.tsv")

    def test_train_save_load_and_batch_consistency(self, stateless):
        model, _ = self.ensure_model_can_train_save_and_load(self.param_file)
        assert {"accuracy", "mcc", "f1"} <= set(model.get_metrics())
        assert type(model).default_predictor == "tune_text_classifier"
        stateless(self.model)
        self.ensure_batch_predictions_are_consistent()
