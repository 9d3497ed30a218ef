"""
ModernBERT (transformers >= 4.48) in the `tune_transformer` embedders, beyond the checks every
family gets in `test_encoder_families.py`: its layout (a layer list `layers` with a `final_norm`
above it, global and local attention layers), its lack of token type ids, its lack of biases
(so no BitFit), LoRA on its fused query/key/value projection, and word-level use. The fixture
is built by `scripts/fixture_models.py` from a config; on an older transformers every test here
skips with the version it needs.
"""

from pathlib import Path

import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Instance, Token, Vocabulary
from allennlp.data.fields import TextField
from allennlp.data.token_indexers import (
    PretrainedTransformerIndexer,
    PretrainedTransformerMismatchedIndexer,
)
from allennlp.data.tokenizers import PretrainedTransformerTokenizer
from transformers import AutoModel, AutoTokenizer

import allennlp_tune  # noqa: F401  (registers the components)
from allennlp_tune.modules.token_embedders import (
    TuneTransformerEmbedder,
    TuneTransformerMismatchedEmbedder,
)
from allennlp_tune.modules.token_embedders.wordpieces import Wordpieces

from .conftest import _generated_versioned_families, fixture_script

UNAVAILABLE = fixture_script().family_unavailable("modernbert")
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=str(UNAVAILABLE))

PAIR = ("A man is playing a guitar", "The dog is eating the bread")


@pytest.fixture(scope="module")
def modernbert(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = _generated_versioned_families(tmp_path_factory.mktemp("versioned"))
    return str(out / "modernbert")


def _pair_tensors(path: str):
    tokenizer = PretrainedTransformerTokenizer(path, add_special_tokens=False)
    tokens = tokenizer.add_special_tokens(*(tokenizer.tokenize(text) for text in PAIR))
    field = TextField(tokens, {"t": PretrainedTransformerIndexer(path)})
    batch = Batch([Instance({"text": field})])
    batch.index_instances(Vocabulary())
    return tokens, batch.as_tensor_dict()["text"]["t"]


def _is_global(layer: torch.nn.Module) -> bool:
    kind = getattr(layer, "attention_type", None)  # transformers 5
    if kind is not None:
        return kind == "full_attention"
    return tuple(layer.attn.local_attention) == (-1, -1)  # transformers 4.48-4.57


def test_the_fixture_has_modernberts_layout(modernbert):
    model = AutoModel.from_pretrained(modernbert)
    config = model.config
    assert type(model).__name__ == "ModernBertModel"
    assert config.num_hidden_layers == 3 and len(model.layers) == 3
    # One global attention layer, then local ones with a window smaller than a sentence.
    assert [_is_global(layer) for layer in model.layers] == [True, False, False]
    assert config.local_attention == 8
    assert not hasattr(config, "type_vocab_size")
    assert not [name for name, _ in model.named_parameters() if name.endswith("bias")]
    tokenizer = AutoTokenizer.from_pretrained(modernbert)
    encoded = tokenizer(*PAIR)
    assert "token_type_ids" not in encoded
    pieces = tokenizer.convert_ids_to_tokens(encoded["input_ids"])
    assert pieces[0] == "[CLS]" and pieces.count("[SEP]") == 2 and pieces[-1] == "[SEP]"
    assert tokenizer.unk_token_id not in encoded["input_ids"]


def test_the_pair_layout_is_berts_and_no_token_type_ids_reach_the_model(modernbert):
    tokens, tensors = _pair_tensors(modernbert)
    assert tokens[0].text == "[CLS]" and [t.text for t in tokens].count("[SEP]") == 2
    # AllenNLP's indexer gives the second segment type id 1, as for BERT ...
    assert int(tensors["type_ids"].max()) == 1
    embedder = TuneTransformerEmbedder(modernbert).eval()
    model = embedder.transformer_model
    forward = model.forward
    seen = []

    def recording(*args, **kwargs):
        seen.append(sorted(kwargs))
        return forward(*args, **kwargs)

    model.forward = recording
    with torch.no_grad():
        output = embedder(**tensors)
    # ... but ModernBERT has no token type embeddings: its forward never gets token_type_ids
    # (transformers 5 would accept and ignore them silently).
    assert seen and all("token_type_ids" not in names for names in seen), seen
    assert output.shape == (1, tensors["token_ids"].size(1), 16)


def test_the_mix_covers_the_embeddings_every_layer_and_the_normed_output(modernbert):
    tokens, tensors = _pair_tensors(modernbert)
    embedder = TuneTransformerEmbedder(modernbert).eval()
    assert len(embedder.scalar_mix_parameters()) == 3 + 1 + 1  # weights + gamma
    groups = dict(embedder.layer_groups())
    assert list(groups) == ["embeddings", "layer_0", "layer_1", "layer_2"]
    assert "transformer_model.final_norm.weight" in [name for name, _ in groups["layer_2"]]
    assert all(name.startswith("transformer_model.embeddings.") for name, _ in groups["embeddings"])

    model = AutoModel.from_pretrained(modernbert).eval()
    ids, mask = tensors["token_ids"], tensors["mask"]
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask.long(), output_hidden_states=True)
        layers = embedder._layer_outputs(Wordpieces(ids, mask))
    assert layers.shape == (4, 1, ids.size(1), 16)
    # 0: the embedding output; 3: the model's output, after final_norm, on every version
    # (transformers 4.48-4.57 return the state before final_norm as hidden_states[-1]).
    torch.testing.assert_close(layers[0], expected.hidden_states[0])
    torch.testing.assert_close(layers[1], expected.hidden_states[1])
    torch.testing.assert_close(layers[3], expected.last_hidden_state)


