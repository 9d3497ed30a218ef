"""
The light frozen heads (`tune_frozen_head`, `TUNE_FE_HEAD=linear|mlp`) and their lean trainer
(`tune_frozen_features`), through the shipped fe configs on the fixture data and encoder.
"""

import json
import tarfile
from pathlib import Path
from typing import Dict

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive

import allennlp_tune  # noqa: F401  (registers the components)
from allennlp_tune.modules.token_embedders.tune_transformer import TuneTransformerEmbedder
from tests.configs.test_training_configs import (
    PREDICT_INPUTS,
    check_prediction,
    fixture_ext_vars,
    run_allennlp,
)

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "training_config"
LIBRARY = REPO / "allennlp_tune" / "configs" / "experiment.libsonnet"


def fixture_run(monkeypatch, tmp_path: Path, config: str, **ext_vars: str) -> Dict[str, str]:
    """The fixture ext vars (and `ext_vars`) in the environment, as AllenNLP reads them."""
    values = fixture_ext_vars(CONFIGS / f"{config}.jsonnet", tmp_path / "cache")
    values.update(ext_vars)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def rendered(monkeypatch, tmp_path, config: str, **ext_vars: str) -> Dict:
    fixture_run(monkeypatch, tmp_path, config, **ext_vars)
    return Params.from_file(str(CONFIGS / f"{config}.jsonnet")).as_dict(quiet=True)


def train(monkeypatch, config_file: Path, out: Path) -> Path:
    run_allennlp(monkeypatch, "train", str(config_file), "-s", str(out))
    return out / "model.tar.gz"


def dev_probabilities(archive: Path) -> torch.Tensor:
    """The archive's model on its dev set, in file order: `(instances, labels)`."""
    loaded = load_archive(str(archive))
    reader = loaded.validation_dataset_reader
    instances = list(reader.read(loaded.config["validation_data_path"]))
    outputs = loaded.model.forward_on_instances(instances)
    return torch.tensor([output["probs"].tolist() for output in outputs])


@pytest.mark.parametrize("config", ["sst2_bert_fe", "sick_e_bert_fe"])
def test_the_pooled_cache_trains_the_head_as_the_token_level_cache_does(
    config, tmp_path, monkeypatch
):
    """
    Mixing the pooled layers equals pooling the mixed sequence, so the head trained from the
    pooled cache and from the token-level one predicts the same dev labels with the same
    probabilities (up to where each rounds to float16). Both through `gradient_descent`, so
    that the batches are the same.
    """
    torch.set_num_threads(1)
    fixture_run(monkeypatch, tmp_path, config, TUNE_FE_HEAD="linear", TUNE_EPOCHS="4")
    probabilities = {}
    for features in ("pooled", "tokens"):
        # The shipped config, its model reading `features`, its trainer AllenNLP's own loop.
        variant = tmp_path / f"{features}.jsonnet"
        variant.write_text(
            f'(import "{CONFIGS / config}.jsonnet") + {{model+: {{features: "{features}"}}, '
            'trainer+: {type: "gradient_descent", feature_batch_size:: null}}\n'
        )
        archive = train(monkeypatch, variant, tmp_path / features)
        probabilities[features] = dev_probabilities(archive)
    pooled, tokens = probabilities["pooled"], probabilities["tokens"]
    assert pooled.shape == tokens.shape and len(pooled) >= 4
    assert torch.equal(pooled.argmax(-1), tokens.argmax(-1))
    torch.testing.assert_close(pooled, tokens, atol=2e-3, rtol=0)
    # The two trained differently from a head that saw other features: the pooled run is not
    # the token run's copy by accident (a shuffled-label run moves them by far more).
    assert (pooled - 1 / pooled.size(1)).abs().max() > 1e-3


