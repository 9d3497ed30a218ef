"""`bi_attention_pair` and `max_pooling`: no parameters, masking, hand-computed values."""

import numpy
import pytest
import torch
from allennlp.common import Params
from allennlp.modules import Seq2VecEncoder

from allennlp_tune.modules.pair_encoders import BiAttentionPair, PairEncoder
from allennlp_tune.modules.seq2vec_encoders import MaxPoolingEncoder


def lengths_to_mask(lengths, length):
    return torch.arange(length).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)


def reference_pooling(a: numpy.ndarray, b: numpy.ndarray) -> numpy.ndarray:
    """The paper's pooling for one unpadded pair, written out in numpy."""
    e = a @ b.T
    a_tilde = (numpy.exp(e) / numpy.exp(e).sum(1, keepdims=True)) @ b
    b_tilde = (numpy.exp(e.T) / numpy.exp(e.T).sum(1, keepdims=True)) @ a
    m_a = numpy.concatenate([a, a_tilde, a - a_tilde, a * a_tilde], axis=1)
    m_b = numpy.concatenate([b, b_tilde, b - b_tilde, b * b_tilde], axis=1)
    return numpy.concatenate([m_a.mean(0), m_a.max(0), m_b.mean(0), m_b.max(0)])


def test_bi_attention_pair_has_no_parameters_and_is_the_default_pair_encoder():
    module = PairEncoder.from_params(Params({"input_dim": 3}))
    assert isinstance(module, BiAttentionPair)
    assert list(module.parameters()) == []
    assert module.get_output_dim() == 16 * 3
    assert BiAttentionPair(3, bi_attention=False).get_output_dim() == 4 * 3


def test_bi_attention_pair_matches_the_hand_computation():
    torch.manual_seed(0)
    a, b = torch.randn(1, 3, 2), torch.randn(1, 4, 2)
    pooled = BiAttentionPair(2)(a, torch.ones(1, 3).bool(), b, torch.ones(1, 4).bool())
    expected = reference_pooling(a[0].double().numpy(), b[0].double().numpy())
    numpy.testing.assert_allclose(pooled[0].numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bi_attention", [True, False])
def test_padding_gets_no_attention_and_does_not_change_the_pooled_result(bi_attention):
    torch.manual_seed(1)
    dim = 4
    a_lengths, b_lengths = [5, 2, 3], [3, 4, 1]
    a_mask, b_mask = lengths_to_mask(a_lengths, 5), lengths_to_mask(b_lengths, 4)
    a, b = torch.randn(3, 5, dim), torch.randn(3, 4, dim)
    module = BiAttentionPair(dim, bi_attention=bi_attention)
    pooled = module(a, a_mask, b, b_mask)

    # Whatever an encoder leaves at padding positions (huge values, inf, nan) changes nothing.
    garbage_a, garbage_b = a.clone(), b.clone()
    garbage_a[~a_mask] = 1e6
    garbage_b[~b_mask] = float("nan")
    garbage_b[2, 3] = float("inf")
    torch.testing.assert_close(module(garbage_a, a_mask, garbage_b, b_mask), pooled)

    # Padding positions receive exactly zero attention.
    _, _, a_to_b, b_to_a = module.attend(garbage_a, a_mask, garbage_b, b_mask)
    assert torch.all(a_to_b.masked_select(~b_mask.unsqueeze(1).expand_as(a_to_b)) == 0)
    assert torch.all(b_to_a.masked_select(~a_mask.unsqueeze(1).expand_as(b_to_a)) == 0)
    real = a_mask.unsqueeze(2) & b_mask.unsqueeze(1)
    torch.testing.assert_close((a_to_b * real).sum(-1)[a_mask], torch.ones(int(a_mask.sum())))

    # And each pair pooled alone, without any padding, gives the same vector.
    for i in range(3):
        alone = module(
            a[i : i + 1, : a_lengths[i]],
            torch.ones(1, a_lengths[i]).bool(),
            b[i : i + 1, : b_lengths[i]],
            torch.ones(1, b_lengths[i]).bool(),
        )
        torch.testing.assert_close(alone[0], pooled[i])
        if bi_attention:
            expected = reference_pooling(
                a[i, : a_lengths[i]].double().numpy(), b[i, : b_lengths[i]].double().numpy()
            )
            numpy.testing.assert_allclose(pooled[i].numpy(), expected, rtol=1e-4, atol=1e-5)


def test_bi_attention_survives_large_negative_similarities():
    # All similarities of a query near -1000: a softmax that multiplies by the mask instead of
    # filling it would underflow and give no attention at all.
    a = torch.tensor([[[-40.0, 0.0]]])
    b = torch.tensor([[[25.0, 0.0], [26.0, 0.0], [0.0, 0.0]]])
    b_mask = torch.tensor([[True, True, False]])
    _, _, a_to_b, _ = BiAttentionPair(2).attend(a, torch.ones(1, 1).bool(), b, b_mask)
    assert a_to_b.sum().item() == pytest.approx(1.0)
    assert a_to_b[0, 0, 0] > 0.99


def test_max_pooling_is_masked():
    encoder = Seq2VecEncoder.from_params(Params({"type": "max_pooling", "embedding_dim": 2}))
    assert isinstance(encoder, MaxPoolingEncoder) and list(encoder.parameters()) == []
    tokens = torch.tensor(
        [[[1.0, -5.0], [3.0, -2.0], [100.0, 100.0]], [[-1.0, -1.0], [9.0, 9.0], [9.0, 9.0]]]
    )
    mask = torch.tensor([[True, True, False], [False, False, False]])
    pooled = encoder(tokens, mask)
    # Padding never wins the max; an empty sequence gives zeros.
    torch.testing.assert_close(pooled, torch.tensor([[3.0, -2.0], [0.0, 0.0]]))
    torch.testing.assert_close(encoder(tokens), torch.tensor([[100.0, 100.0], [9.0, 9.0]]))
