"""
EDGE against mutual information known numerically, at the strength real encoders show.

Data: `x = m_y + noise` in d = 384 or 768 dimensions, with identity noise covariance; the label
moves the mean inside a k-dimensional subspace (a random orthonormal basis of the space), so the
other `d - k` dimensions carry nothing and the true `I(X; Y)` is the MI of the k-dimensional
mixture. For two classes it is a 1-D integral (the log-odds depends only on the coordinate
along `m_1 - m_0`), computed by quadrature; for more classes, Monte Carlo over the exact
posterior with 400,000 draws (standard error under 0.002 bits).

Tolerance: 0.05 bits or 25% of the truth, whichever is larger (issue 17), for truths between
0.1 and 0.6 bits at N >= 2,000. The estimator held to it is `allennlp mi`'s default,
`edge_projected_mutual_information`: EDGE on a cross-fitted discriminant projection, corrected
for the attenuation of the learnt direction. The uncorrected projection
(`correct_attenuation=False`, `mi --estimator edge_projected_uncorrected`) errs low at
N = 2,000 (its shortfall is checked here too), and the paper's plain EDGE misses the same
signals (it is kept for comparison with Figure 2 of Peters et al.).

Why the projection needs a correction: it is learnt from the other folds, and a direction
estimated from n examples in d dimensions keeps only `Delta^2 / (Delta^2 + 4 d / n)` of the
squared class separation `Delta^2` (the estimated mean difference carries noise of squared norm
`4 d / n`). Uncorrected, a 0.107-bit signal at d = 768 and N = 2,000 comes out at 0.04 bits, as
that share predicts. The correction measures the separation without that noise term and moves
the held-out class means apart until they show it (Spearman's correction for attenuation), when
a permutation test finds the labels clearly dependent.

The random-label controls are checked on Gaussian data and on heavy-tailed, strongly
anisotropic features like real sentence vectors, where the correction's first version (a
Gaussian null formula, with the separation measured in a label-dependent metric) put 0.10-0.14
bits into the control (0.12-0.65 on real MiniLM features); `debiased_separation` measures in a
label-free metric, debiases by the exact null expectation and gates by permutation.
"""

import math
from functools import partial

import numpy as np
import pytest

from allennlp_tune.analysis.edge import (
    debiased_separation,
    disattenuate,
    edge_mutual_information,
    edge_projected_mutual_information,
)

# `allennlp mi`'s default: the attenuation-corrected projection.
corrected_estimate = edge_projected_mutual_information
uncorrected_estimate = partial(edge_projected_mutual_information, correct_attenuation=False)

# numpy < 2 (the stock AllenNLP lane) has only trapz.
_trapezoid = getattr(np, "trapezoid", None) or np.trapz


def tolerance(truth: float) -> float:
    return max(0.05, 0.25 * truth)


def binary_mi(separation: float) -> float:
    """I(X; Y) in bits for equiprobable classes N(+-separation/2, I): a 1-D integral."""
    grid = np.linspace(-separation / 2 - 12, separation / 2 + 12, 200_001)
    density = (
        0.5
        * (
            np.exp(-0.5 * (grid - separation / 2) ** 2)
            + np.exp(-0.5 * (grid + separation / 2) ** 2)
        )
        / math.sqrt(2 * math.pi)
    )
    posterior = 1.0 / (1.0 + np.exp(-separation * grid))
    posterior = np.clip(posterior, 1e-300, 1 - 1e-16)
    conditional = -(posterior * np.log2(posterior) + (1 - posterior) * np.log2(1 - posterior))
    return 1.0 - float(_trapezoid(density * conditional, grid))


def mixture_mi(means: np.ndarray, draws: int = 400_000, seed: int = 0) -> float:
    """I(X; Y) in bits for equiprobable classes N(means[c], I_k): Monte Carlo, exact posterior."""
    rng = np.random.default_rng(seed)
    num_classes = means.shape[0]
    labels = rng.integers(0, num_classes, draws)
    points = means[labels] + rng.standard_normal((draws, means.shape[1]))
    logits = -0.5 * ((points[:, None, :] - means[None]) ** 2).sum(-1)
    logits -= logits.max(axis=1, keepdims=True)
    posterior = np.exp(logits)
    posterior /= posterior.sum(axis=1, keepdims=True)
    conditional = -(posterior * np.log2(np.clip(posterior, 1e-300, 1.0))).sum(axis=1).mean()
    return math.log2(num_classes) - float(conditional)