def test_fine_tuning_reaches_final_norm(modernbert):
    _, tensors = _pair_tensors(modernbert)
    embedder = TuneTransformerEmbedder(modernbert, mode="fine_tuning", layers="top")
    embedder(**tensors).sum().backward()
    missing = [
        name
        for name, parameter in embedder.transformer_model.named_parameters()
        if parameter.grad is None or not parameter.grad.abs().sum() > 0
    ]
    assert missing == []


def test_bitfit_is_a_configuration_error_for_an_encoder_without_biases(modernbert):
    with pytest.raises(ConfigurationError, match="no bias for bitfit"):
        TuneTransformerEmbedder(modernbert, mode="bitfit")


def test_lora_adapts_the_fused_attention_projection_by_default(modernbert):
    pytest.importorskip("peft")
    _, tensors = _pair_tensors(modernbert)
    reference = TuneTransformerEmbedder(modernbert, layers="top").eval()
    embedder = TuneTransformerEmbedder(modernbert, mode="lora", layers="top").eval()
    lora = [name for name, _ in embedder.mode_parameters()]
    assert lora and all(".attn.Wqkv.lora_" in name for name in lora), lora
    groups = dict(embedder.layer_groups())
    for index in range(3):
        names = [name for name, _ in groups[f"layer_{index}"]]
        assert any(f"layers.{index}.attn.Wqkv.lora_A" in name for name in names)
    with torch.no_grad():  # lora_B starts at zero: the pretrained encoder's output
        torch.testing.assert_close(embedder(**tensors), reference(**tensors))


def test_word_level_embedding(modernbert):
    words = "Peter Blackburn , a man , is playing a guitar .".split()
    indexer = PretrainedTransformerMismatchedIndexer(modernbert)
    batch = Batch([Instance({"tokens": TextField([Token(w) for w in words], {"t": indexer})})])
    batch.index_instances(Vocabulary())
    tensors = batch.as_tensor_dict()["tokens"]["t"]
    embedder = TuneTransformerMismatchedEmbedder(modernbert).eval()
    with torch.no_grad():
        output = embedder(**tensors)
    assert output.shape == (1, len(words), 16) and torch.isfinite(output).all()


def test_the_fixture_is_deterministic(modernbert, tmp_path: Path):
    again = _generated_versioned_families(tmp_path) / "modernbert"
    first = Path(modernbert)
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in again.iterdir())
    for name in names:
        assert (first / name).read_bytes() == (again / name).read_bytes(), name
