"""
The feature cache under a tuned block (`prefix_cache`): a `fine_tuning` embedder with
`tuned_groups: "top:K"` and a `feature_cache` computes its frozen layers once per sequence. On
every fixture family that has a layer list: the same output and the same gradients as the
embedder without a cache (up to float16's rounding of the block's input), the frozen layers not
run again once cached, the key following the frozen weights only, and the refusals.
"""

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import TokenEmbedder

from tests.modules.test_encoder_families import runnable
from tests.modules.test_peft_modes import FAMILIES, masked_loss

# ALBERT's layers share weights: no frozen layer lies apart from a top block.
CACHED_FAMILIES = [runnable(family) for family in FAMILIES if family != "albert"]


@pytest.fixture
def build():
    def make(kind: str, **config) -> TokenEmbedder:
        return TokenEmbedder.from_params(Params({"type": kind, "dropout": 0.0, **config}))

    return make


def layer_list(embedder):
    return embedder.transformer_model.get_submodule(embedder._layer_list_path)


def count_calls(module: torch.nn.Module):
    calls = []
    handle = module.register_forward_hook(lambda *_: calls.append(1))
    return calls, handle


def pair(build, family_path, tmp_path, groups="top:1"):
    options = dict(model_name=family_path, mode="fine_tuning", tuned_groups=groups, layers="top")
    plain = build("tune_transformer", **options)
    cached = build("tune_transformer", feature_cache={"directory": str(tmp_path)}, **options)
    cached.load_state_dict(plain.state_dict())
    return plain, cached


@pytest.mark.parametrize("family", CACHED_FAMILIES)
def test_a_cached_prefix_gives_the_uncached_output_and_gradients(
    family, models_dir, wordpiece_batch, build, tmp_path
):
    path = str(models_dir / family)
    tensors = wordpiece_batch(model=path)
    mask = tensors["mask"]
    plain, cached = pair(build, path, tmp_path)
    assert cached._cached_block_start() == len(cached.layer_groups()) - 1
    plain.train()
    cached.train()
    lowest_frozen = layer_list(cached)[0]
    calls, handle = count_calls(lowest_frozen)
    outputs = []
    # In training mode: the tuned layers' dropout draws the same numbers in both embedders (the
    # frozen layers are in eval mode and draw none).
    for _ in range(2):  # the first call fills the cache, the second reads it
        torch.manual_seed(0)
        outputs.append(cached(**tensors))
    handle.remove()
    assert len(calls) == 1, "the frozen layers ran again on cached rows"
    torch.manual_seed(0)
    expected = plain(**tensors)
    valid = mask.unsqueeze(-1).expand_as(expected)
    scale = float(expected[valid].abs().max())
    for output in outputs:
        assert output.shape == expected.shape
        assert torch.allclose(output[valid], expected[valid], atol=2e-3 * scale, rtol=0)
    assert not torch.equal(outputs[0][valid], torch.zeros_like(outputs[0][valid]))

    masked_loss(outputs[1], mask).backward()
    masked_loss(expected, mask).backward()
    plain_grads = dict(plain.named_parameters())
    compared = 0
    for name, parameter in cached.named_parameters():
        other = plain_grads[name].grad
        if parameter.grad is None:
            assert other is None or not other.abs().any(), name
            continue
        compared += 1
        tolerance = 2e-2 * float(other.abs().max()) + 1e-8
        assert torch.allclose(parameter.grad, other, atol=tolerance), name
    top_groups = {id(p) for _, p in cached.layer_groups()[-1][1]}
    graded = {id(p) for _, p in cached.named_parameters() if p.grad is not None}
    assert compared > 0 and graded <= top_groups | {
        id(p) for n, p in cached.named_parameters() if "transformer_model" not in n
    }


def test_the_key_follows_the_frozen_weights_only(models_dir, wordpiece_batch, build, tmp_path):
    path = str(models_dir / "bert-cased")
    tensors = wordpiece_batch(model=path)
    _, cached = pair(build, path, tmp_path)
    cached.train()
    cached(**tensors)
    files = sorted(tmp_path.rglob("*.f16"))
    assert len(files) == len(tensors["mask"])
    calls, handle = count_calls(layer_list(cached)[0])
    with torch.no_grad():  # a step on the tuned block: the cached rows still serve
        for _, parameter in cached.layer_groups()[-1][1]:
            parameter.add_(0.1)
    cached(**tensors)
    assert calls == [] and sorted(tmp_path.rglob("*.f16")) == files
    # Other frozen weights (an archive loaded, say) are other features: new entries.
    state = cached.state_dict()
    name = next(name for name in state if "layer.0." in name and name.endswith("weight"))
    state[name] = state[name] + 0.1
    cached.load_state_dict(state)
    cached(**tensors)
    assert calls == [1] and len(list(tmp_path.rglob("*.f16"))) == 2 * len(files)


def test_a_block_that_reaches_the_bottom_does_not_use_the_cache(
    models_dir, wordpiece_batch, build, tmp_path
):
    path = str(models_dir / "bert-cased")
    for groups in ("bottom:2", "top:4", "1-2"):  # top:4 of 4 layers trains layer_0
        _, cached = pair(build, path, tmp_path, groups=groups)
        assert cached._cached_block_start() is None
        cached(**wordpiece_batch(model=path))
    assert list(tmp_path.rglob("*.f16")) == []
    # ALBERT's layers are one group of shared weights: a top block is the whole stack.
    _, albert = pair(build, str(models_dir / "albert"), tmp_path)
    assert albert._cached_block_start() is None
    # Full fine-tuning with a cache is refused as before: the whole encoder trains.
    with pytest.raises(ConfigurationError, match="feature_cache.*feature_extraction"):
        pair(build, path, tmp_path, groups="all")


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(layers="all"), 'only layers: "top" is served'),
        (dict(max_length=8), "folds long inputs"),
        (dict(mode="bitfit"), "biases train"),
    ],
)
def test_what_the_cache_cannot_serve_is_refused(options, message, models_dir, build, tmp_path):
    family = options.pop("model", "bert-cased")
    config = {"mode": "fine_tuning", "tuned_groups": "top:1", "layers": "top", **options}
    with pytest.raises(ConfigurationError, match=f"feature_cache.*{message}"):
        build(
            "tune_transformer",
            model_name=str(models_dir / family),
            feature_cache={"directory": str(tmp_path)},
            **config,
        )
