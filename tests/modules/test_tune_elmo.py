"""`tune_elmo`: AllenNLP's biLM with all three layers exposed, and no state across batches."""

import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.elmo import Elmo

from allennlp_tune.modules.token_embedders import TuneElmoEmbedder


def test_all_layers_with_default_mix_match_allennlp_elmo(elmo_files, elmo_batch):
    tensors = elmo_batch()
    embedder = TuneElmoEmbedder(**elmo_files, dropout=0.0).eval()
    reference = Elmo(elmo_files["options_file"], elmo_files["weight_file"], 1, dropout=0.0).eval()
    expected = reference(tensors["elmo_tokens"])["elmo_representations"][0]
    torch.testing.assert_close(embedder(**tensors), expected)
    assert embedder.get_output_dim() == 16


def test_each_layer_can_be_selected(elmo_files, elmo_batch):
    tensors = elmo_batch()
    outputs = [TuneElmoEmbedder(**elmo_files, layers=[i], dropout=0.0).eval() for i in range(3)]
    outputs = [embedder(**tensors) for embedder in outputs]
    assert not torch.allclose(outputs[0], outputs[1])
    assert not torch.allclose(outputs[1], outputs[2])
    top = TuneElmoEmbedder(**elmo_files, layers="top", dropout=0.0).eval()
    torch.testing.assert_close(top(**tensors), outputs[2])


def test_states_are_reset_for_every_batch_by_default(elmo_files, elmo_batch):
    tensors = elmo_batch()
    embedder = TuneElmoEmbedder(**elmo_files, dropout=0.0).eval()
    first = embedder(**tensors)
    embedder(**elmo_batch(["something else entirely first"]))
    assert torch.equal(embedder(**tensors), first)

    # AllenNLP's behaviour, on request: the second pass starts from the first one's states.
    stateful = TuneElmoEmbedder(**elmo_files, dropout=0.0, stateful=True).eval()
    torch.testing.assert_close(stateful(**tensors), first)
    assert not torch.allclose(stateful(**tensors), first)


def test_stateful_cannot_be_cached(elmo_files):
    with pytest.raises(ConfigurationError, match="stateful"):
        TuneElmoEmbedder(**elmo_files, stateful=True, feature_cache={})
