"""
MPNet as all-mpnet-base-v2 ships it (what `allennlp tune-data fetch mpnet` installs), on the
tiny fixture laid out the same way (`fixtures/models/mpnet-sentence`: a 2-layer, hidden-32
MPNet with `modules.json` and mean pooling in `1_Pooling/config.json`): its layer groups, with
the relative position bias that every layer reads in `embeddings`; LoRA's targets; and one
training run of every mode (fe, ft, bitfit, lora, sf) through the grid's configs with
`TUNE_POOLING=mean`, whose archive reloads and predicts.
"""

import importlib.util
import json
from pathlib import Path
from typing import Dict

import pytest
import torch
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor
from transformers import AutoModel

import allennlp_tune  # noqa: F401  (registers the components)
import allennlp_tune.predictors  # noqa: F401
from allennlp_tune.data.encoder_wheels import model_hint, sentence_transformers_pooling
from allennlp_tune.modules.token_embedders import TuneTransformerEmbedder

from .conftest import FIXTURE_MODELS, REPO_ROOT, _fixture_words, fixture_script
from .test_encoder_families import EMBEDDER, _changed, _train

NAME = "mpnet-sentence"
BIAS = "transformer_model.encoder.relative_attention_bias.weight"
# `mode: "lora"` needs peft (the plugin's lora extra), which a stock AllenNLP stack cannot have.
needs_peft = pytest.mark.skipif(
    importlib.util.find_spec("peft") is None,
    reason="peft (allennlp-tune[lora]) is not installed; it needs torch >= 1.13",
)


