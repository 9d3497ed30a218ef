"""
The parameter-efficient modes of the `tune_*` embedders, on the tiny fixture models:
`mode: "bitfit"` (only the biases train) and `mode: "lora"` (only LoRA matrices, added through
peft, train); their gradients and optimizer steps, configuration errors, the callbacks and the
`discriminative` optimizer over them, and archives that hold only what the mode trains.
"""

import importlib.util
import io
import json
import re
import shutil
import sys
import tarfile
from inspect import signature
from pathlib import Path
from typing import Dict, List, Set

import numpy as np
import pytest
import torch
from allennlp.commands import main
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.modules.token_embedders import TokenEmbedder
from allennlp.training.optimizers import Optimizer

try:
    from safetensors.torch import load_file, save_file
except ImportError:  # the stock AllenNLP 2.10.1 stack: transformers 4.20 reads only .bin files
    load_file = save_file = None

import allennlp_tune  # noqa: F401  (registers the callbacks and the optimizer)
import allennlp_tune.modules  # noqa: F401  (registers the embedders)
from allennlp_tune.analysis.features import (
    build_reader,
    extract_layer_features,
    load_archived_encoder,
    load_pretrained_encoder,
)
from allennlp_tune.data.paths import FIXTURE_DATA_DIR
from allennlp_tune.modes import EMBEDDER_MODES
from allennlp_tune.modules.token_embedders import lora as lora_module
from allennlp_tune.modules.token_embedders.freezable import FINGERPRINT_KEY

# `mode: "lora"` needs peft, the plugin's `lora` extra; a stock AllenNLP 2.10.1 environment
# (torch 1.12) cannot have it: every peft release requires torch >= 1.13.
needs_peft = pytest.mark.skipif(
    importlib.util.find_spec("peft") is None,
    reason="peft (allennlp-tune[lora]) is not installed; it needs torch >= 1.13",
)
LORA = pytest.param("lora", marks=needs_peft)
# torch < 1.13 (stock AllenNLP 2.10.1) has no weights_only; it loads the same tensors without it.
WEIGHTS_ONLY = {"weights_only": True} if "weights_only" in signature(torch.load).parameters else {}

KINDS = ["tune_transformer", "tune_transformer_mismatched", "tune_elmo"]
FAMILIES = [
    "bert-cased",
    "roberta",
    "xlm-roberta",
    "deberta-v2",
    "electra",
    "distilbert",
    "albert",
    "mpnet",
]
REPO_ROOT = Path(__file__).resolve().parents[2]
CLASSIFIER = (
    REPO_ROOT / "tests" / "fixtures_configs" / "embedders" / "classifier_tune_transformer.jsonnet"
)
EMBEDDER = "model.text_field_embedder.token_embedders.tokens"
SENTENCES = ["a good film with a fun story", "i hate it", "the actors were bad"]


@pytest.fixture
def build(bert_path, elmo_files):
    def make(kind: str, model_name: str = None, **config) -> TokenEmbedder:
        params = {"type": kind, "dropout": 0.0, **config}
        if kind == "tune_elmo":
            params.update(elmo_files)
        else:
            params["model_name"] = model_name or bert_path
        return TokenEmbedder.from_params(Params(params))

    return make


@pytest.fixture
def batch(wordpiece_batch, word_batch, elmo_batch):
    def make(kind: str) -> Dict[str, torch.Tensor]:
        if kind == "tune_transformer":
            return wordpiece_batch()
        if kind == "tune_transformer_mismatched":
            return word_batch()
        return elmo_batch()

    return make


def output_mask(kind: str, tensors: Dict[str, torch.Tensor]) -> torch.Tensor:
    if kind == "tune_elmo":
        return (tensors["elmo_tokens"] > 0).any(-1)
    return tensors["mask"]


def masked_loss(output: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    target = torch.linspace(-1, 1, output.size(-1))
    return (((output - target) ** 2).sum(-1) * mask).sum() / mask.sum()


def encoder_names(embedder) -> List[str]:
    return [name for _, group in embedder.layer_groups() for name, _ in group]


def snapshot(embedder) -> Dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in embedder.named_parameters()}


def trainable_names(embedder) -> Set[str]:
    return {name for name, p in embedder.named_parameters() if p.requires_grad}


def test_the_modes():
    assert EMBEDDER_MODES == ("feature_extraction", "fine_tuning", "bitfit", "lora")


