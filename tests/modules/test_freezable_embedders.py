"""
What the three `tune_*` embedders share, on the tiny fixture models: the two modes, the layer
groups, freezing and unfreezing, and the feature cache.
"""

import logging
from pathlib import Path
from typing import Dict

import pytest
import torch
import transformers
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import TokenEmbedder
from transformers.activations import ACT2FN

import allennlp_tune.modules  # noqa: F401  (registers the embedders)
from allennlp_tune.modules.feature_cache import FeatureCache

KINDS = ["tune_transformer", "tune_transformer_mismatched", "tune_elmo"]
CACHE_LOGGER = "allennlp_tune.modules.feature_cache.store"


@pytest.fixture
def build(bert_path, elmo_files):
    def make(kind: str, **config) -> TokenEmbedder:
        params = {"type": kind, "dropout": 0.0, **config}
        if kind == "tune_elmo":
            params.update(elmo_files)
        else:
            params["model_name"] = bert_path
        return TokenEmbedder.from_params(Params(params))

    return make


@pytest.fixture
def batch(wordpiece_batch, word_batch, elmo_batch):
    def make(kind: str, texts=None) -> Dict[str, torch.Tensor]:
        if kind == "tune_transformer":
            return wordpiece_batch(texts)
        if kind == "tune_transformer_mismatched":
            return word_batch(texts)
        return elmo_batch(texts)

    return make


def output_mask(kind: str, tensors: Dict[str, torch.Tensor]) -> torch.Tensor:
    if kind == "tune_elmo":
        return (tensors["elmo_tokens"] > 0).any(-1)
    return tensors["mask"]


