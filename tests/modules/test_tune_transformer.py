"""`tune_transformer`: what it shares with AllenNLP's embedder, and what it adds."""

import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import PretrainedTransformerEmbedder

from allennlp_tune.modules.token_embedders import TuneTransformerEmbedder

LONG = ["the story is not fun and the film is very long and the actors were bad " * 2, "i hate it"]


def test_top_layer_and_layers_one_to_n_match_allennlp(bert_path, wordpiece_batch):
    tensors = wordpiece_batch()
    top = TuneTransformerEmbedder(bert_path, layers="top").eval()
    reference = PretrainedTransformerEmbedder(bert_path).eval()
    torch.testing.assert_close(top(**tensors), reference(**tensors))

    # AllenNLP's mix leaves out the embedding layer: layers 1..n reproduce it.
    num_layers = top.encoder.config.num_hidden_layers
    without_embeddings = TuneTransformerEmbedder(bert_path, layers=list(range(1, num_layers + 1)))
    mixed_reference = PretrainedTransformerEmbedder(bert_path, last_layer_only=False).eval()
    torch.testing.assert_close(without_embeddings.eval()(**tensors), mixed_reference(**tensors))


def test_layer_zero_is_the_embedding_output(bert_path, wordpiece_batch):
    tensors = wordpiece_batch()
    embedder = TuneTransformerEmbedder(bert_path, layers=[0]).eval()
    expected = embedder.encoder.embeddings(input_ids=tensors["token_ids"])
    torch.testing.assert_close(embedder(**tensors), expected)


@pytest.mark.parametrize("layers", ["top", "all"])
def test_long_inputs_are_folded_as_allennlp_does(bert_path, wordpiece_batch, layers, tmp_path):
    tensors = wordpiece_batch(LONG, max_length=8)
    assert "segment_concat_mask" in tensors
    assert tensors["token_ids"].size(1) > 8 and tensors["mask"].size(1) > 8
    num_wordpieces = tensors["mask"].size(1)

    folded = TuneTransformerEmbedder(bert_path, layers=layers, max_length=8).eval()
    output = folded(**tensors)
    assert output.shape == (2, num_wordpieces, 16)
    if layers == "top":
        reference = PretrainedTransformerEmbedder(bert_path, max_length=8).eval()
        torch.testing.assert_close(output, reference(**tensors))

    cached = TuneTransformerEmbedder(
        bert_path, layers=layers, max_length=8, feature_cache={"directory": str(tmp_path)}
    ).eval()
    mask = tensors["mask"].unsqueeze(-1).expand_as(output)
    for _ in range(2):
        torch.testing.assert_close(cached(**tensors)[mask], output[mask], atol=1e-2, rtol=1e-2)
    assert cached.feature_cache.hits == 2


def test_folding_length_is_part_of_the_cache_key(bert_path, wordpiece_batch, tmp_path):
    cache = {"directory": str(tmp_path)}
    texts = ["the story is not fun and the film is very long", "i hate it"]
    folded = TuneTransformerEmbedder(bert_path, max_length=8, feature_cache=cache)
    folded(**wordpiece_batch(texts, max_length=8))
    assert folded.feature_cache.writes == 2
    unfolded = TuneTransformerEmbedder(bert_path, feature_cache=cache)
    unfolded(**wordpiece_batch(texts))
    assert unfolded.feature_cache.hits == 0


def test_type_ids_are_used_and_keyed(bert_path, wordpiece_batch, tmp_path):
    tensors = wordpiece_batch()
    with_types = dict(tensors, type_ids=(tensors["mask"].cumsum(-1) > 3).long() * tensors["mask"])
    embedder = TuneTransformerEmbedder(bert_path, feature_cache={"directory": str(tmp_path)})
    plain = embedder.eval()(**tensors)
    typed = embedder(**with_types)
    assert embedder.feature_cache.hits == 0
    assert not torch.allclose(plain, typed)
    fresh = TuneTransformerEmbedder(bert_path).eval()(**with_types)
    keep = tensors["mask"].unsqueeze(-1).expand_as(fresh)
    torch.testing.assert_close(typed[keep], fresh[keep], atol=1e-2, rtol=1e-2)


def test_the_pooler_is_dropped_and_dropout_applies_to_the_output(bert_path, wordpiece_batch):
    embedder = TuneTransformerEmbedder(bert_path, dropout=0.5)
    assert embedder.encoder.pooler is None
    assert not any("pooler" in name for name, _ in embedder.named_parameters())
    tensors = wordpiece_batch()
    embedder.train()
    assert not torch.equal(embedder(**tensors), embedder(**tensors))  # output dropout only
    embedder.eval()
    assert torch.equal(embedder(**tensors), embedder(**tensors))


def test_archived_weights_invalidate_the_fingerprint(bert_path, wordpiece_batch, tmp_path):
    embedder = TuneTransformerEmbedder(bert_path, feature_cache={"directory": str(tmp_path)})
    embedder.eval()(**wordpiece_batch())
    fingerprint = embedder._fingerprint
    assert fingerprint is not None
    embedder.load_state_dict(embedder.state_dict())
    embedder(**wordpiece_batch())
    assert embedder._fingerprint == fingerprint  # recomputed: same weights, same fingerprint
    embedder.unfreeze(1)
    assert embedder._fingerprint is None


def test_inputs_longer_than_the_model_ask_for_max_length(bert_path, wordpiece_batch):
    too_long = wordpiece_batch(LONG)
    assert too_long["token_ids"].size(1) > 64  # the tiny model's max_position_embeddings
    with pytest.raises(ConfigurationError, match="Set max_length"):
        TuneTransformerEmbedder(bert_path)(**too_long)
    with pytest.raises(ConfigurationError, match="max_length is 100"):
        TuneTransformerEmbedder(bert_path, max_length=100)


def test_fine_tuning_folds_long_inputs_and_gets_gradients_through_every_segment(
    bert_path, wordpiece_batch
):
    tensors = wordpiece_batch(LONG, max_length=8)
    tuned = TuneTransformerEmbedder(bert_path, layers="top", max_length=8, mode="fine_tuning")
    reference = PretrainedTransformerEmbedder(bert_path, max_length=8)
    tuned.eval(), reference.eval()
    output = tuned(**tensors)
    torch.testing.assert_close(output, reference(**tensors))
    # The last wordpieces sit in a later segment: their loss still reaches the encoder. (A
    # random projection: the plain sum of a LayerNorm output has no gradient.)
    torch.manual_seed(0)
    (output[:, -3:] * torch.randn_like(output[:, -3:])).sum().backward()
    embeddings = tuned.transformer_model.embeddings.word_embeddings.weight
    assert embeddings.grad is not None and embeddings.grad.abs().sum() > 0


def test_building_the_encoder_leaves_the_global_rng_as_it_was(bert_path):
    """
    Whether AllenNLP's model cache holds the encoder or not, building the embedder draws nothing
    from the global RNG, so the head built after it starts from weights that depend on the seed
    only (transformers 4.20 draws while loading, and a second run in one process used to get
    another head).
    """
    from allennlp.common import cached_transformers

    draws = []
    for cached in (False, True):
        if not cached:
            cached_transformers._model_cache.clear()
        torch.manual_seed(3)
        TuneTransformerEmbedder(bert_path, reinit_modules=1)
        draws.append(torch.rand(4))
    torch.manual_seed(3)
    assert torch.equal(draws[0], torch.rand(4)) and torch.equal(draws[1], draws[0])