# ------------------------------------------------------------------------------------------------
# bitfit
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_bitfit_trains_exactly_the_biases_and_a_step_changes_only_them(kind, build, batch):
    embedder = build(kind, mode="bitfit")
    assert embedder.mode == "bitfit"
    assert embedder.trainable_groups() == list(range(len(embedder.layer_groups())))
    names = encoder_names(embedder)
    biases = {name for name in names if name.endswith("bias")}
    mode_names = {name for name, _ in embedder.mode_parameters()}
    assert mode_names == biases and 0 < len(biases) < len(names)
    if kind != "tune_elmo":  # layer norm biases too (Ben Zaken et al.)
        assert any("LayerNorm.bias" in name for name in biases)
    mix = {name for name, _ in embedder.scalar_mix_parameters()}
    assert trainable_names(embedder) == biases | mix

    embedder.train()
    dropouts = [m for m in embedder.encoder.modules() if isinstance(m, torch.nn.Dropout)]
    assert all(module.training for module in dropouts)  # as in fine-tuning
    grad_enabled = []
    hook = embedder.encoder.register_forward_hook(
        lambda *_: grad_enabled.append(torch.is_grad_enabled())
    )
    before = snapshot(embedder)
    optimizer = torch.optim.Adam([p for p in embedder.parameters() if p.requires_grad], lr=1e-2)
    tensors = batch(kind)
    masked_loss(embedder(**tensors), output_mask(kind, tensors)).backward()
    hook.remove()
    assert grad_enabled == [True]
    parameters = dict(embedder.named_parameters())
    for name in names:
        assert (parameters[name].grad is not None) == (name in biases), name
    nonzero = {name for name in biases if parameters[name].grad.abs().sum() > 0}
    # Some biases get no gradient at all (the attention keys' is cancelled by the softmax).
    assert len(nonzero) > len(biases) // 2
    optimizer.step()
    for name in names:
        changed = not torch.equal(parameters[name].detach(), before[name])
        assert changed == (name in nonzero), name


# ------------------------------------------------------------------------------------------------
# lora
# ------------------------------------------------------------------------------------------------


@needs_peft
@pytest.mark.parametrize("family", FAMILIES)
def test_lora_trains_only_the_lora_matrices_of_every_family(
    family, models_dir, wordpiece_batch, build
):
    path = str(models_dir / family)
    tensors = wordpiece_batch(model=path)
    mask = tensors["mask"]
    frozen = build("tune_transformer", model_name=path).eval()
    embedder = build("tune_transformer", model_name=path, mode="lora", lora={"r": 4, "alpha": 8})
    # lora_B starts at zero: the adapted encoder computes what the pretrained one does.
    embedder.eval()
    with torch.no_grad():
        torch.testing.assert_close(embedder(**tensors), frozen(**tensors), rtol=0, atol=1e-6)

    names = encoder_names(embedder)
    lora = {name for name, _ in embedder.mode_parameters()}
    assert lora and all(".lora_A." in name or ".lora_B." in name for name in lora)
    assert lora == {name for name in names if "lora_" in name}
    mix = {name for name, _ in embedder.scalar_mix_parameters()}
    assert trainable_names(embedder) == lora | mix
    # Each LoRA matrix is in its layer's group; the embeddings have none.
    groups = embedder.layer_groups()
    assert not any("lora_" in name for name, _ in groups[0][1])
    assert all(any("lora_" in name for name, _ in group) for _, group in groups[1:])

    embedder.train()
    lora_dropouts = [
        m for n, m in embedder.encoder.named_modules() if n.endswith("lora_dropout.default")
    ]
    assert lora_dropouts and all(module.training for module in lora_dropouts)
    parameters = dict(embedder.named_parameters())
    lora_a = {name for name in lora if ".lora_A." in name}
    lora_b = lora - lora_a
    optimizer = torch.optim.Adam([p for p in embedder.parameters() if p.requires_grad], lr=1e-2)
    before = snapshot(embedder)

    masked_loss(embedder(**tensors), mask).backward()
    for name in names:
        assert (parameters[name].grad is not None) == (name in lora), name
    assert all(parameters[name].grad.abs().sum() > 0 for name in lora_b)
    # With lora_B = 0, lora_A's gradient is exactly zero in the first step.
    assert all(parameters[name].grad.abs().sum() == 0 for name in lora_a)
    optimizer.step()
    for name in names:
        changed = not torch.equal(parameters[name].detach(), before[name])
        assert changed == (name in lora_b), name

    optimizer.zero_grad()
    masked_loss(embedder(**tensors), mask).backward()
    optimizer.step()
    for name in names:
        changed = not torch.equal(parameters[name].detach(), before[name])
        assert changed == (name in lora), name