@pytest.fixture(scope="module")
def mpnet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed fixture, or the same written by `scripts/fixture_models.py`."""
    if (FIXTURE_MODELS / NAME / "config.json").is_file():
        return FIXTURE_MODELS / NAME
    out = tmp_path_factory.mktemp("models") / NAME
    out.mkdir()
    fixture_script().write_mpnet_sentence(out, _fixture_words())
    return out


def test_the_fixture_is_laid_out_as_the_published_checkpoint(mpnet):
    for name in ("config.json", "model.safetensors", "tokenizer.json", "vocab.txt"):
        assert (mpnet / name).is_file(), name
    assert [module["path"] for module in json.loads((mpnet / "modules.json").read_text())] == [
        "",
        "1_Pooling",
        "2_Normalize",
    ]
    assert sentence_transformers_pooling(mpnet) == "mean"
    assert model_hint(mpnet).endswith(
        "tune-compare reads but the configs do not: with tune-grid or allennlp train set "
        "TUNE_POOLING=mean (the fine-tuning heads' pooling)"
    )
    config = AutoModel.from_pretrained(str(mpnet)).config
    assert (config.model_type, config.num_hidden_layers, config.hidden_size) == ("mpnet", 2, 32)
    if (mpnet / "pytorch_model.bin").is_file():  # the stock stack reads only this one
        from safetensors.torch import load_file

        bin_weights = torch.load(str(mpnet / "pytorch_model.bin"), map_location="cpu")
        safe_weights = load_file(str(mpnet / "model.safetensors"))
        assert sorted(bin_weights) == sorted(safe_weights)
        assert all(torch.equal(bin_weights[key], safe_weights[key]) for key in safe_weights)


def test_layer_groups_cover_every_parameter_once_with_the_position_bias_at_the_bottom(mpnet):
    embedder = TuneTransformerEmbedder(str(mpnet))
    assert embedder.layer_group_names() == ["embeddings", "layer_0", "layer_1"]
    groups = dict(embedder.layer_groups())
    names = [name for parameters in groups.values() for name, _ in parameters]
    encoder = [
        name for name, _ in embedder.named_parameters() if name.startswith("transformer_model.")
    ]
    assert sorted(names) == sorted(encoder) and len(names) == len(set(names))
    assert BIAS in [name for name, _ in groups["embeddings"]]
    for index in range(2):
        layer = f"transformer_model.encoder.layer.{index}."
        assert all(name.startswith(layer) for name, _ in groups[f"layer_{index}"])

    # Gradual unfreezing: the top layer trains while what the layers below compute, the shared
    # bias included, stays as it was; the bias trains with the embeddings, last.
    tokens = torch.tensor([[0, 5, 6, 7, 2]])
    mask = torch.ones_like(tokens, dtype=torch.bool)
    embedder.unfreeze(1)
    assert not dict(embedder.named_parameters())[BIAS].requires_grad
    model = embedder.transformer_model
    embedder.eval()
    with torch.no_grad():
        before = model(tokens, output_hidden_states=True).hidden_states
    optimizer = torch.optim.SGD([p for p in embedder.parameters() if p.requires_grad], lr=1.0)
    embedder.train()
    embedder(tokens, mask).pow(2).sum().backward()
    optimizer.step()
    embedder.eval()
    with torch.no_grad():
        after = model(tokens, output_hidden_states=True).hidden_states
    torch.testing.assert_close(after[1], before[1], rtol=0, atol=0)  # layer 0's output
    assert not torch.allclose(after[2], before[2])
    embedder.unfreeze(3)
    assert dict(embedder.named_parameters())[BIAS].requires_grad


@pytest.mark.parametrize(
    "targets, expected",
    [
        (None, {"q", "v"}),  # the default: the attention's query and value, as for BERT
        (["q", "k", "v", "o", "intermediate.dense", "output.dense"], None),
    ],
)
@needs_peft
def test_lora_targets(mpnet, targets, expected):
    lora = {"r": 2} if targets is None else {"r": 2, "target_modules": targets}
    embedder = TuneTransformerEmbedder(str(mpnet), mode="lora", lora=lora)
    adapted = {name.split(".lora_")[0] for name, _ in embedder.mode_parameters()}
    if expected is not None:
        assert {name.rsplit(".", 1)[1] for name in adapted} == expected
    else:  # every linear module of every layer: q, k, v, o and the two feed-forward ones
        assert len(adapted) == 2 * 6
    groups = embedder.layer_groups()
    assert not any("lora_" in name for name, _ in groups[0][1])
    for index, (_, parameters) in enumerate(groups[1:]):
        lora_names = [name for name, _ in parameters if "lora_" in name]
        assert lora_names and all(f".layer.{index}." in name for name in lora_names)


# ---- one run of every mode through the grid's configs ------------------------------------------

# mode -> (config, epochs, predictor input). sf: one frozen epoch, then one fine-tuned.
CELLS = {
    "fe": ("sst2_bert_fe.jsonnet", 1, {"sentence": "a charming and funny film"}),
    "ft": ("sick_e_bert_ft.jsonnet", 1, {"premise": "A man is playing", "hypothesis": "A dog"}),
    "bitfit": ("sst2_bert_bitfit.jsonnet", 1, {"sentence": "the plot is thin and silly"}),
    "lora": ("sts_b_bert_lora.jsonnet", 1, {"sentence1": "A man", "sentence2": "A man is eating"}),
    "sf": ("sst2_bert_sf.jsonnet", 2, {"sentence": "warm , moving and smart"}),
}
MODES = [pytest.param(mode, marks=needs_peft) if mode == "lora" else mode for mode in CELLS]


def _moved(trained: Dict[str, torch.Tensor], model: Path) -> Dict[str, bool]:
    buffers = {name for name, _ in AutoModel.from_pretrained(str(model)).named_buffers()}
    return {name: moved for name, moved in _changed(trained, model).items() if name not in buffers}


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_trains_and_its_archive_predicts(mode, mpnet, tmp_path, monkeypatch):
    config, epochs, inputs = CELLS[mode]
    monkeypatch.setenv("TUNE_POOLING", "mean")
    monkeypatch.setenv("TUNE_FROZEN_EPOCHS", "1")
    monkeypatch.chdir(REPO_ROOT)
    out = _train(monkeypatch, tmp_path, mpnet, config, epochs)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epoch"] == epochs - 1
    trained = torch.load(out / "best.th", map_location="cpu")
    mix = [name for name in trained if name.startswith(EMBEDDER + "_scalar_mix.scalar_param")]
    rendered = json.loads((out / "config.json").read_text())["model"]
    if mode == "fe":
        assert len(mix) == 3  # embeddings + 2 layers
        assert not any(_moved(trained, mpnet).values())
        assert list((tmp_path / "cache").rglob("*")), "the feature cache was not written"
    else:  # the fine-tuning heads pool as the checkpoint declares, through TUNE_POOLING
        assert rendered["type"] == "pooled_classifier" and rendered["pooling"] == "mean"
    if mode == "ft":
        moved = _moved(trained, mpnet)
        assert moved[BIAS.split(".", 1)[1]] and all(moved.values()), moved
    if mode == "bitfit":  # the archive holds the biases only: the shared position bias stays
        moved = _moved(trained, mpnet)
        assert moved and all(name.endswith("bias") for name in moved) and any(moved.values())
        assert EMBEDDER + BIAS not in trained
    if mode == "lora":
        encoder = [name for name in trained if name.startswith(EMBEDDER + "transformer_model.")]
        assert encoder and all("lora_" in name for name in encoder)
    if mode == "sf":
        phases = [json.loads(line) for line in (out / "adaptation.jsonl").read_text().splitlines()]
        assert [phase["trainable_groups"] for phase in phases][:2] == [0, 3]
        # The last epoch's weights (best.th may be the frozen epoch's): the encoder trained.
        last = torch.load(out / f"model_state_e{epochs}_b0.th", map_location="cpu")
        assert all(_moved(last, mpnet).values())

    archive = load_archive(str(out / "model.tar.gz"))
    output = Predictor.from_archive(archive, "tune_text_classifier").predict_json(inputs)
    if mode == "lora":  # STS-B: a score
        assert isinstance(output["score"], float)
    else:
        assert sum(output["probabilities"].values()) == pytest.approx(1.0)
        assert output["label"] in output["probabilities"]
