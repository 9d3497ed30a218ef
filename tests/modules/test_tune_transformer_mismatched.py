"""`tune_transformer_mismatched`: word-level pooling over the wordpiece-level mix."""

import pytest
import torch
from allennlp.common.checks import ConfigurationError

from allennlp_tune.modules.token_embedders import (
    TuneTransformerEmbedder,
    TuneTransformerMismatchedEmbedder,
)


@pytest.mark.parametrize("pooling", ["first", "mean", "max"])
def test_pooling_over_each_words_wordpieces(bert_path, word_batch, pooling):
    tensors = word_batch(["the actors were boring", "unfunny storytelling"])
    embedder = TuneTransformerMismatchedEmbedder(bert_path, pooling=pooling).eval()
    words = embedder(**tensors)
    wordpieces = TuneTransformerEmbedder(bert_path).eval()(
        tensors["token_ids"], tensors["wordpiece_mask"]
    )
    for row in range(2):
        for word, (start, end) in enumerate(tensors["offsets"][row].tolist()):
            if not tensors["mask"][row, word]:
                continue
            pieces = wordpieces[row, start : end + 1]
            expected = {"first": pieces[0], "mean": pieces.mean(0), "max": pieces.max(0).values}
            torch.testing.assert_close(words[row, word], expected[pooling])
    # Some word is split into several wordpieces, so the poolings differ.
    assert (tensors["offsets"][..., 1] > tensors["offsets"][..., 0]).any()


def test_first_is_the_default_and_unknown_pooling_is_rejected(bert_path):
    assert TuneTransformerMismatchedEmbedder(bert_path)._pooling == "first"
    with pytest.raises(ConfigurationError, match="pooling is 'avg'"):
        TuneTransformerMismatchedEmbedder(bert_path, pooling="avg")


def test_folding_works_at_the_word_level(bert_path, word_batch):
    text = "the story is not fun and the film is very long and the actors were bad"
    tensors = word_batch([text, "bad"], max_length=8)
    assert tensors["token_ids"].size(1) > 8
    output = TuneTransformerMismatchedEmbedder(bert_path, max_length=8).eval()(**tensors)
    assert output.shape == (2, len(text.split()), 16)
    assert torch.isfinite(output).all()


def test_the_freezing_api_is_delegated_with_names_as_in_named_parameters(bert_path):
    embedder = TuneTransformerMismatchedEmbedder(bert_path, mode="fine_tuning")
    named = dict(embedder.named_parameters())
    assert all(named[name] is p for _, group in embedder.layer_groups() for name, p in group)
    assert all(named[name] is p for name, p in embedder.scalar_mix_parameters())
    embedder.freeze()
    assert embedder.is_frozen and embedder.wordpiece_embedder.is_frozen
    embedder.unfreeze(1)
    assert embedder.trainable_groups() == [len(embedder.layer_group_names()) - 1]