@needs_peft
def test_lora_default_targets_come_from_peft_then_ours(build, models_dir):
    def targets(family: str, **lora) -> Set[str]:
        embedder = build(
            "tune_transformer", model_name=str(models_dir / family), mode="lora", lora=lora
        )
        return {name.split(".lora_")[0].rsplit(".", 1)[1] for name, _ in embedder.mode_parameters()}

    assert targets("bert-cased") == {"query", "value"}  # peft's mapping
    assert targets("deberta-v2") == {"query_proj", "value_proj"}
    assert targets("distilbert") == {"q_lin", "v_lin"}  # allennlp-tune's
    assert targets("bert-cased", target_modules=["key", "dense"]) == {"key", "dense"}


@needs_peft
def test_lora_on_the_word_level_embedder(build, word_batch):
    embedder = build("tune_transformer_mismatched", mode="lora", lora={"r": 2})
    lora = {name for name, _ in embedder.mode_parameters()}
    assert lora and all(name.startswith("_matched_embedder.") and "lora_" in name for name in lora)
    stored = set(embedder.stored_parameter_names())
    assert lora <= stored and not any(
        ".transformer_model." in name and "lora_" not in name for name in stored
    )
    tensors = word_batch()
    embedder.train()
    masked_loss(embedder(**tensors), tensors["mask"]).backward()
    parameters = dict(embedder.named_parameters())
    for name in encoder_names(embedder):
        assert (parameters[name].grad is not None) == (name in lora), name


# ------------------------------------------------------------------------------------------------
# errors
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_invalid_mode_combinations_say_what_to_change(kind, build):
    with pytest.raises(ConfigurationError, match="feature_cache.*biases train.*feature_extraction"):
        build(kind, mode="bitfit", feature_cache={})
    if kind == "tune_elmo":
        with pytest.raises(ConfigurationError, match="LoRA adapts transformer linear layers"):
            build(kind, mode="lora")
        return
    with pytest.raises(ConfigurationError, match="feature_cache.*LoRA.*feature_extraction"):
        build(kind, mode="lora", feature_cache={})
    for mode in ("fine_tuning", "bitfit", "feature_extraction"):
        with pytest.raises(ConfigurationError, match=f"lora is set but {kind}.mode is '{mode}'"):
            build(kind, mode=mode, lora={"r": 4})
    with pytest.raises(ConfigurationError, match=r"unknown key\(s\) \['rank'\]"):
        build(kind, mode="lora", lora={"rank": 4})
    with pytest.raises(ConfigurationError, match="lora.r is 0"):
        build(kind, mode="lora", lora={"r": 0})
    with pytest.raises(ConfigurationError, match="target_modules is 'query'"):
        build(kind, mode="lora", lora={"target_modules": "query"})
    with pytest.raises(ConfigurationError, match="'qkv'.*'dense', 'key', 'query', 'value'"):
        build(kind, mode="lora", lora={"target_modules": ["query", "qkv"]})


@needs_peft
def test_a_family_without_default_targets_lists_its_linear_modules(build, models_dir, monkeypatch):
    monkeypatch.delitem(lora_module.EXTRA_TARGET_MODULES, "distilbert")
    with pytest.raises(
        ConfigurationError,
        match="nor allennlp-tune has a default for the model type 'distilbert'.*'q_lin'",
    ):
        build("tune_transformer", model_name=str(models_dir / "distilbert"), mode="lora")


# ------------------------------------------------------------------------------------------------
# the optimizer and the callbacks
# ------------------------------------------------------------------------------------------------


def classifier_params(models_dir: Path, **embedder) -> Params:
    params = Params.from_file(
        str(CLASSIFIER), ext_vars={"TUNE_MODELS_DIR": str(models_dir)}
    ).as_dict()
    params["model"]["text_field_embedder"]["token_embedders"]["tokens"].update(
        {"feature_cache": None, **embedder}
    )
    return Params(params)