def test_mixing_pooled_layers_equals_pooling_the_mixed_sequence(tmp_path):
    """The identity the pooled cache rests on, for one batch, with and without the cache."""
    torch.manual_seed(0)
    model = str(REPO / "fixtures" / "models" / "bert-uncased")
    for cache in (None, {"directory": str(tmp_path / "cache")}):
        embedder = TuneTransformerEmbedder(model, feature_cache=cache)
        # A mix far from uniform, so that a wrong layer order or weight would show.
        with torch.no_grad():
            for k, scalar in enumerate(embedder._scalar_mix.scalar_parameters):
                scalar.fill_(0.7 * k - 1.0)
            embedder._scalar_mix.gamma.fill_(1.3)
        token_ids = torch.tensor([[2, 11, 12, 13, 14, 3], [2, 15, 3, 0, 0, 0]])
        mask = token_ids != 0
        for _ in range(2):  # computed, then read back from the cache
            pooled = embedder.pooled_layers(token_ids, mask)
            # (batch, 2, layers, dim) -> (batch, 2, dim)
            mixed_pooled = embedder.mix_pooled(pooled)
            sequence = embedder(token_ids, mask)
            weights = mask.float()
            mean = (sequence * weights[..., None]).sum(1) / weights.sum(1, keepdim=True)
            torch.testing.assert_close(mixed_pooled[:, 0], mean, atol=2e-3, rtol=0)
            torch.testing.assert_close(mixed_pooled[:, 1], sequence[:, 0], atol=2e-3, rtol=0)


def test_mix_pooled_refuses_where_the_identity_fails():
    model = str(REPO / "fixtures" / "models" / "bert-uncased")
    pooled = torch.zeros(1, 5, 32)
    with pytest.raises(ConfigurationError, match="do_layer_norm"):
        TuneTransformerEmbedder(model, scalar_mix={"do_layer_norm": True}).mix_pooled(pooled)
    with pytest.raises(ConfigurationError, match="dropout 0.1"):
        TuneTransformerEmbedder(model, dropout=0.1).mix_pooled(pooled)
    with pytest.raises(ConfigurationError, match="mode feature_extraction"):
        trained = TuneTransformerEmbedder(model, mode="fine_tuning")
        trained.pooled_layers(torch.tensor([[101, 102]]), torch.tensor([[True, True]]))


def test_the_lean_trainer_reads_each_instance_once_for_the_whole_run(tmp_path, monkeypatch):
    """
    `tune_frozen_features`: the encoder (here uncached, so every read is a pass) runs over the
    training and validation data in the first epoch only: four epochs call `pooled_layers` as
    often as one does.
    """
    torch.set_num_threads(1)
    calls = []
    original = TuneTransformerEmbedder.pooled_layers

    def counted(self, token_ids, *args, **kwargs):
        calls.append(len(token_ids))
        return original(self, token_ids, *args, **kwargs)

    monkeypatch.setattr(TuneTransformerEmbedder, "pooled_layers", counted)
    instances = {}
    for epochs in ("1", "4"):
        calls.clear()
        fixture_run(
            monkeypatch,
            tmp_path,
            "sick_e_bert_fe",
            TUNE_FE_HEAD="mlp",
            TUNE_EPOCHS=epochs,
            TUNE_FEATURE_CACHE="false",
        )
        train(monkeypatch, CONFIGS / "sick_e_bert_fe.jsonnet", tmp_path / f"run{epochs}")
        instances[epochs] = sum(calls)
        metrics = json.loads((tmp_path / f"run{epochs}" / "metrics.json").read_text())
        assert metrics["epoch"] == int(epochs) - 1
    # Two sentences per pair, training and dev instances, once.
    assert instances["4"] == instances["1"] > 0
    cost = json.loads((tmp_path / "run4" / "cost.json").read_text())
    assert cost["epoch_encoder_trained"] == [False] * 4
    # The first epoch holds the pass and every later one reads the same rows from the tensor.
    assert len(set(cost["epoch_instances"])) == 1


