"""
`allennlp train` with each embedder in each mode on the tiny fixtures (the experiment files in
`tests/fixtures_configs/embedders/`); the archives reload and predict.
"""

import json
import sys
from pathlib import Path

import pytest
import torch
from allennlp.commands import main
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

import allennlp_tune.modules  # noqa: F401  (registers the embedders)

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIGS = REPO_ROOT / "tests" / "fixtures_configs" / "embedders"
EMBEDDERS = {
    "tune_transformer": "tokens",
    "tune_transformer_mismatched": "tokens",
    "tune_elmo": "elmo",
}


@pytest.fixture
def at_repo_root(monkeypatch, models_dir):
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setenv("TUNE_MODELS_DIR", str(models_dir))


def allennlp_train(monkeypatch, config: Path, out: Path, overrides: dict) -> None:
    argv = ["allennlp", "train", str(config), "-s", str(out)]
    argv += ["--include-package", "allennlp_tune.modules", "-o", json.dumps(overrides)]
    monkeypatch.setattr(sys, "argv", argv)
    main(prog="allennlp")


@pytest.mark.parametrize("mode", ["feature_extraction", "fine_tuning"])
@pytest.mark.parametrize("embedder", sorted(EMBEDDERS))
def test_train_reload_and_predict(
    embedder, mode, at_repo_root, monkeypatch, tmp_path, private_default_cache
):
    key = f"model.text_field_embedder.token_embedders.{EMBEDDERS[embedder]}"
    overrides = {}
    if mode == "fine_tuning":
        overrides = {f"{key}.mode": "fine_tuning", f"{key}.feature_cache": None}
    out = tmp_path / "run"
    allennlp_train(monkeypatch, CONFIGS / f"classifier_{embedder}.jsonnet", out, overrides)

    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epoch"] == 1  # two epochs, counted from 0
    cache_entries = list((out / "feature_cache").rglob("*.f16"))
    # 12 distinct sentences, computed once in the first epoch and reused afterwards.
    assert len(cache_entries) == (12 if mode == "feature_extraction" else 0)

    archive = load_archive(str(out / "model.tar.gz"))
    trained = archive.model._text_field_embedder._token_embedders[EMBEDDERS[embedder]]
    config = archive.config.duplicate()["model"]
    pretrained = Model.from_params(vocab=archive.model.vocab, params=config)
    pretrained = pretrained._text_field_embedder._token_embedders[EMBEDDERS[embedder]]
    same = [
        torch.equal(a, b)
        for a, b in zip(
            trained.encoder.state_dict().values(), pretrained.encoder.state_dict().values()
        )
    ]
    assert all(same) if mode == "feature_extraction" else not all(same)
    initial = {"gamma": 1.0}  # and 0.0 for every layer weight
    mix = {
        name.rsplit("_scalar_mix.")[1]: float(parameter.detach())
        for name, parameter in trained.scalar_mix_parameters()
    }
    assert any(value != initial.get(name, 0.0) for name, value in mix.items())

    predictor = Predictor.from_archive(archive, "text_classifier")
    prediction = predictor.predict(sentence="a good film with a fun story")
    assert prediction["label"] in ("pos", "neg")
    assert sum(prediction["probs"]) == pytest.approx(1.0, abs=1e-5)
    if mode == "feature_extraction":
        # The archive's extraction folder is gone: the default cache folder is used instead.
        assert len(list(private_default_cache.rglob("*.f16"))) == 1


def test_fine_tuning_with_a_feature_cache_fails_at_construction(at_repo_root):
    params = Params.from_file(str(CONFIGS / "broken_fine_tuning_with_cache.jsonnet"))
    with pytest.raises(ConfigurationError, match="feature_cache.*only valid for a frozen"):
        Model.from_params(vocab=Vocabulary(), params=params["model"])


def test_gradual_unfreezing_uses_the_cache_only_while_frozen(at_repo_root, monkeypatch, tmp_path):
    out = tmp_path / "run"
    argv = ["allennlp", "train", str(CONFIGS / "classifier_gradual_unfreezing.jsonnet")]
    argv += ["-s", str(out), "--include-package", "allennlp_tune"]
    argv += ["--include-package", "allennlp_tune.modules"]
    monkeypatch.setattr(sys, "argv", argv)
    main(prog="allennlp")

    log = [json.loads(line) for line in (out / "adaptation.jsonl").read_text().splitlines()]
    # One record per epoch (and one for the epoch after the last).
    assert [record["trainable_groups"] for record in log][:3] == [0, 1, 2]
    assert log[2]["trainable_group_names"] == ["layer_2", "layer_3"]
    # Epoch 0 filled the cache; the unfrozen epochs bypassed it (nothing new was written).
    assert len(list((out / "feature_cache").rglob("*.f16"))) == 12

    archive = load_archive(str(out / "model.tar.gz"))
    trained = archive.model._text_field_embedder._token_embedders["tokens"]
    pretrained = Model.from_params(vocab=archive.model.vocab, params=archive.config["model"])
    pretrained = pretrained._text_field_embedder._token_embedders["tokens"]
    changed = [
        any(not torch.equal(p, q) for (_, p), (_, q) in zip(group, reference))
        for (_, group), (_, reference) in zip(trained.layer_groups(), pretrained.layer_groups())
    ]
    assert changed == [False, False, False, True, True]  # embeddings, layer_0..layer_3