def sample(num_samples: int, dim: int, means: np.ndarray, seed: int):
    """`num_samples` points: the k-dimensional class means embedded in `dim` dimensions."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((dim, means.shape[1])))
    labels = rng.integers(0, means.shape[0], num_samples)
    x = rng.standard_normal((num_samples, dim)) + means[labels] @ basis.T
    return x.astype(np.float32), labels


def binary_means(separation: float, directions: int, seed: int = 0) -> np.ndarray:
    """Two means +-separation/2 apart along a unit vector spread over `directions` axes."""
    spread = np.random.default_rng(seed).uniform(0.5, 1.0, directions)
    spread /= np.linalg.norm(spread)
    return np.stack([-spread, spread]) * separation / 2


def test_the_truth_is_what_the_closed_forms_say():
    # Known limits: no separation, no information; quadrature and Monte Carlo agree.
    assert binary_mi(0.0) == pytest.approx(0.0, abs=1e-9)
    assert binary_mi(8.0) == pytest.approx(1.0, abs=0.01)
    two = np.array([[-0.6], [0.6]])
    assert mixture_mi(two) == pytest.approx(binary_mi(1.2), abs=0.004)


# (separation, directions k, dim, N): true MI 0.107, 0.286 and 0.549 bits.
BINARY_CASES = [
    (1.4, 2, 384, 2000),
    (2.2, 4, 384, 2000),
    (0.8, 3, 384, 2000),
    (0.8, 4, 768, 2000),
    (1.4, 2, 768, 2000),
    (2.2, 2, 768, 2000),
]


@pytest.mark.parametrize("separation, directions, dim, num_samples", BINARY_CASES)
def test_projected_edge_recovers_a_realistic_binary_signal(
    separation, directions, dim, num_samples
):
    truth = binary_mi(separation)
    assert 0.1 <= truth <= 0.6
    x, labels = sample(num_samples, dim, binary_means(separation, directions), seed=directions)
    estimate = corrected_estimate(x, labels)
    assert estimate == pytest.approx(truth, abs=tolerance(truth))
    control = np.random.default_rng(7).permutation(labels)
    assert corrected_estimate(x, control) <= 0.03


@pytest.mark.parametrize("separation, dim", [(0.8, 768), (0.8, 384)])
def test_the_correction_restores_what_the_learnt_direction_loses(separation, dim):
    num_samples = 2000
    truth = binary_mi(separation)
    fit_size = 0.9 * num_samples  # 10 folds: each projection is fit on 9 of them
    kept = separation**4 / (separation**2 + 4 * dim / fit_size)
    predicted = binary_mi(math.sqrt(kept))
    assert truth - predicted > tolerance(truth)  # what the learnt direction keeps is not enough
    x, labels = sample(num_samples, dim, binary_means(separation, 1), seed=5)
    uncorrected = uncorrected_estimate(x, labels)
    assert uncorrected == pytest.approx(predicted, abs=0.04)
    corrected = corrected_estimate(x, labels)
    assert corrected == pytest.approx(truth, abs=tolerance(truth))
    assert abs(corrected - truth) < 0.5 * abs(uncorrected - truth)


def test_the_stretch_reaches_the_target_separation_and_never_shrinks():
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 3, 3000)
    scores = rng.standard_normal((3000, 2)) + 0.3 * np.array([[0, 0], [1, 0], [0, 1]])[labels]
    scores = scores.astype(np.float32)

    def separation(values):
        means = np.stack([values[labels == c].mean(0) for c in range(3)])
        weights = np.bincount(labels) / labels.shape[0]
        centred = means - weights @ means
        residuals = values - means[labels]
        within = residuals.T @ residuals / (labels.shape[0] - 3)
        return np.trace(np.linalg.inv(within) @ (centred.T * weights) @ centred)

    shown = separation(scores)
    stretched = disattenuate(scores, labels, 4 * shown)
    assert separation(stretched) == pytest.approx(4 * shown, rel=1e-4)
    # Within-class deviations are kept: only the class means move.
    for c in range(3):
        deviations = stretched[labels == c] - stretched[labels == c].mean(0)
        expected = scores[labels == c] - scores[labels == c].mean(0)
        np.testing.assert_allclose(deviations, expected, atol=1e-4)
    for target in (0.5 * shown, 0.0, -1.0):
        assert disattenuate(scores, labels, target) is scores


@pytest.mark.parametrize("dim", [384, 768])
def test_projected_edge_recovers_a_four_class_signal_in_three_directions(dim):
    rng = np.random.default_rng(3)
    means = rng.standard_normal((4, 3))
    means -= means.mean(axis=0)
    means *= 1.0 / np.sqrt((means**2).sum(axis=1).mean())
    truth = mixture_mi(means)
    assert 0.1 <= truth <= 0.6
    x, labels = sample(2000, dim, means, seed=3)
    assert corrected_estimate(x, labels) == pytest.approx(truth, abs=tolerance(truth))
    control = np.random.default_rng(7).permutation(labels)
    # EDGE's own plug-in bias for 4 independent classes at N = 2,000 is about
    # 3 / (2 sqrt(N) ln 2) = 0.048 bits; the correction must add nothing to it.
    control_estimate = corrected_estimate(x, control)
    uncorrected = uncorrected_estimate(x, control)
    assert control_estimate == uncorrected <= 0.065


@pytest.mark.parametrize("separation, directions, dim, num_samples", BINARY_CASES[:3])
def test_the_papers_plain_edge_misses_the_same_signals(separation, directions, dim, num_samples):
    # Issue 17: hashing a few random projections of 384 standardised dimensions cannot see
    # information that lies in a small part of the variance; the estimate sits near its control.
    truth = binary_mi(separation)
    x, labels = sample(num_samples, dim, binary_means(separation, directions), seed=directions)
    plain = edge_mutual_information(x, labels)
    assert abs(plain - truth) > tolerance(truth)
    assert plain < 0.5 * truth


def test_independent_labels_stay_near_zero_at_small_n():
    rng = np.random.default_rng(11)
    for num_samples, dim in ((500, 384), (2000, 768)):
        x = rng.standard_normal((num_samples, dim)).astype(np.float32)
        labels = rng.integers(0, 2, num_samples)
        assert 0.0 <= corrected_estimate(x, labels) <= 0.04


def test_the_separation_is_measured_without_the_noise_of_the_class_means():
    # Two equiprobable classes N(+-Delta/2, I): the separation in the within-class metric is
    # pi_1 pi_0 Delta^2 = Delta^2 / 4. The raw scatter of the sample means adds about
    # d / N = 0.19 to it at d = 384, N = 2,000 (as much as the signal at Delta = 0.8).
    for separation, seed in ((0.8, 1), (1.4, 2), (2.2, 3)):
        x, labels = sample(2000, 384, binary_means(separation, 3), seed=seed)
        measured = debiased_separation(x, labels, seed=seed)
        assert measured == pytest.approx(separation**2 / 4, rel=0.2, abs=0.03), separation
    x, labels = sample(2000, 384, binary_means(0.0, 3), seed=4)
    assert debiased_separation(x, labels) is None  # independent labels: the gate stays shut


def heavy_tailed_anisotropic(num_samples: int, dim: int, seed: int) -> np.ndarray:
    """Rows of a multivariate t (4 degrees of freedom) with a power-law spectrum and an offset,
    rotated: unlike the Gaussian cases above, what pooled sentence vectors look like to the
    estimator (a few directions hold most of the variance, rows vary in scale)."""
    rng = np.random.default_rng(seed)
    spectrum = 1.0 / np.arange(1, dim + 1) ** 1.2
    basis, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    scale = np.sqrt(rng.chisquare(4, num_samples) / 4)[:, None]
    rows = rng.standard_normal((num_samples, dim)) * np.sqrt(spectrum) / scale
    return (rows @ basis.T + 3.0 * basis[:, 0]).astype(np.float32)


def test_random_labels_get_no_correction_on_heavy_tailed_anisotropic_features():
    # SST-2's dev size in MiniLM's width. The first version of the correction read 0.10-0.14
    # bits here for every label draw (0.023-0.026 uncorrected).
    x = heavy_tailed_anisotropic(872, 384, seed=0)
    for draw in range(4):
        labels = np.random.default_rng(100 + draw).integers(0, 2, 872)
        assert debiased_separation(x, labels, seed=draw) is None, draw
        assert corrected_estimate(x, labels) == uncorrected_estimate(x, labels) <= 0.035


def test_on_anisotropic_features_the_correction_errs_low_not_high():
    # A Gaussian signal along one axis of a power-law spectrum (Mahalanobis separation 1.4,
    # true MI 0.286 bits). The shrunk metric understates separation along low-variance axes,
    # so the estimate stays below the truth there (a known limit, issue 17's closing note);
    # what must not happen is a correction past the truth.
    rng = np.random.default_rng(1)
    dim, truth = 384, binary_mi(1.4)
    spectrum = 1.0 / np.arange(1, dim + 1) ** 1.2
    basis, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    labels = rng.integers(0, 2, 2000)
    for axis in (0, 10, 200):
        rows = rng.standard_normal((2000, dim))
        rows[:, axis] += (labels - 0.5) * 1.4
        x = ((rows * np.sqrt(spectrum)) @ basis.T).astype(np.float32)
        estimate = corrected_estimate(x, labels)
        assert uncorrected_estimate(x, labels) <= estimate <= truth, axis


def test_projected_edge_is_reproducible_and_checks_its_inputs():
    x, labels = sample(600, 32, binary_means(1.4, 2), seed=0)
    first = corrected_estimate(x, labels)
    assert corrected_estimate(x, labels) == first
    assert corrected_estimate(x, np.array(["a", "b"])[labels]) == first
    assert corrected_estimate(x, np.zeros(600, dtype=int)) == 0.0
    with pytest.raises(ValueError, match="folds must be at least 2"):
        corrected_estimate(x, labels, folds=1)
    with pytest.raises(ValueError, match="600 rows but labels have 599"):
        corrected_estimate(x, labels[:599])
