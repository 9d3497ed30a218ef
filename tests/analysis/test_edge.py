"""
EDGE on synthetic data whose mutual information is known in closed form (bits).

Tolerances (N = 4000, default median ensemble unless stated): deterministic labels within
0.05 bits (binary, 1 bit) and 0.1 bits (4 classes, 2 bits) below the label entropy, the known
noise rate within 0.04 bits, independent labels in [0, 0.03] bits, in 1 and 384 dimensions.
The median is conservative by construction (buckets straddling a label boundary mix labels), so
the deterministic checks are one-sided plus a small allowance above.
"""

import math

import numpy as np
import pytest

from allennlp_tune.analysis.edge import (
    discretise_scores,
    edge_mutual_information,
    optimal_ensemble_weights,
)

N = 4000


def binary_entropy(p: float) -> float:
    return -(p * math.log2(p) + (1 - p) * math.log2(1 - p))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def test_label_a_deterministic_function_of_a_gaussian_gives_the_label_entropy(rng):
    x = rng.standard_normal((N, 1))
    binary = (x[:, 0] > 0).astype(int)  # H = 1 bit
    quartile = np.digitize(x[:, 0], [-0.6745, 0.0, 0.6745])  # H = 2 bits
    assert 1.0 - 0.05 <= edge_mutual_information(x, binary) <= 1.0 + 0.01
    assert 2.0 - 0.10 <= edge_mutual_information(x, quartile) <= 2.0 + 0.01


def test_labels_with_a_known_noise_rate(rng):
    # y = [x > 0] flipped with probability p: I(X; Y) = 1 - H_b(p).
    x = rng.standard_normal((N, 1))
    for noise in (0.1, 0.25):
        flipped = rng.random(N) < noise
        labels = np.where(flipped, x[:, 0] <= 0, x[:, 0] > 0).astype(int)
        expected = 1.0 - binary_entropy(noise)
        assert edge_mutual_information(x, labels) == pytest.approx(expected, abs=0.04)


@pytest.mark.parametrize("dim", [1, 384])
def test_independent_labels_give_about_zero(rng, dim):
    x = rng.standard_normal((N, dim)).astype(np.float32)
    labels = rng.integers(0, 3, N)
    assert 0.0 <= edge_mutual_information(x, labels) <= 0.03


def test_high_dimensional_clusters_are_detected_and_the_control_is_not(rng):
    # Two classes separated along one random direction of a 384-d Gaussian: the projections
    # must see the dependence, while shuffled labels stay near 0.
    direction = rng.standard_normal(384)
    direction /= np.linalg.norm(direction)
    labels = rng.integers(0, 2, N)
    x = rng.standard_normal((N, 384)) + np.outer(2 * labels - 1, direction) * 100.0
    assert edge_mutual_information(x, labels) > 0.6
    assert edge_mutual_information(x, rng.permutation(labels)) < 0.03


def test_weighted_ensemble_removes_the_resolution_bias(rng):
    # In 2-D the median loses about 0.2 bits to buckets straddling the boundary x0 = 0.
    x = rng.standard_normal((N, 2))
    labels = (x[:, 0] > 0).astype(int)
    median = edge_mutual_information(x, labels)
    weighted = edge_mutual_information(x, labels, ensemble="weighted", resolution_range=4.0)
    assert median < 0.85
    assert weighted == pytest.approx(1.0, abs=0.12)
    control = rng.integers(0, 2, N)
    assert edge_mutual_information(x, control, ensemble="weighted", resolution_range=4.0) < 0.03


def test_ensemble_weights_sum_to_one_and_cancel_both_bias_terms():
    scales = 4.0 ** np.linspace(-0.5, 0.5, 10)
    weights = optimal_ensemble_weights(scales, hashed_dim=3)
    assert weights.sum() == pytest.approx(1.0)
    assert weights @ scales == pytest.approx(0.0, abs=1e-9)
    assert weights @ scales**-3.0 == pytest.approx(0.0, abs=1e-9)
    # Base estimates that follow the bias model exactly are debiased exactly.
    base = 0.7 + 0.3 * scales + 0.05 / scales**3
    assert weights @ base == pytest.approx(0.7)
    assert np.allclose(optimal_ensemble_weights(scales[:2], 3), [0.5, 0.5])


def test_labels_of_any_type_give_the_same_estimate_and_seeds_are_reproducible(rng):
    x = rng.standard_normal((500, 8))
    labels = (x[:, 0] + 0.5 * rng.standard_normal(500) > 0).astype(int)
    as_ints = edge_mutual_information(x, labels)
    assert edge_mutual_information(x, np.array(["neg", "pos"])[labels]) == as_ints
    assert edge_mutual_information(x, labels, seed=0) == edge_mutual_information(x, labels)
    nats = edge_mutual_information(x, labels, log_base=math.e)
    assert nats == pytest.approx(as_ints * math.log(2))


def test_degenerate_inputs(rng):
    x = rng.standard_normal((50, 4))
    assert edge_mutual_information(x, np.zeros(50, dtype=int)) == 0.0
    # Constant features carry no information about anything.
    assert edge_mutual_information(np.ones((50, 4)), rng.integers(0, 2, 50)) == 0.0


def test_bad_inputs_are_reported(rng):
    x = rng.standard_normal((20, 3))
    with pytest.raises(ValueError, match="20 rows but labels have 19"):
        edge_mutual_information(x, np.zeros(19))
    with pytest.raises(ValueError, match="look continuous"):
        edge_mutual_information(x, rng.random(20))
    with pytest.raises(ValueError, match="ensemble"):
        edge_mutual_information(x, np.zeros(20), ensemble="best")
    x[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        edge_mutual_information(x, np.zeros(20))


def test_discretise_scores_makes_equal_frequency_bins():
    scores = np.linspace(0.0, 5.0, 100)
    bins = discretise_scores(scores, num_bins=5)
    assert np.bincount(bins).tolist() == [20, 20, 20, 20, 20]
    assert np.all(np.diff(bins) >= 0)  # monotone in the score
