"""
Issue #14: the first layer that reads the embeddings takes its input size from the embedder
(`text_field_embedder.get_output_dim()`, in the process that builds the model), so configs need
no `TUNE_BERT_DIM` / `TUNE_ELMO_DIM`. A config that still gives the size builds the same
modules (older configs and archives load as before); one that disagrees is a
`ConfigurationError` naming both sizes.
"""

import copy
from pathlib import Path
from typing import NamedTuple, Tuple

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.testing import ModelTestCase
from allennlp.common.util import prepare_environment
from allennlp.data import DatasetReader, Vocabulary
from allennlp.models import Model, load_archive
from allennlp.modules import Seq2SeqEncoder
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder
from allennlp.modules.token_embedders import Embedding

import allennlp_tune  # noqa: F401
import allennlp_tune.models  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_DATA_DIR
from allennlp_tune.models import PooledClassifier
from allennlp_tune.models.input_size import build_reading

CONFIGS = Path(__file__).parents[1] / "fixtures_configs" / "models"


class Case(NamedTuple):
    config: str  # gives the size explicitly (as before issue #14)
    without: str  # the same config without it
    data: str
    key: Tuple[str, str]  # (layer under model, size argument)
    layer: str  # the layer's attribute path on the built model
    dim: int  # what the layer reads
    source: str  # what produces it, as the error names it


CASES = {
    "tune_esim": Case(
        "tune_esim_elmo_mrpc.jsonnet",
        "tune_esim_elmo_mrpc_no_input_size.jsonnet",
        "mrpc/msr_paraphrase_test.txt",
        ("encoder", "input_size"),
        "_encoder",
        16,
        "text_field_embedder",
    ),
    "esim_regression": Case(
        "esim_regression_bert_joint_stsb.jsonnet",
        "esim_regression_bert_joint_stsb_no_input_size.jsonnet",
        "sts-b/sts-dev.csv",
        ("encoder", "input_size"),
        "_encoder",
        16,
        "text_field_embedder",
    ),
    "tune_bcn": Case(
        "tune_bcn_elmo.jsonnet",
        "tune_bcn_elmo_no_input_dim.jsonnet",
        "sst-2/dev.tsv",
        ("pre_encode_feedforward", "input_dim"),
        "_pre_encode_feedforward",
        16,
        "text_field_embedder",
    ),
    "tune_tagger": Case(
        "tune_tagger_bert_feature_extraction.jsonnet",
        "tune_tagger_bert_feature_extraction_no_input_size.jsonnet",
        "conll2003/iob2/valid.txt",
        ("wordpiece_encoder", "input_size"),
        "text_field_embedder._wordpiece_encoder",
        16,
        "text_field_embedder",
    ),
    "tune_crf_tagger": Case(
        "tune_crf_tagger_elmo.jsonnet",
        "tune_crf_tagger_elmo_no_input_size.jsonnet",
        "conll2003/eng.testa",
        ("encoder", "input_size"),
        "encoder",
        16,
        "text_field_embedder",
    ),
    "pair_classifier": Case(
        "pair_classifier_elmo_sick_relatedness.jsonnet",
        "pair_classifier_elmo_sick_relatedness_no_input_dim.jsonnet",
        "sick/SICK.txt",
        ("pair_encoder", "input_dim"),
        "_pair_encoder",
        16,
        "text_field_embedder",
    ),
    # Two layers without sizes: the encoder reads the embedder, the pair encoder the encoder.
    "pair_classifier_encoder": Case(
        "pair_classifier_words_mrpc_no_bi_attention.jsonnet",
        "pair_classifier_words_mrpc_no_bi_attention_no_input_size.jsonnet",
        "mrpc/msr_paraphrase_test.txt",
        ("pair_encoder", "input_dim"),
        "_pair_encoder",
        8,
        "encoder",
    ),
}
IDS = list(CASES)


def _layer(model: Model, path: str) -> torch.nn.Module:
    for name in path.split("."):
        model = getattr(model, name)
    return model


def _vocab(case: Case) -> Vocabulary:
    reader = DatasetReader.from_params(Params.from_file(CONFIGS / case.config)["dataset_reader"])
    return Vocabulary.from_instances(reader.read(str(FIXTURE_DATA_DIR / case.data)))


def _model_params(config: str) -> dict:
    return Params.from_file(CONFIGS / config)["model"].as_dict()


def _build(vocab: Vocabulary, params: dict, seed: int = 13) -> Model:
    prepare_environment(Params({"random_seed": seed, "numpy_seed": seed, "pytorch_seed": seed}))
    return Model.from_params(vocab=vocab, params=Params(copy.deepcopy(params)))


@pytest.mark.parametrize("name", IDS)
def test_variant_only_leaves_the_size_out(name):
    case = CASES[name]
    explicit, without = _model_params(case.config), _model_params(case.without)
    layer, key = case.key
    assert explicit[layer][key] == case.dim
    assert key not in without[layer]
    del explicit[layer][key]
    if name == "pair_classifier_encoder":
        del explicit["encoder"]["input_size"]
    assert explicit == without


