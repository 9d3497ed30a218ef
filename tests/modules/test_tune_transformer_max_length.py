"""`max_length` must be set on both the indexer and the embedder, with one value: clear errors."""

import pytest
import torch
from allennlp.common.checks import ConfigurationError

from allennlp_tune.modules.token_embedders import (
    TuneTransformerEmbedder,
    TuneTransformerMismatchedEmbedder,
)

LONG = ["the story is not fun and the film is very long and the actors were bad " * 2, "i hate it"]


@pytest.mark.parametrize("texts", [None, LONG], ids=["short", "long"])
def test_max_length_on_the_embedder_only_asks_for_it_on_the_indexer(
    bert_path, wordpiece_batch, texts
):
    tensors = wordpiece_batch(texts)
    assert "segment_concat_mask" not in tensors
    embedder = TuneTransformerEmbedder(bert_path, max_length=8)
    with pytest.raises(ConfigurationError) as error:
        embedder(**tensors)
    message = str(error.value)
    assert "tune_transformer.max_length is 8, but the pretrained_transformer indexer" in message
    assert "Set max_length: 8 on the indexer too" in message


def test_max_length_on_the_embedder_only_with_the_feature_cache(
    bert_path, wordpiece_batch, tmp_path
):
    embedder = TuneTransformerEmbedder(
        bert_path, max_length=8, feature_cache={"directory": str(tmp_path)}
    )
    with pytest.raises(ConfigurationError, match="Set max_length: 8 on the indexer too"):
        embedder(**wordpiece_batch(LONG))


def test_max_length_on_the_indexer_only_asks_for_it_on_the_embedder(bert_path, wordpiece_batch):
    with pytest.raises(ConfigurationError, match="but tune_transformer has none"):
        TuneTransformerEmbedder(bert_path)(**wordpiece_batch(LONG, max_length=8))


def test_different_max_lengths_are_an_error(bert_path, wordpiece_batch):
    tensors = wordpiece_batch(LONG, max_length=8)
    with pytest.raises(ConfigurationError, match="split the input with another max_length"):
        TuneTransformerEmbedder(bert_path, max_length=12)(**tensors)
    # The same value on both folds (a batch with a short row and a long one).
    output = TuneTransformerEmbedder(bert_path, max_length=8).eval()(**tensors)
    assert output.shape == (2, tensors["mask"].size(1), 16)


def test_mismatched_embedder_names_its_indexer(bert_path, word_batch):
    embedder = TuneTransformerMismatchedEmbedder(bert_path, max_length=8)
    with pytest.raises(ConfigurationError) as error:
        embedder(**word_batch(LONG))
    message = str(error.value)
    assert "tune_transformer_mismatched.max_length is 8" in message
    assert "pretrained_transformer_mismatched indexer has no max_length" in message
    with pytest.raises(ConfigurationError, match="but tune_transformer_mismatched has none"):
        TuneTransformerMismatchedEmbedder(bert_path)(**word_batch(LONG, max_length=8))
    words = word_batch(LONG, max_length=8)
    output = TuneTransformerMismatchedEmbedder(bert_path, max_length=8).eval()(**words)
    assert output.shape == (2, words["mask"].size(1), 16)
    assert torch.isfinite(output).all()
