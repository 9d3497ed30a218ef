"""
The task networks use the settings of allennlp-models' published training configs, which the
paper's feature-extraction networks come from (issue #21):

- `pair_classification/esim.jsonnet` and `esim_elmo.jsonnet`: ESIM's `initializer` block, and
  (with ELMo) the ELMo embedder at `dropout: 0.0`, since ESIM applies its own 0.5 to its inputs;
- `classification/biattentive_classification_network_elmo.jsonnet`: ELMo at `dropout: 0.0`
  beside BCN's `embedding_dropout: 0.5`;
- `tagging/ner_elmo.jsonnet`: ELMo at `dropout: 0.0` beside the CRF tagger's `dropout: 0.5`,
  `include_start_end_transitions: false`, encoder LSTM `dropout: 0.5`, and an L2 regularizer
  (alpha 0.1) on the scalar mix's `scalar_parameters`.

Each setting is checked twice: in the rendered config of every cell it concerns (found by
globbing, so the Table 5 ablations are covered), and in the model built from a fixture config.
"""

import json
import os
from pathlib import Path
from typing import Dict, List

import pytest
import torch
from allennlp.common import Params
from allennlp.common.params import evaluate_file
from allennlp.data import DatasetReader, Vocabulary
from allennlp.models import Model
from allennlp.nn.regularizers import L2Regularizer

import allennlp_tune
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT
from allennlp_tune.modules.token_embedders.tune_elmo import TuneElmoEmbedder

CONFIG_DIR = REPO_ROOT / "training_config"
CONFIGS = sorted(CONFIG_DIR.glob("*.jsonnet"))

# allennlp-models' training_config/pair_classification/esim.jsonnet (and esim_elmo.jsonnet).
PUBLISHED_ESIM_INITIALIZER = {
    "regexes": [
        [".*linear_layers.*weight", {"type": "xavier_uniform"}],
        [".*linear_layers.*bias", {"type": "zero"}],
        [".*weight_ih.*", {"type": "xavier_uniform"}],
        [".*weight_hh.*", {"type": "orthogonal"}],
        [".*bias_ih.*", {"type": "zero"}],
        [".*bias_hh.*", {"type": "lstm_hidden_bias"}],
    ]
}
# allennlp-models' training_config/tagging/ner_elmo.jsonnet.
PUBLISHED_NER_REGULARIZER = {"regexes": [["scalar_parameters", {"type": "l2", "alpha": 0.1}]]}

# The networks that apply dropout to the embedded input themselves, and where.
INPUT_DROPOUT = {
    "tune_esim": "dropout",
    "esim_regression": "dropout",
    "tune_bcn": "embedding_dropout",
    "tune_crf_tagger": "dropout",
}