@pytest.mark.parametrize("mode", ["bitfit", LORA])
def test_discriminative_optimizer_holds_the_mode_parameters_and_the_head_only(mode, models_dir):
    params = classifier_params(models_dir, mode=mode)
    vocab = Vocabulary(tokens_to_add={"labels": ["pos", "neg"]})
    model = Model.from_params(vocab=vocab, params=params["model"])
    embedder = model._text_field_embedder._token_embedders["tokens"]
    trainable = [[n, p] for n, p in model.named_parameters() if p.requires_grad]
    optimizer = Optimizer.from_params(
        model_parameters=trainable,
        params=Params(
            {"type": "discriminative", "decay": 0.5, "optimizer": {"type": "adam", "lr": 0.01}}
        ),
    )
    in_optimizer = {id(p) for group in optimizer.param_groups for p in group["params"]}
    encoder = {id(p) for _, group in embedder.layer_groups() for _, p in group}
    mode_ids = {id(p) for _, p in embedder.mode_parameters()}
    head = {id(p) for p in model.parameters()} - encoder
    assert in_optimizer == mode_ids | head
    rates = {g["layer_group_name"]: g["lr"] for g in optimizer.param_groups if g["params"]}
    groups = embedder.layer_group_names()  # embeddings, layer_0 .. layer_3
    expected = {name: 0.01 * 0.5 ** (len(groups) - 1 - i) for i, name in enumerate(groups)}
    if mode == "lora":
        del expected["embeddings"]  # no LoRA matrix below the first layer
    assert rates == {**expected, "head": 0.01}


def train_classifier(models_dir: Path, out: Path, embedder: dict, trainer: dict) -> Model:
    params = classifier_params(models_dir, **embedder)
    params["trainer"].update(trainer)
    return train_model(params, str(out))


def lora_b_trained(embedder) -> List[bool]:
    """Per layer group: whether its lora_B matrices moved from zero."""
    return [
        any("lora_B" in name and p.abs().sum() > 0 for name, p in group)
        for _, group in embedder.layer_groups()
    ]


@needs_peft
@pytest.mark.parametrize("freeze_by", ["requires_grad", "masking"])
def test_gradual_unfreezing_over_lora_trains_only_the_top_groups_lora(
    freeze_by, models_dir, monkeypatch, tmp_path
):
    monkeypatch.chdir(REPO_ROOT)
    out = tmp_path / "run"
    model = train_classifier(
        models_dir,
        out,
        {"mode": "lora", "lora": {"r": 4, "alpha": 8, "dropout": 0.0}},
        {
            "num_epochs": 3,
            "optimizer": {
                "type": "discriminative",
                "decay": 0.5,
                "optimizer": {"type": "adam", "lr": 0.01},
            },
            "callbacks": [{"type": "gradual_unfreezing", "freeze_by": freeze_by}],
        },
    )
    log = [json.loads(line) for line in (out / "adaptation.jsonl").read_text().splitlines()]
    assert [record["trainable_group_names"] for record in log][:3] == [
        [],
        ["layer_3"],
        ["layer_2", "layer_3"],
    ]
    # The epoch checkpoints load strictly (as the trainer restores best.th) without the frozen
    # weights; after epoch 1 only the top group's LoRA trained, after epoch 2 the top two.
    reference = Model.from_params(
        vocab=model.vocab,
        params=classifier_params(
            models_dir, mode="lora", lora={"r": 4, "alpha": 8, "dropout": 0.0}
        )["model"],
    )
    embedder = reference._text_field_embedder._token_embedders["tokens"]
    pretrained = {
        k: v.clone() for k, v in embedder.encoder.state_dict().items() if "lora_" not in k
    }
    for epoch, expected in (
        (1, [False, False, False, False, True]),
        (2, [False, False, False, True, True]),
    ):
        # AllenNLP names the checkpoint after an epoch by the number of epochs completed.
        state = torch.load(out / f"model_state_e{epoch + 1}_b0.th")
        assert not any(".transformer_model." in k and "lora_" not in k for k in state)
        reference.load_state_dict(state)  # strict
        assert lora_b_trained(embedder) == expected
    trained = model._text_field_embedder._token_embedders["tokens"]
    for name, tensor in trained.encoder.state_dict().items():
        if "lora_" not in name:
            assert torch.equal(tensor, pretrained[name]), name


