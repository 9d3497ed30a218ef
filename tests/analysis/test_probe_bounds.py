"""
The probe's variational bound `H(Y) - CE` and control tasks, on synthetic data with known MI.

Data: two equiprobable classes `N(+-separation/2 e, I)` in 64 dimensions, whose true MI is the
1-D integral `binary_mi` (as in test_edge_known_mi.py). For any probe `q`, `H(Y) - CE(q)` is a lower
bound on `I(X; Y)`; with a finite dev set it is an estimate of one, so the checks allow its
sampling error (0.03 bits at 2,000 dev examples).
"""

import math

import numpy as np
import pytest

from allennlp_tune.analysis.probing import (
    build_probe,
    control_labels,
    cross_fitted_bound,
    fit_temperature,
    label_entropy,
    probe_layer_report,
    variational_bound,
)

DIM = 64


# numpy < 2 (the stock AllenNLP lane) has only trapz.
_trapezoid = getattr(np, "trapezoid", None) or np.trapz


def binary_mi(separation: float) -> float:
    """I(X; Y) in bits for equiprobable N(+-separation/2, 1): the 1-D integral (quadrature)."""
    grid = np.linspace(-separation / 2 - 12, separation / 2 + 12, 200_001)
    density = (
        0.5
        * (
            np.exp(-0.5 * (grid - separation / 2) ** 2)
            + np.exp(-0.5 * (grid + separation / 2) ** 2)
        )
        / math.sqrt(2 * math.pi)
    )
    posterior = np.clip(1.0 / (1.0 + np.exp(-separation * grid)), 1e-300, 1 - 1e-16)
    conditional = -(posterior * np.log2(posterior) + (1 - posterior) * np.log2(1 - posterior))
    return 1.0 - float(_trapezoid(density * conditional, grid))


def two_gaussians(num_samples: int, separation: float, seed: int):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, num_samples)
    x = rng.standard_normal((num_samples, DIM))
    x[:, 0] += (2 * labels - 1) * separation / 2
    return x, labels


@pytest.mark.parametrize("separation", [0.0, 1.0, 2.0, 3.0])
def test_the_bound_stays_below_the_true_mi(separation):
    truth = binary_mi(separation)
    x, labels = two_gaussians(4000, separation, seed=1)
    model = build_probe("logistic", regression=False).fit(x[:2000], labels[:2000])
    temperature = fit_temperature("logistic", x[:2000], labels[:2000])
    bound = variational_bound(model, x[2000:], labels[2000:], temperature)
    assert bound["entropy"] == pytest.approx(label_entropy(labels[2000:]))
    assert bound["bound"] == pytest.approx(bound["entropy"] - bound["calibrated_cross_entropy"])
    assert bound["bound"] <= truth + 0.03
    assert bound["entropy"] - bound["cross_entropy"] <= truth + 0.03  # the probe's own q too
    if separation >= 2.0:  # an informative probe gets most of the way there
        assert bound["bound"] >= 0.7 * truth
    cross_fitted = cross_fitted_bound(x, labels)
    assert cross_fitted["bound"] <= truth + 0.03


def test_a_temperature_fit_on_train_rescues_an_over_confident_probe():
    # 300 train examples in 384 dimensions: the C = 1 probe's own dev CE is above 1 bit, so
    # its bound is negative; the temperature chosen on train alone makes it informative.
    rng = np.random.default_rng(6)
    labels = rng.integers(0, 2, 1300)
    x = rng.standard_normal((1300, 384))
    x[:, 0] += (2 * labels - 1) * 1.0  # separation 2: 0.45 bits
    truth = binary_mi(2.0)
    model = build_probe("logistic", regression=False).fit(x[:300], labels[:300])
    temperature = fit_temperature("logistic", x[:300], labels[:300])
    bound = variational_bound(model, x[300:], labels[300:], temperature)
    assert temperature > 1.5
    assert bound["entropy"] - bound["cross_entropy"] < 0.0
    assert 0.05 < bound["bound"] <= truth + 0.03


def test_the_bound_is_about_zero_for_random_labels_and_the_entropy_is_in_bits():
    x, labels = two_gaussians(2000, 0.0, seed=2)
    assert label_entropy(labels) == pytest.approx(1.0, abs=0.01)
    assert label_entropy(np.array(["a", "b", "c", "d"] * 10)) == pytest.approx(2.0)
    assert cross_fitted_bound(x, labels)["bound"] <= 0.01


def test_control_labels_are_one_per_type_and_reproducible():
    train_types = [("a",), ("b",), ("a",), ("c",)]
    dev_types = [("c",), ("d",), ("a",)]
    labels = ["pos", "neg", "pos", "neg"]
    train, dev = control_labels(train_types, labels, dev_types, seed=3)
    assert train[0] == train[2] == dev[2]  # the same type, the same label
    assert train[3] == dev[0]
    assert set(train + dev) <= {"pos", "neg"}
    assert (train, dev) == control_labels(train_types, labels, dev_types, seed=3)


def selectivity(x, labels, types, seed=0):
    half = len(labels) // 2
    control = control_labels(types[:half], labels[:half], types[half:], seed=seed)
    report = probe_layer_report(
        x[:half],
        labels[:half],
        x[half:],
        labels[half:],
        probe="logistic",
        metric="accuracy",
        regression=False,
        control=control,
    )
    return report


def test_selectivity_is_large_for_informative_features_and_small_for_random_ones():
    x, labels = two_gaussians(2000, 3.0, seed=4)
    types = [(index,) for index in range(len(labels))]  # every sentence its own type
    informative = selectivity(x, labels, types)
    assert informative["score"] > 0.85
    assert informative["control_score"] == pytest.approx(0.5, abs=0.05)
    assert informative["selectivity"] > 0.3
    noise = np.random.default_rng(5).standard_normal(x.shape)
    random_features = selectivity(noise, labels, types)
    assert abs(random_features["selectivity"]) < 0.06
    # The bound rides along: about 0 bits or below for random features.
    assert random_features["bound"] < 0.02 < informative["bound"]