def masked_loss(output: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    target = torch.linspace(-1, 1, output.size(-1))
    return (((output - target) ** 2).sum(-1) * mask).sum() / mask.sum()


def assert_close_where(mask: torch.Tensor, actual: torch.Tensor, expected: torch.Tensor, **tol):
    keep = mask.unsqueeze(-1).expand_as(actual)
    torch.testing.assert_close(actual[keep], expected[keep], **tol)


# float16 storage: about 3 significant digits on values of order 1.
FLOAT16 = {"atol": 1e-2, "rtol": 1e-2}


def cache_files(directory: Path):
    return sorted(path for path in directory.rglob("*.f16"))


@pytest.mark.parametrize("kind", KINDS)
def test_feature_extraction_step_trains_the_mix_and_leaves_the_encoder_bit_identical(
    kind, build, batch
):
    embedder = build(kind, mode="feature_extraction")
    tensors = batch(kind)
    encoder_before = {name: t.clone() for name, t in embedder.encoder.state_dict().items()}
    mix_before = [p.detach().clone() for _, p in embedder.scalar_mix_parameters()]

    embedder.train()
    assert not any(module.training for module in embedder.encoder.modules())
    trainable = [p for p in embedder.parameters() if p.requires_grad]
    assert {id(p) for p in trainable} == {id(p) for _, p in embedder.scalar_mix_parameters()}

    grad_enabled_inside = []
    hook = embedder.encoder.register_forward_hook(
        lambda *_: grad_enabled_inside.append(torch.is_grad_enabled())
    )
    optimizer = torch.optim.Adam(trainable, lr=0.1)
    masked_loss(embedder(**tensors), output_mask(kind, tensors)).backward()
    optimizer.step()
    hook.remove()

    assert grad_enabled_inside == [False]  # no autograd graph through the frozen encoder
    assert all(p.grad is None for p in embedder.encoder.parameters())
    for name, tensor in embedder.encoder.state_dict().items():
        assert torch.equal(tensor, encoder_before[name]), name
    mix_after = [p.detach() for _, p in embedder.scalar_mix_parameters()]
    assert all(not torch.equal(a, b) for a, b in zip(mix_before, mix_after))


@pytest.mark.parametrize("kind", KINDS)
def test_fine_tuning_gives_every_encoder_weight_a_gradient(kind, build, batch):
    embedder = build(kind, mode="fine_tuning")
    embedder.train()
    assert all(p.requires_grad for p in embedder.encoder.parameters())
    dropouts = [m for m in embedder.encoder.modules() if isinstance(m, torch.nn.Dropout)]
    assert all(module.training for module in dropouts)

    tensors = batch(kind)
    masked_loss(embedder(**tensors), output_mask(kind, tensors)).backward()
    for name, parameter in embedder.encoder.named_parameters():
        assert parameter.grad is not None, name
        assert parameter.grad.abs().sum() > 0, name


@pytest.mark.parametrize("kind", KINDS)
def test_layer_groups_cover_every_encoder_parameter_once_bottom_to_top(kind, build):
    embedder = build(kind, mode="fine_tuning")
    named_groups = embedder.layer_groups()
    names = [name for name, _ in named_groups]
    assert names == embedder.layer_group_names()
    groups = [group for _, group in named_groups]
    flat = [parameter for group in groups for _, parameter in group]
    assert len(flat) == len({id(p) for p in flat})
    assert {id(p) for p in flat} == {id(p) for p in embedder.encoder.parameters()}
    assert not {id(p) for _, p in embedder.scalar_mix_parameters()} & {id(p) for p in flat}
    named = dict(embedder.named_parameters())
    assert all(named[name] is parameter for group in groups for name, parameter in group)

    if kind == "tune_elmo":
        assert names == ["char_cnn", "lstm_0", "lstm_1"]
        assert all("._token_embedder." in f".{name}" for name, _ in groups[0])
        for index in (1, 2):
            layer = {f"forward_layer_{index - 1}.", f"backward_layer_{index - 1}."}
            assert all(any(part in name for part in layer) for name, _ in groups[index])
            assert {name.split("_elmo_lstm.")[1].split(".")[0] for name, _ in groups[index]} == {
                part[:-1] for part in layer
            }
    else:
        num_layers = embedder.encoder.config.num_hidden_layers
        assert names == ["embeddings"] + [f"layer_{i}" for i in range(num_layers)]
        assert all(".embeddings." in name for name, _ in groups[0])
        for index in range(1, num_layers + 1):
            assert all(f".encoder.layer.{index - 1}." in name for name, _ in groups[index])


@pytest.mark.parametrize("kind", KINDS)
def test_the_mix_over_all_layers_includes_the_bottom_layer(kind, build):
    embedder = build(kind, layers="all")
    weights = [n for n, _ in embedder.scalar_mix_parameters() if "scalar_parameters" in n]
    if kind == "tune_elmo":
        assert len(weights) == 3
    else:
        assert len(weights) == embedder.encoder.config.num_hidden_layers + 1
    assert build(kind, layers="top").scalar_mix_parameters() == []


@pytest.mark.parametrize("kind", KINDS)
def test_unfreeze_top_groups_then_freeze(kind, build, batch, tmp_path):
    embedder = build(kind, feature_cache={"directory": str(tmp_path)})
    num_groups = len(embedder.layer_groups())
    assert embedder.trainable_groups() == [] and embedder.is_frozen

    embedder.unfreeze(2)
    assert embedder.trainable_groups() == [num_groups - 2, num_groups - 1]
    embedder.train()
    for index, (_, group) in enumerate(embedder.layer_groups()):
        assert all(p.requires_grad == (index >= num_groups - 2) for _, p in group)
    tensors = batch(kind)
    masked_loss(embedder(**tensors), output_mask(kind, tensors)).backward()
    for index, (_, group) in enumerate(embedder.layer_groups()):
        assert all((p.grad is not None) == (index >= num_groups - 2) for _, p in group), index
    assert cache_files(tmp_path) == []  # bypassed while anything trains

    embedder.unfreeze()
    assert embedder.trainable_groups() == list(range(num_groups))
    embedder.freeze()
    embedder.train()
    assert embedder.trainable_groups() == [] and embedder.is_frozen
    assert not any(p.requires_grad for p in embedder.encoder.parameters())
    assert not any(module.training for module in embedder.encoder.modules())
    embedder(**tensors)
    assert len(cache_files(tmp_path)) == len(tensors[next(iter(tensors))])

    with pytest.raises(ValueError, match="groups"):
        embedder.unfreeze(num_groups + 1)


@pytest.mark.skipif(
    ACT2FN["gelu"] is ACT2FN["gelu"],
    reason=f"transformers {transformers.__version__} shares one activation module (ACT2FN "
    "holds instances) among all layers, so the top layer's GELU is also the frozen layers' "
    "and cannot follow train/eval apart from them (GELU behaves the same in both)",
)
def test_unfrozen_layer_modules_follow_train_and_eval(build):
    embedder = build("tune_transformer")
    embedder.unfreeze(1)
    embedder.train()
    top_layer = embedder.encoder.encoder.layer[-1]
    assert all(module.training for module in top_layer.modules())
    assert not any(module.training for module in embedder.encoder.embeddings.modules())
    embedder.eval()
    assert not any(module.training for module in top_layer.modules())


@pytest.mark.parametrize("kind", KINDS)
def test_cached_outputs_equal_fresh_ones_whatever_the_batching(kind, build, batch, texts, tmp_path):
    tensors = batch(kind)
    mask = output_mask(kind, tensors)
    fresh = build(kind).eval()(**tensors)

    embedder = build(kind, feature_cache={"directory": str(tmp_path)}).eval()
    cache = embedder.feature_cache
    first = embedder(**tensors)
    size = mask.size(0)
    assert (cache.misses, cache.writes) == (size, size)
    assert_close_where(mask, first, fresh, **FLOAT16)
    second = embedder(**tensors)
    assert cache.hits == size
    assert torch.equal(second, first)

    # Other batches, with other padding, hit the same per-sentence entries.
    pair = batch(kind, [texts[2], texts[0]])
    rebatched = embedder(**pair)
    assert cache.hits == size + 2 and cache.writes == size
    for row, original in ((0, 2), (1, 0)):
        length = int(output_mask(kind, pair)[row].sum())
        torch.testing.assert_close(rebatched[row, :length], first[original, :length])

    # A new run reads the disk.
    again = build(kind, feature_cache={"directory": str(tmp_path)}).eval()
    assert torch.equal(again(**tensors), first)
    assert (again.feature_cache.hits, again.feature_cache.writes) == (size, 0)


@pytest.mark.parametrize("kind", KINDS)
def test_a_cache_built_with_one_model_is_never_used_by_another(kind, build, batch, tmp_path):
    tensors = batch(kind)
    build(kind, feature_cache={"directory": str(tmp_path)}).eval()(**tensors)
    entries = cache_files(tmp_path)

    # The same architecture, configuration and inputs, other weights (as after fine-tuning and
    # loading an archive): the keys differ, nothing is read.
    reference = build(kind).eval()
    state = reference.state_dict()
    top_group = reference.layer_groups()[-1][1]
    some_weight = top_group[0][0]
    state[some_weight] = state[some_weight] + 0.05
    reference.load_state_dict(state)

    other = build(kind, feature_cache={"directory": str(tmp_path)}).eval()
    other.load_state_dict(state)
    output = other(**tensors)
    assert other.feature_cache.hits == 0
    assert len(cache_files(tmp_path)) == 2 * len(entries)
    assert_close_where(output_mask(kind, tensors), output, reference(**tensors), **FLOAT16)


@pytest.mark.parametrize("kind", KINDS)
def test_a_truncated_entry_is_logged_and_recomputed(kind, build, batch, tmp_path, caplog):
    tensors = batch(kind)
    first = build(kind, feature_cache={"directory": str(tmp_path)}).eval()(**tensors)
    damaged = cache_files(tmp_path)[0]
    data = damaged.read_bytes()
    damaged.write_bytes(data[: len(data) // 2])

    embedder = build(kind, feature_cache={"directory": str(tmp_path)}).eval()
    with caplog.at_level(logging.WARNING, logger=CACHE_LOGGER):
        output = embedder(**tensors)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(damaged) in warnings[0].getMessage()
    assert "recomputed" in warnings[0].getMessage()
    cache = embedder.feature_cache
    assert (cache.rejected, cache.writes) == (1, 1)
    assert_close_where(output_mask(kind, tensors), output, first, **FLOAT16)
    assert damaged.read_bytes() != data[: len(data) // 2]  # rewritten whole

    # Built before the log is cleared: building logs its parameters at INFO when an earlier
    # test (an in-process `allennlp train`) left the root logger at INFO.
    repaired = build(kind, feature_cache={"directory": str(tmp_path)}).eval()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=CACHE_LOGGER):
        repaired(**tensors)
    assert repaired.feature_cache.rejected == 0 and not caplog.records


@pytest.mark.parametrize("kind", KINDS)
def test_invalid_configurations_say_what_to_change(kind, build):
    with pytest.raises(ConfigurationError, match="feature_cache.*feature_extraction"):
        build(kind, mode="fine_tuning", feature_cache={})
    with pytest.raises(ConfigurationError, match=f"{kind}.mode"):
        build(kind, mode="frozen")
    with pytest.raises(ConfigurationError, match=f"{kind}.layers"):
        build(kind, layers=[0, 99])
    with pytest.raises(ConfigurationError, match=f"{kind}.layers"):
        build(kind, layers="middle")
    with pytest.raises(ConfigurationError, match="initial_scalar_parameters"):
        build(kind, layers=[0, 1], scalar_mix={"initial_scalar_parameters": [1.0]})
    with pytest.raises(ConfigurationError, match="allowed keys"):
        build(kind, scalar_mix={"layer_norm": True})
    with pytest.raises(ConfigurationError, match="allowed keys"):
        build(kind, feature_cache={"dir": "/tmp"})


@pytest.mark.parametrize("kind", KINDS)
def test_scalar_mix_options_are_passed_on(kind, build, batch):
    tensors = batch(kind)
    embedder = build(
        kind,
        layers=[0, -1],
        scalar_mix={
            "do_layer_norm": True,
            "initial_scalar_parameters": [1.0, 2.0],
            "trainable": False,
        },
    ).eval()
    weights = {name.split("_scalar_mix.")[1]: p for name, p in embedder.scalar_mix_parameters()}
    assert {name: float(p) for name, p in weights.items()} == {
        "gamma": 1.0,
        "scalar_parameters.0": 1.0,
        "scalar_parameters.1": 2.0,
    }
    assert not any(p.requires_grad for p in weights.values())
    assert embedder(**tensors).shape[-1] == embedder.get_output_dim()


def test_feature_cache_key_changes_with_every_input_part():
    prefix = FeatureCache.key_prefix("fingerprint", "layers=[0, 1]")
    ids = torch.tensor([2, 7, 3]).numpy()
    key = FeatureCache.key(prefix, ids, None)
    assert key == FeatureCache.key(prefix, ids.copy(), None)
    assert key != FeatureCache.key(prefix, ids[:2], None)
    assert key != FeatureCache.key(prefix, ids, torch.tensor([0, 1, 1]).numpy())
    assert key != FeatureCache.key(FeatureCache.key_prefix("fingerprint", "layers=[1]"), ids, None)
    assert key != FeatureCache.key(FeatureCache.key_prefix("other", "layers=[0, 1]"), ids, None)
