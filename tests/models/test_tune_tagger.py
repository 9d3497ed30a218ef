from pathlib import Path

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.testing import ModelTestCase
from allennlp.data import Batch
from allennlp.models import Model
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder
from allennlp.modules.token_embedders import (
    PretrainedTransformerEmbedder,
    PretrainedTransformerMismatchedEmbedder,
)

import allennlp_tune  # noqa: F401
import allennlp_tune.models  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR
from allennlp_tune.models.tagging import FirstWordpieceEmbedder

CONFIGS = Path(__file__).parents[1] / "fixtures_configs" / "models"
IOB2_VALID = FIXTURE_DATA_DIR / "conll2003" / "iob2" / "valid.txt"
BERT = str(FIXTURE_MODELS_DIR / "bert-cased")


class TestTuneTaggerBertFeatureExtraction(ModelTestCase):
    """Frozen BERT, BiLSTM over all wordpieces, first wordpiece of each word, softmax."""

    def setup_method(self):
        super().setup_method()
        self.set_up_model(CONFIGS / "tune_tagger_bert_feature_extraction.jsonnet", IOB2_VALID)

    def test_train_save_load_and_batch_consistency(self):
        model, _ = self.ensure_model_can_train_save_and_load(self.param_file)
        # Frozen BERT: no weight of it trains; the wordpiece BiLSTM does.
        bert = [p for n, p in model.named_parameters() if "transformer_model" in n]
        assert bert and not any(p.requires_grad for p in bert)
        assert "f1-measure-overall" in model.get_metrics()
        self.ensure_batch_predictions_are_consistent()

    def test_one_vector_and_tag_per_word(self):
        output = self.model.forward_on_instances(self.instances[:2])
        for instance, prediction in zip(self.instances, output):
            words = instance["metadata"]["words"]
            assert prediction["words"] == words
            assert len(prediction["tags"]) == len(words)

    def test_configuration_errors(self):
        # A wordpiece encoder without first_wordpiece.
        params = Params.from_file(self.param_file)["model"].as_dict()
        params["first_wordpiece"] = False
        with pytest.raises(ConfigurationError, match="first_wordpiece: true"):
            Model.from_params(vocab=self.vocab, params=Params(params))
        # first_wordpiece with an embedder that already gives word vectors.
        params = Params.from_file(self.param_file)["model"].as_dict()
        params["text_field_embedder"]["token_embedders"]["tokens"] = {
            "type": "pretrained_transformer_mismatched",
            "model_name": BERT,
        }
        with pytest.raises(ConfigurationError, match="already pools wordpieces"):
            Model.from_params(vocab=self.vocab, params=Params(params))


def test_first_wordpiece_equals_mismatched_embedder_in_first_mode():
    """Without an encoder, the first-wordpiece state is AllenNLP's `sub_token_mode: "first"`."""
    from allennlp.data import Vocabulary
    from allennlp.data.fields import TextField
    from allennlp.data.instance import Instance
    from allennlp.data.token_indexers import PretrainedTransformerMismatchedIndexer
    from allennlp.data.tokenizers import Token

    indexer = PretrainedTransformerMismatchedIndexer(BERT)
    sentences = [["Peter", "Blackburnshire", "talks"], ["unbelievably", "New", "York", "!"]]
    instances = [
        Instance({"tokens": TextField([Token(w) for w in words], {"tokens": indexer})})
        for words in sentences
    ]
    vocab = Vocabulary()
    batch = Batch(instances)
    batch.index_instances(vocab)
    tokens = batch.as_tensor_dict()["tokens"]
    assert (tokens["tokens"]["offsets"][..., 1] > tokens["tokens"]["offsets"][..., 0]).any()

    first = FirstWordpieceEmbedder(
        BasicTextFieldEmbedder({"tokens": PretrainedTransformerEmbedder(BERT)})
    ).eval()
    mismatched = BasicTextFieldEmbedder(
        {"tokens": PretrainedTransformerMismatchedEmbedder(BERT, sub_token_mode="first")}
    ).eval()
    with torch.no_grad():
        expected = mismatched(tokens)
        actual = first(tokens)
    mask = tokens["tokens"]["mask"].unsqueeze(-1)
    torch.testing.assert_close(actual * mask, expected * mask)


def test_first_wordpiece_needs_offsets():
    """A `single_id` indexer gives no offsets: the error names the indexer to use."""
    embedder = FirstWordpieceEmbedder(
        BasicTextFieldEmbedder({"tokens": PretrainedTransformerEmbedder(BERT)})
    )
    tokens = {"tokens": {"tokens": torch.ones(1, 3, dtype=torch.long)}}
    with pytest.raises(ConfigurationError, match="pretrained_transformer_mismatched"):
        embedder(tokens)