@pytest.mark.parametrize("name", IDS)
def test_explicit_matching_size_builds_the_same_modules(name):
    """The explicit config (an old config or archive) and the one without the size give the
    same parameter names, shapes and, with the same seed, values."""
    case = CASES[name]
    vocab = _vocab(case)
    # The first build of a model in a process can draw differently from the seeded stream (on
    # the stock stack, torch 1.12, it did for esim_regression and tune_tagger, and only when no
    # earlier test had built one): build once before comparing, so the result does not depend
    # on which tests ran before in this process (pytest-xdist workers run few).
    _build(vocab, _model_params(case.without))
    explicit = _build(vocab, _model_params(case.config))
    derived = _build(vocab, _model_params(case.without))
    assert _layer(derived, case.layer).get_input_dim() == case.dim
    assert _layer(explicit, case.layer).get_input_dim() == case.dim
    explicit_state, derived_state = explicit.state_dict(), derived.state_dict()
    assert {k: v.shape for k, v in explicit_state.items()} == {
        k: v.shape for k, v in derived_state.items()
    }
    for key, value in explicit_state.items():
        assert torch.equal(value, derived_state[key]), key


@pytest.mark.parametrize("name", IDS)
def test_mismatching_explicit_size_names_both_sizes(name):
    case = CASES[name]
    vocab = _vocab(case)
    params = _model_params(case.config)
    layer, key = case.key
    params[layer][key] = case.dim + 3
    with pytest.raises(ConfigurationError) as error:
        _build(vocab, params)
    message = str(error.value)
    assert f"model.{layer}.{key} is {case.dim + 3}" in message
    assert f"the {case.source} outputs {case.dim}" in message


class TestWithoutInputSize(ModelTestCase):
    """Each config without the size trains (one epoch of the fixture data), saves, and its
    archive (whose config has no size either) loads with the same predictions."""

    test_model_batch_norm_verification = None  # no model is set up for the class

    @pytest.mark.parametrize("name", IDS)
    def test_train_save_and_load(self, name):
        case = CASES[name]
        self.set_up_model(CONFIGS / case.without, FIXTURE_DATA_DIR / case.data)
        model, loaded = self.ensure_model_can_train_save_and_load(self.param_file)
        assert _layer(loaded, case.layer).get_input_dim() == case.dim

    def test_archive_with_the_explicit_size_loads(self, tmp_path):
        """An archive whose config.json spells the size out (every archive before issue #14)
        loads into the same modules and weights."""
        case = CASES["tune_esim"]
        self.set_up_model(CONFIGS / case.config, FIXTURE_DATA_DIR / case.data)
        from allennlp.commands.train import train_model_from_file

        model = train_model_from_file(self.param_file, tmp_path / "run")
        archive = load_archive(tmp_path / "run" / "model.tar.gz")
        assert archive.config["model"]["encoder"]["input_size"] == case.dim
        loaded = archive.model
        assert loaded._encoder.get_input_dim() == case.dim
        trained = model.state_dict()
        for key, value in loaded.state_dict().items():
            torch.testing.assert_close(value, trained[key])


def test_pooled_classifier_seq2seq_encoder_takes_the_embedder_size():
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["a", "b"], "labels")
    embedder = {"token_embedders": {"tokens": {"type": "embedding", "embedding_dim": 6}}}
    params = {
        "type": "pooled_classifier",
        "text_field_embedder": embedder,
        "pooling": "mean",
        "seq2seq_encoder": {"type": "lstm", "hidden_size": 3, "bidirectional": True},
    }
    model = Model.from_params(vocab=vocab, params=Params(copy.deepcopy(params)))
    assert isinstance(model, PooledClassifier)
    assert model._seq2seq_encoder.get_input_dim() == 6
    assert model._head._output_layer.in_features == 6
    params["seq2seq_encoder"]["input_size"] = 5
    with pytest.raises(ConfigurationError, match="input_size is 5, but the text_field_embedder"):
        Model.from_params(vocab=vocab, params=Params(params))


def test_build_reading_accepts_a_built_module_and_checks_it():
    """Python callers may pass a built layer; its size is checked all the same."""
    encoder = Seq2SeqEncoder.from_params(
        Params({"type": "lstm", "input_size": 4, "hidden_size": 2})
    )
    assert build_reading(encoder, 4, "encoder", "text_field_embedder") is encoder
    assert build_reading(None, 4, "encoder", "text_field_embedder") is None
    with pytest.raises(ConfigurationError, match="input dim is 4, but the text_field_embedder"):
        build_reading(encoder, 5, "encoder", "text_field_embedder")
    # The same through a model constructed in Python.
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["a", "b"], "labels")
    embedder = BasicTextFieldEmbedder({"tokens": Embedding(embedding_dim=4, num_embeddings=3)})
    model = PooledClassifier(vocab, embedder, pooling="mean", seq2seq_encoder=encoder)
    assert model._seq2seq_encoder is encoder