@pytest.mark.parametrize("config", ["sst2_bert_fe", "sick_r_bert_fe"])
def test_a_light_head_archive_is_small_and_predicts_raw_text(config, tmp_path, monkeypatch):
    """
    The archive holds the head, not the frozen encoder (read again from the model when it
    loads); predict runs the encoder on raw text into an empty cache, and a second predict
    reading that cache gives the same output.
    """
    torch.set_num_threads(1)
    fixture_run(monkeypatch, tmp_path, config, TUNE_FE_HEAD="linear", TUNE_EPOCHS="2")
    archive = train(monkeypatch, CONFIGS / f"{config}.jsonnet", tmp_path / "run")
    with tarfile.open(archive) as tar:
        weights = torch.load(tar.extractfile("weights.th"), map_location="cpu")
    assert not any("transformer_model" in name for name in weights), sorted(weights)[:5]
    assert any(name.endswith("frozen_weights_fingerprint") for name in weights)
    monkeypatch.setenv("TUNE_FEATURE_CACHE_DIR", str(tmp_path / "predict_cache"))
    task = config.split("_bert_")[0]
    line = PREDICT_INPUTS.get(task, PREDICT_INPUTS["pair"])
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text(json.dumps(line) + "\n")
    outputs = []
    for attempt in range(2):
        predictions = tmp_path / f"predictions{attempt}.jsonl"
        run_allennlp(
            monkeypatch,
            "predict",
            str(archive),
            str(inputs),
            "--silent",
            "--output-file",
            str(predictions),
        )
        (output,) = [json.loads(row) for row in predictions.read_text().splitlines()]
        check_prediction(task, output)
        outputs.append(output)
        assert any((tmp_path / "predict_cache").rglob("*.f16"))
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize(
    "config, paper_type",
    [
        ("sst2_bert_fe", "tune_bcn"),
        ("sick_e_bert_fe", "tune_esim"),
        ("sick_r_bert_fe", "esim_regression"),
    ],
)
def test_tune_fe_head_chooses_the_frozen_network(config, paper_type, tmp_path, monkeypatch):
    paper = rendered(monkeypatch, tmp_path, config)
    assert paper["model"]["type"] == paper_type
    assert rendered(monkeypatch, tmp_path, config, TUNE_FE_HEAD="paper") == paper
    for head in ("linear", "mlp"):
        light = rendered(monkeypatch, tmp_path, config, TUNE_FE_HEAD=head)
        assert light["model"]["type"] == "tune_frozen_head"
        assert light["model"]["head"] == head
        assert light["trainer"]["type"] == "tune_frozen_features"
        embedder = light["model"]["text_field_embedder"]["token_embedders"]["tokens"]
        assert embedder["mode"] == "feature_extraction" and embedder["layers"] == "all"
        assert embedder["store_frozen_weights"] is False
        pair = config != "sst2_bert_fe"
        assert light["model"]["pair"] is pair
        if pair:  # each sentence pooled on its own
            assert light["dataset_reader"]["pair_encoding"] == "separate"
            assert paper["dataset_reader"]["pair_encoding"] == "joint"
    # The other modes never read it.
    ft = rendered(monkeypatch, tmp_path, config.replace("_fe", "_ft"))
    assert rendered(monkeypatch, tmp_path, config.replace("_fe", "_ft"), TUNE_FE_HEAD="mlp") == ft


def test_a_typo_in_tune_fe_head_is_refused_naming_the_choices(tmp_path, monkeypatch):
    with pytest.raises(Exception, match="TUNE_FE_HEAD is 'lineer'; expected one of paper, linear"):
        rendered(monkeypatch, tmp_path, "sst2_bert_fe", TUNE_FE_HEAD="lineer")


@pytest.mark.parametrize(
    "config, says",
    [
        ("conll2003_bert_fe", "tags words; use TUNE_FE_HEAD=paper"),
        ("sst2_elmo_fe", "with elmo use TUNE_FE_HEAD=paper"),
    ],
)
def test_a_light_head_where_none_applies_is_refused(config, says, tmp_path, monkeypatch):
    with pytest.raises(Exception, match=says):
        rendered(monkeypatch, tmp_path, config, TUNE_FE_HEAD="linear")


def test_a_single_text_regression_task_has_a_light_frozen_arm(tmp_path, monkeypatch):
    """BCN only classifies; a light head regresses, so fe exists for kind regression."""
    fixture_run(monkeypatch, tmp_path, "sst2_bert_fe")
    task = (
        '{name: "scores", kind: "regression", metric: "+pearson", train: "t.csv", '
        'validation: "d.csv", reader: {type: "tune_table", header: true, text: "text", '
        'label: "label"}}'
    )
    cell = tmp_path / "cell.jsonnet"
    cell.write_text(f'(import "{LIBRARY}").cell({task}, "bert", "fe")\n')
    with pytest.raises(Exception, match="kind regression has no paper feature-extraction"):
        Params.from_file(str(cell))
    monkeypatch.setenv("TUNE_FE_HEAD", "mlp")
    model = Params.from_file(str(cell)).as_dict()["model"]
    assert model["type"] == "tune_frozen_head" and model["regression"] is True
