"""
MDL probing with the online code (Voita & Titov 2020) on synthetic data: random labels compress
to about 1 (no better than the uniform code), learnable ones to more, and the description
length falls as the features carry more about the labels.
"""

import matplotlib.image
import numpy as np
import pytest
from allennlp.common.checks import ConfigurationError

from allennlp_tune.analysis.plots import plot_layers
from allennlp_tune.analysis.probing import MDL_FRACTIONS, online_codelength

DIM = 64


def data(num_samples: int, separation: float, seed: int, num_classes: int = 2):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, num_samples)
    x = rng.standard_normal((num_samples, DIM))
    x[:, :num_classes] += np.eye(num_classes)[labels] * separation
    return x, labels


def test_random_labels_do_not_compress():
    x, labels = data(2000, 0.0, seed=0)
    code = online_codelength(x, labels)
    assert code["uniform_codelength"] == pytest.approx(2000.0)
    assert 0.97 <= code["compression"] <= 1.01
    x4, labels4 = data(2000, 0.0, seed=1, num_classes=4)
    code4 = online_codelength(x4, labels4)
    assert code4["uniform_codelength"] == pytest.approx(4000.0)
    assert 0.97 <= code4["compression"] <= 1.01


def test_description_length_falls_as_the_features_get_more_informative():
    codelengths = []
    for separation in (0.0, 1.0, 2.0, 4.0):
        x, labels = data(2000, separation, seed=2)
        codelengths.append(online_codelength(x, labels)["codelength"])
    assert all(later < earlier for earlier, later in zip(codelengths, codelengths[1:]))
    x, labels = data(2000, 4.0, seed=2)
    assert online_codelength(x, labels)["compression"] > 3.0


def test_blocks_follow_the_standard_fractions():
    x, labels = data(2000, 2.0, seed=3)
    code = online_codelength(x, labels)
    assert code["block_ends"] == [2, 4, 8, 16, 32, 64, 125, 250, 500, 1000, 2000]
    assert len(MDL_FRACTIONS) == len(code["block_ends"])
    assert code["block_codelengths"][0] == pytest.approx(2.0)  # 2 examples, uniform, 1 bit each
    assert sum(code["block_codelengths"]) == pytest.approx(code["codelength"])
    # A block never costs more than its uniform code plus the one-bit choice.
    ends = code["block_ends"]
    for (start, end), bits in zip(zip(ends, ends[1:]), code["block_codelengths"][1:]):
        assert bits <= (end - start) + 1.0 + 1e-9
    assert online_codelength(x, labels) == code  # fixed seed


def test_single_class_and_tiny_data():
    with pytest.raises(ConfigurationError, match="at least two classes"):
        online_codelength(np.zeros((5, 2)), [1] * 5)
    x, labels = data(12, 2.0, seed=4)
    code = online_codelength(x, np.array(["a", "b"])[labels])
    assert code["block_ends"][-1] == 12 and code["codelength"] > 0


def test_mdl_plot_is_a_png(tmp_path):
    path = tmp_path / "mdl.png"
    plot_layers(
        {"pretrained": {"layers": [0, 1], "values": [1.0, 1.4]}},
        str(path),
        ylabel="compression",
        title="MDL",
        bounds={"pretrained": {"layers": [0, 1], "values": [0.1, None]}},
    )
    assert matplotlib.image.imread(str(path)).shape[:2] == (400, 600)
