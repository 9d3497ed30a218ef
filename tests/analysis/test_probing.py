"""Probes and metrics on synthetic per-layer vectors, and the PNG plot."""

import matplotlib.image
import numpy as np
import pytest
from allennlp.common.checks import ConfigurationError

from allennlp_tune.analysis.plots import plot_layers
from allennlp_tune.analysis.probing import (
    check_probe,
    default_metric,
    default_probe,
    probe_layer,
    score,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 8))
    score_values = x[:, 0] * 2.0 + 0.1 * rng.standard_normal(200)
    labels = np.where(x[:, 0] > 0, "pos", "neg")
    return x, labels, score_values


@pytest.mark.parametrize("probe", ["logistic", "ridge"])
def test_classifier_probes_separate_a_linear_boundary(data, probe):
    x, labels, _ = data
    for metric, minimum in (("accuracy", 0.9), ("mcc", 0.8)):
        value = probe_layer(
            x[:150],
            labels[:150],
            x[150:],
            labels[150:],
            probe=probe,
            metric=metric,
            regression=False,
        )
        assert value > minimum


@pytest.mark.parametrize("probe", ["linear", "ridge"])
def test_regression_probes_recover_a_linear_score(data, probe):
    x, _, scores = data
    value = probe_layer(
        x[:150],
        scores[:150],
        x[150:],
        scores[150:],
        probe=probe,
        metric="pearson",
        regression=True,
    )
    assert value > 0.99


def test_defaults_follow_the_paper():
    assert default_probe(regression=False) == "logistic"
    assert default_probe(regression=True) == "linear"
    assert default_metric("cola", regression=False) == "mcc"
    assert default_metric("sst2", regression=False) == "accuracy"
    assert default_metric("sts_b", regression=True) == "pearson"


def test_probes_that_do_not_fit_the_labels_are_refused():
    with pytest.raises(ConfigurationError, match="needs class labels.*--probe linear"):
        check_probe("logistic", "pearson", regression=True)
    with pytest.raises(ConfigurationError, match="regression probe.*--probe logistic"):
        check_probe("linear", "accuracy", regression=False)
    with pytest.raises(ConfigurationError, match="--metric accuracy does not fit"):
        check_probe("ridge", "accuracy", regression=True)
    with pytest.raises(ConfigurationError, match="single label"):
        probe_layer(
            np.zeros((3, 2)),
            ["a"] * 3,
            np.zeros((1, 2)),
            ["a"],
            probe="logistic",
            metric="accuracy",
            regression=False,
        )


def test_pearson_is_undefined_for_constant_predictions():
    assert score("pearson", [1.0, 2.0, 3.0], [0.5, 0.5, 0.5]) is None
    assert score("pearson", [1.0, 2.0, 3.0], [1.0, 2.0, 3.5]) == pytest.approx(0.9934, abs=1e-3)


def test_plot_is_a_valid_png(tmp_path):
    path = tmp_path / "layers.png"
    plot_layers(
        {
            "pretrained": {"layers": [0, 1, 2], "values": [0.5, 0.6, None]},
            "fine_tuned": {"layers": [0, 1, 2], "values": [0.55, 0.7, 0.9]},
        },
        str(path),
        ylabel="dev accuracy",
        title="test",
        controls={"pretrained": {"layers": [0, 1, 2], "values": [0.0, 0.01, 0.0]}},
    )
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    image = matplotlib.image.imread(str(path))
    assert image.shape[0] == 400 and image.shape[1] == 600 and image.shape[2] in (3, 4)