def rendered(config: Path) -> Dict:
    """The config as a user without any TUNE_* variable gets it (the real run's defaults)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("TUNE_")}
    env.update({name: "" for name in allennlp_tune.config_vars.CONFIG_VARS})
    return json.loads(evaluate_file(str(config), ext_vars=env))


RENDERED = {config.stem: rendered(config) for config in CONFIGS}


def cells(*model_types: str) -> List[str]:
    return [name for name, c in RENDERED.items() if c["model"]["type"] in model_types]


def only_embedder(config: Dict) -> Dict:
    (embedder,) = config["model"]["text_field_embedder"]["token_embedders"].values()
    return embedder


def test_the_cells_are_found():
    # Guards the globbing below: every ESIM, BCN and ELMo CRF cell of the grid is checked.
    # {mnli, sick_e, mrpc} x {elmo, bert} fe, and Table 4's sick_e / mrpc bert_fe_separate
    assert len(cells("tune_esim")) == 8 and "mrpc_bert_fe_separate" in cells("tune_esim")
    # {sick_r, sts_b} x {elmo, bert} fe, and Table 4's sick_r / sts_b bert_fe_separate
    assert len(cells("esim_regression")) == 6
    assert sorted(cells("tune_crf_tagger")) == [
        "conll2003_elmo_bitfit",  # issue 15: the ELMo fine-tuning head, biases trained
        "conll2003_elmo_fe",
        "conll2003_elmo_fe_crf",
        "conll2003_elmo_ft",
        "conll2003_elmo_ft_bilstm_crf",
        "conll2003_elmo_ft_crf",
        "conll2003_elmo_sf",
    ]


@pytest.mark.parametrize("name", cells(*INPUT_DROPOUT))
def test_elmo_dropout_is_applied_once_by_the_network(name: str):
    config = RENDERED[name]
    embedder = only_embedder(config)
    own = config["model"][INPUT_DROPOUT[config["model"]["type"]]]
    assert own == 0.5
    if embedder["type"] == "tune_elmo":
        assert embedder["dropout"] == 0.0, f"{name}: ELMo dropout on top of the network's {own}"
    else:
        assert "dropout" not in embedder  # BERT features: no dropout of their own


def test_elmo_keeps_its_dropout_under_the_fine_tuning_heads():
    # The pooled and bi-attention heads drop out the pooled vector, not the embeddings, so the
    # ELMo embedder's own 0.5 is the only dropout on the token vectors there.
    for name in (
        "sst2_elmo_ft",
        "mnli_elmo_ft",
        "sick_r_elmo_ft_no_biattn",
        "sst2_elmo_sf",
        "sst2_elmo_bitfit",
        "mnli_elmo_bitfit",
    ):
        assert only_embedder(RENDERED[name])["dropout"] == 0.5, name


@pytest.mark.parametrize("name", cells("tune_esim", "esim_regression"))
def test_esim_has_the_published_initializer(name: str):
    assert RENDERED[name]["model"]["initializer"] == PUBLISHED_ESIM_INITIALIZER


@pytest.mark.parametrize("name", cells("tune_crf_tagger"))
def test_crf_tagger_has_the_published_ner_elmo_settings(name: str):
    model = RENDERED[name]["model"]
    assert model["include_start_end_transitions"] is False
    assert model["regularizer"] == PUBLISHED_NER_REGULARIZER
    assert model["dropout"] == 0.5
    if "encoder" in model:  # fe and ft_bilstm_crf: the two-layer BiLSTM
        assert model["encoder"]["num_layers"] == 2 and model["encoder"]["dropout"] == 0.5
    has_bilstm = name in ("conll2003_elmo_fe", "conll2003_elmo_ft_bilstm_crf")
    assert ("encoder" in model) == has_bilstm


# --- the models the fixture configs build -------------------------------------------------


def build_model(name: str, monkeypatch, tmp_path) -> Model:
    cased = name.startswith("conll2003")
    fixture_vars = {
        "TUNE_DATA_DIR": str(FIXTURE_DATA_DIR),
        "TUNE_BERT_MODEL": str(FIXTURE_MODELS_DIR / ("bert-cased" if cased else "bert-uncased")),
        "TUNE_ELMO_OPTIONS": str(FIXTURE_MODELS_DIR / "elmo" / "options.json"),
        "TUNE_ELMO_WEIGHTS": str(FIXTURE_MODELS_DIR / "elmo" / "weights.hdf5"),
        "TUNE_FEATURE_CACHE": "false",
    }
    for variable, value in fixture_vars.items():
        monkeypatch.setenv(variable, value)
    params = Params.from_file(str(CONFIG_DIR / f"{name}.jsonnet"))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    vocab = Vocabulary.from_instances(reader.read(params.pop("train_data_path")))
    torch.manual_seed(0)
    return Model.from_params(vocab=vocab, params=params.pop("model"))


def elmo_of(model: Model) -> TuneElmoEmbedder:
    (embedder,) = [m for m in model.modules() if isinstance(m, TuneElmoEmbedder)]
    return embedder


@pytest.mark.parametrize(
    "name, dropout",
    [
        ("sick_e_elmo_fe", "rnn_input_dropout"),
        ("sts_b_elmo_fe", "rnn_input_dropout"),
        ("sst2_elmo_fe", "_embedding_dropout"),
        ("conll2003_elmo_fe", "dropout"),
        ("conll2003_elmo_ft_crf", "dropout"),
    ],
)
def test_built_network_drops_out_elmo_once(name: str, dropout: str, monkeypatch, tmp_path):
    model = build_model(name, monkeypatch, tmp_path)
    assert getattr(model, dropout).p == 0.5
    assert elmo_of(model)._dropout.p == 0.0
    # In training mode the ELMo vectors themselves are no longer dropped out.
    embedder = elmo_of(model).train()
    characters = torch.randint(1, 200, (2, 4, 50))
    assert torch.equal(embedder(characters), embedder(characters))


def test_built_esim_is_initialized_as_published(monkeypatch, tmp_path):
    model = build_model("sick_e_elmo_fe", monkeypatch, tmp_path)
    lstm = model._encoder._module
    hidden = lstm.hidden_size
    assert torch.count_nonzero(lstm.bias_ih_l0) == 0
    # lstm_hidden_bias: forget gate (second quarter) 1, the other gates 0.
    expected_bias = torch.zeros(4 * hidden)
    expected_bias[hidden : 2 * hidden] = 1.0
    assert torch.equal(lstm.bias_hh_l0.detach(), expected_bias)
    # orthogonal: the (4h, h) recurrent weights have orthonormal columns.
    weight_hh = lstm.weight_hh_l0.detach()
    assert torch.allclose(weight_hh.T @ weight_hh, torch.eye(hidden), atol=1e-5)
    for feedforward in (model._projection_feedforward, model._output_feedforward):
        (linear,) = feedforward._linear_layers
        assert torch.count_nonzero(linear.bias) == 0
        fan_out, fan_in = linear.weight.shape
        bound = (6.0 / (fan_in + fan_out)) ** 0.5  # xavier_uniform's bound
        assert linear.weight.abs().max() <= bound
    # The initializer leaves the pretrained ELMo weights alone.
    fresh = TuneElmoEmbedder(
        str(FIXTURE_MODELS_DIR / "elmo" / "options.json"),
        str(FIXTURE_MODELS_DIR / "elmo" / "weights.hdf5"),
    )
    fresh_bilm = dict(fresh._elmo_bilm.named_parameters())
    for parameter_name, value in elmo_of(model)._elmo_bilm.named_parameters():
        assert torch.equal(value, fresh_bilm[parameter_name]), parameter_name


def test_built_bert_esim_keeps_the_pretrained_bert_weights(monkeypatch, tmp_path):
    from transformers import AutoModel

    model = build_model("sick_e_bert_fe", monkeypatch, tmp_path)
    assert torch.count_nonzero(model._encoder._module.bias_ih_l0) == 0  # initialized
    pretrained = dict(
        AutoModel.from_pretrained(str(FIXTURE_MODELS_DIR / "bert-uncased")).named_parameters()
    )
    checked = 0
    for parameter_name, value in model.named_parameters():
        for key, original in pretrained.items():
            if parameter_name.endswith("." + key) and value.shape == original.shape:
                assert torch.equal(value, original), parameter_name
                checked += 1
                break
    assert checked >= len(pretrained) - 2  # all of BERT (the pooler may be dropped)


@pytest.mark.parametrize("name", ["conll2003_elmo_fe", "conll2003_elmo_ft"])
def test_built_crf_tagger_matches_ner_elmo(name: str, monkeypatch, tmp_path):
    model = build_model(name, monkeypatch, tmp_path)
    assert model.include_start_end_transitions is False
    assert model.crf.include_start_end_transitions is False
    if name == "conll2003_elmo_fe":
        assert model.encoder._module.num_layers == 2 and model.encoder._module.dropout == 0.5
    # The L2 penalty is 0.1 x the sum of squares of the scalar mix weights, and nothing else.
    mix = elmo_of(model)._scalar_mix
    with torch.no_grad():
        for index, parameter in enumerate(mix.scalar_parameters):
            parameter.fill_(float(index + 1))
    expected = 0.1 * sum(float(index + 1) ** 2 for index in range(len(mix.scalar_parameters)))
    assert float(model.get_regularization_penalty().detach()) == pytest.approx(expected)
    (regularizer,) = [r for _, r in model._regularizer._regularizers]
    assert isinstance(regularizer, L2Regularizer)