@pytest.mark.parametrize("mode", ["bitfit", LORA])
def test_stack_then_finetune_trains_the_mode_parameters_in_phase_two(
    mode, models_dir, monkeypatch, tmp_path
):
    monkeypatch.chdir(REPO_ROOT)
    out = tmp_path / "run"
    model = train_classifier(
        models_dir,
        out,
        {"mode": mode},
        {
            "num_epochs": 2,
            "optimizer": {
                "type": "discriminative",
                "decay": 1.0,
                "optimizer": {"type": "adam", "lr": 0.01},
            },
            "callbacks": [
                {"type": "stack_then_finetune", "frozen_epochs": 1, "restart_schedule": False}
            ],
        },
    )
    log = [json.loads(line) for line in (out / "adaptation.jsonl").read_text().splitlines()]
    assert [record["trainable_groups"] for record in log][:2] == [0, 5]
    embedder = model._text_field_embedder._token_embedders["tokens"]
    fresh = TokenEmbedder.from_params(
        Params(
            {"type": "tune_transformer", "model_name": str(models_dir / "bert-cased"), "mode": mode}
        )
    )
    # Before the switch (epoch 0's checkpoint) the encoder is untouched; after it, only what the
    # mode trains has moved.
    reference = Model.from_params(
        vocab=model.vocab, params=classifier_params(models_dir, mode=mode)["model"]
    )
    reference.load_state_dict(torch.load(out / "model_state_e1_b0.th"))  # after epoch 0
    phase_one = reference._text_field_embedder._token_embedders["tokens"]
    final = dict(embedder.named_parameters())
    initial = dict(fresh.named_parameters())
    after_one = dict(phase_one.named_parameters())
    mode_names = {name for name, _ in embedder.mode_parameters()}
    for name in encoder_names(embedder):
        if mode == "lora" and ".lora_A." in name:
            continue  # randomly initialised in each build
        assert torch.equal(after_one[name], initial[name]), name
        if name not in mode_names:
            assert torch.equal(final[name], initial[name]), name
    assert any(
        not torch.equal(final[name], initial[name]) for name in mode_names if ".lora_A." not in name
    )


# ------------------------------------------------------------------------------------------------
# archives
# ------------------------------------------------------------------------------------------------


def perturbed_copy(source: Path, target: Path, shift: float) -> Path:
    # Both formats the fixture holds: transformers >= 4.35 reads model.safetensors,
    # transformers 4.20 (stock AllenNLP 2.10.1, no safetensors installed) pytorch_model.bin.
    shutil.copytree(source, target)
    key = "encoder.layer.0.attention.self.key.weight"
    if (target / "model.safetensors").is_file() and load_file is not None:
        weights = load_file(str(target / "model.safetensors"))
        weights[key] += shift
        save_file(weights, str(target / "model.safetensors"), metadata={"format": "pt"})
    if (target / "pytorch_model.bin").is_file():
        weights = torch.load(str(target / "pytorch_model.bin"), map_location="cpu")
        weights[key] += shift
        torch.save(weights, str(target / "pytorch_model.bin"))
    return target


def probabilities(model: Model, reader, sentences: List[str]) -> np.ndarray:
    model.eval()
    instances = [reader.text_to_instance(sentence) for sentence in sentences]
    for instance in instances:
        reader.apply_token_indexers(instance)
    batch = Batch(instances)
    batch.index_instances(model.vocab)
    with torch.no_grad():
        return model(**batch.as_tensor_dict())["probs"].numpy()


