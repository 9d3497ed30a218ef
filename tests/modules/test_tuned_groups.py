"""
`tuned_groups`: fine-tuning (or BitFit / LoRA) of a chosen block of layer groups with the rest
frozen, on the tiny fixture encoders: what each spelling selects, that only the chosen groups
get gradients and change while the others stay bit-identical and in eval mode, the errors, and
a real training whose archive reloads and predicts the same.
"""

import numpy as np
import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive

from allennlp_tune.modules.token_embedders.freezable import parse_tuned_groups
from tests.modules.test_peft_modes import (
    KINDS,
    LORA,
    REPO_ROOT,
    SENTENCES,
    batch,  # noqa: F401  (fixture)
    build,  # noqa: F401  (fixture)
    masked_loss,
    output_mask,
    probabilities,
    snapshot,
    train_classifier,
)

GROUPS = ["embeddings", "layer_0", "layer_1", "layer_2"]


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("all", {0, 1, 2, 3}),
        ("top:1", {3}),
        ("top:3", {1, 2, 3}),
        ("bottom:1", {0}),
        ("bottom:2", {0, 1}),
        ("1-2", {1, 2}),
        ("2-2", {2}),
        ("embeddings,layer_1", {0, 2}),
        (" top:2 ", {2, 3}),
    ],
)
def test_each_spelling_selects_its_groups(spec, expected):
    assert parse_tuned_groups(spec, GROUPS, "fine_tuning", "e") == expected


@pytest.mark.parametrize(
    "spec, mode, message",
    [
        ("top:0", "fine_tuning", "K out of range"),
        ("top:5", "fine_tuning", "K out of range"),
        ("2-1", "fine_tuning", "not a range"),
        ("1-4", "fine_tuning", "not a range"),
        ("layer_9", "fine_tuning", "'layer_9' is not a group"),
        ("top", "fine_tuning", "'top' is not a group"),
        ("", "fine_tuning", "is empty"),
        ("top:1", "feature_extraction", 'mode is "feature_extraction", which trains no group'),
    ],
)
def test_a_bad_value_names_the_key_the_value_and_the_groups(spec, mode, message):
    with pytest.raises(ConfigurationError, match=r"^e\.tuned_groups is") as error:
        parse_tuned_groups(spec, GROUPS, mode, "e")
    assert message in str(error.value)
    if mode == "fine_tuning":
        assert "0=embeddings, 1=layer_0, 2=layer_1, 3=layer_2" in str(error.value)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("spec", ["top:1", "bottom:2"])
def test_only_the_tuned_groups_get_gradients_and_change(kind, spec, build, batch):  # noqa: F811
    embedder = build(kind, mode="fine_tuning", tuned_groups=spec)
    groups = embedder.layer_groups()
    count = len(groups)
    tuned = {count - 1} if spec == "top:1" else {0, 1}
    assert embedder.trainable_groups() == sorted(tuned)

    embedder.train()
    inner = getattr(embedder, "_matched_embedder", embedder)  # the word-level one wraps it
    frozen_modules = [
        module
        for name, module in inner.encoder.named_modules()
        if inner._module_groups.get(name) is not None and inner._module_groups[name] not in tuned
    ]
    assert frozen_modules and not any(module.training for module in frozen_modules)

    before = snapshot(embedder)
    optimizer = torch.optim.Adam([p for p in embedder.parameters() if p.requires_grad], lr=1e-2)
    tensors = batch(kind)
    for _ in range(2):
        optimizer.zero_grad()
        masked_loss(embedder(**tensors), output_mask(kind, tensors)).backward()
        optimizer.step()
    after = dict(embedder.named_parameters())
    for index, (group_name, parameters) in enumerate(groups):
        for name, parameter in parameters:
            if index in tuned:
                assert parameter.requires_grad, name
            else:
                assert not parameter.requires_grad and parameter.grad is None, name
                assert torch.equal(after[name].detach(), before[name]), name
        if index in tuned:
            changed = [not torch.equal(after[n].detach(), before[n]) for n, _ in parameters]
            assert sum(changed) > len(changed) // 2, group_name


@pytest.mark.parametrize("mode", ["bitfit", LORA])
def test_the_partial_modes_train_only_their_parameters_of_the_tuned_groups(
    mode,
    build,  # noqa: F811
    batch,  # noqa: F811
):
    embedder = build("tune_transformer", mode=mode, tuned_groups="top:1")
    top = len(embedder.layer_groups()) - 1
    selected = {name for name, _ in embedder.mode_parameters()}
    expected = {name for name, _ in embedder.layer_groups()[top][1] if name in selected}
    mix = {name for name, _ in embedder.scalar_mix_parameters()}
    assert expected
    assert {n for n, p in embedder.named_parameters() if p.requires_grad} == expected | mix


@pytest.mark.parametrize("kind", KINDS)
def test_unfreeze_and_freeze_still_act_after_tuned_groups(kind, build):  # noqa: F811
    embedder = build(kind, mode="fine_tuning", tuned_groups="bottom:1")
    count = len(embedder.layer_groups())
    embedder.unfreeze(1)
    assert embedder.trainable_groups() == [0, count - 1]
    embedder.freeze()
    assert embedder.trainable_groups() == []


def test_a_trained_top_block_archive_reloads_and_predicts_the_same(
    models_dir, monkeypatch, tmp_path
):
    monkeypatch.chdir(REPO_ROOT)
    out = tmp_path / "run"
    pretrained = build_pretrained(models_dir)
    model = train_classifier(
        models_dir,
        out,
        {"mode": "fine_tuning", "tuned_groups": "top:1", "feature_cache": None},
        {"num_epochs": 1},
    )
    embedder = model._text_field_embedder._token_embedders["tokens"]
    groups = embedder.layer_groups()
    trained = dict(embedder.named_parameters())
    for index, (group_name, parameters) in enumerate(groups):
        same = [torch.equal(trained[n].detach(), pretrained[n]) for n, _ in parameters]
        if index == len(groups) - 1:
            assert not all(same), group_name
        else:
            assert all(same), group_name

    archive = load_archive(str(out / "model.tar.gz"))
    reloaded = archive.model._text_field_embedder._token_embedders["tokens"]
    assert reloaded.trainable_groups() == [len(groups) - 1]
    np.testing.assert_array_equal(
        probabilities(archive.model, archive.dataset_reader, SENTENCES),
        probabilities(model, archive.dataset_reader, SENTENCES),
    )


def build_pretrained(models_dir):
    from allennlp.common import Params
    from allennlp.modules.token_embedders import TokenEmbedder

    embedder = TokenEmbedder.from_params(
        Params({"type": "tune_transformer", "model_name": str(models_dir / "bert-cased")})
    )
    return snapshot(embedder)