@pytest.mark.parametrize("mode", ["bitfit", LORA])
def test_an_archive_holds_only_what_the_mode_trains_and_predicts_the_same(
    mode, models_dir, monkeypatch, tmp_path
):
    monkeypatch.chdir(REPO_ROOT)
    out = tmp_path / "run"
    model = train_classifier(models_dir, out, {"mode": mode}, {"num_epochs": 1})
    embedder = model._text_field_embedder._token_embedders["tokens"]
    prefix = "_text_field_embedder.token_embedder_tokens."

    with tarfile.open(out / "model.tar.gz") as archive_file:
        data = archive_file.extractfile("weights.th").read()
    weights = torch.load(io.BytesIO(data), **WEIGHTS_ONLY)
    mode_names = {prefix + name for name, _ in embedder.mode_parameters()}
    encoder_keys = {key for key in weights if key.startswith(prefix + "transformer_model.")}
    assert encoder_keys == mode_names
    assert weights[prefix + FINGERPRINT_KEY].dtype == torch.uint8
    stored = {prefix + name for name in embedder.stored_parameter_names()}
    assert stored == {key for key in weights if key.startswith(prefix)} - {prefix + FINGERPRINT_KEY}
    head = {name for name, _ in model.named_parameters() if not name.startswith(prefix)}
    assert head and head <= set(weights)
    full = sum(p.numel() for p in model.parameters())
    assert sum(weights[key].numel() for key in encoder_keys) < full / 4

    archive = load_archive(str(out / "model.tar.gz"))
    expected = probabilities(model, archive.dataset_reader, SENTENCES)
    np.testing.assert_array_equal(
        probabilities(archive.model, archive.dataset_reader, SENTENCES), expected
    )

    # The same pretrained weights in another folder load; changed ones are refused, by name.
    same = perturbed_copy(models_dir / "bert-cased", tmp_path / "same", 0.0)
    moved = load_archive(str(out / "model.tar.gz"), overrides={f"{EMBEDDER}.model_name": str(same)})
    np.testing.assert_array_equal(
        probabilities(moved.model, archive.dataset_reader, SENTENCES), expected
    )
    changed = perturbed_copy(models_dir / "bert-cased", tmp_path / "changed", 1e-3)
    with pytest.raises(
        ConfigurationError, match=f"{re.escape(repr(str(changed)))}.*fingerprints differ"
    ):
        load_archive(str(out / "model.tar.gz"), overrides={f"{EMBEDDER}.model_name": str(changed)})

    # `allennlp evaluate` reads the archive the same way.
    metrics_file = tmp_path / "metrics.json"
    data_path = str(
        REPO_ROOT / "tests" / "fixtures_configs" / "embedders" / "text_classification.jsonl"
    )
    argv = ["allennlp", "evaluate", str(out / "model.tar.gz"), data_path]
    argv += ["--output-file", str(metrics_file), "--include-package", "allennlp_tune"]
    monkeypatch.setattr(sys, "argv", argv)
    main(prog="allennlp")
    assert "accuracy" in json.loads(metrics_file.read_text())

    # `allennlp probe` / `mi` take the transformer out of the archive: LoRA or trained biases
    # included, so its top layer differs from the pretrained one's (and, with LoRA, which adds
    # nothing below the first layer, the embedding layer does not).
    tuned = load_archived_encoder(str(out / "model.tar.gz"))
    pretrained = load_pretrained_encoder(str(models_dir / "bert-cased"))
    reader = build_reader("sst2", tuned.tokenizer_name)
    top = tuned.num_layers - 1
    sst2 = str(FIXTURE_DATA_DIR / "sst-2" / "dev.tsv")
    ours = extract_layer_features(tuned, reader, sst2, layers=[0, top])
    theirs = extract_layer_features(pretrained, reader, sst2, layers=[0, top])
    assert not np.allclose(ours.vectors[top], theirs.vectors[top])
    if mode == "lora":
        np.testing.assert_allclose(ours.vectors[0], theirs.vectors[0], atol=1e-6)


@needs_peft
def test_loading_onto_other_base_weights_fails_naming_model_name(build, models_dir, tmp_path):
    base = perturbed_copy(models_dir / "bert-cased", tmp_path / "base", 0.0)
    trained = build("tune_transformer", model_name=str(base), mode="lora")
    with torch.no_grad():
        for _, parameter in trained.mode_parameters():
            parameter.add_(0.5)
    state = trained.state_dict()
    assert not any("base_layer" in key for key in state)

    again = build("tune_transformer", model_name=str(base), mode="lora")
    again.load_state_dict(state)  # strict: the missing frozen weights are the pretrained ones
    for (name, p), (_, q) in zip(again.named_parameters(), trained.named_parameters()):
        assert torch.equal(p, q), name

    # (A new folder: AllenNLP caches the models it loaded by their name.)
    changed = perturbed_copy(models_dir / "bert-cased", tmp_path / "changed", 1e-3)
    other = build("tune_transformer", model_name=str(changed), mode="lora")
    with pytest.raises(ConfigurationError, match=f"model_name {re.escape(repr(str(changed)))}"):
        other.load_state_dict(state)
    # A full state dict (feature extraction or fine-tuning) has no fingerprint and loads as ever.
    full = build("tune_transformer", mode="fine_tuning")
    assert FINGERPRINT_KEY not in "".join(full.state_dict())


def test_an_elmo_bitfit_state_holds_the_biases_and_reloads_from_weight_file(build, elmo_batch):
    trained = build("tune_elmo", mode="bitfit")
    with torch.no_grad():
        for _, parameter in trained.mode_parameters():
            parameter.add_(0.1)
    state = trained.state_dict()
    encoder_keys = {key for key in state if key.startswith("_elmo_bilm.")}
    assert encoder_keys == {name for name, _ in trained.mode_parameters()}
    assert set(state) == set(trained.stored_parameter_names()) | {FINGERPRINT_KEY}

    again = build("tune_elmo", mode="bitfit")
    again.load_state_dict(state)
    tensors = elmo_batch()
    torch.testing.assert_close(again.eval()(**tensors), trained.eval()(**tensors), rtol=0, atol=0)
