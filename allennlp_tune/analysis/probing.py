"""
Diagnostic classifiers (Adi et al., 2017) on per-layer vectors, as in Figure 1 of Peters, Ruder &
Smith (2019): one scikit-learn probe per layer, fit on the train vectors and scored on dev.

Probes (features are standardised on train first, so one setting suits every layer):

- `logistic`: multinomial logistic regression (L2, C = 1), for class labels (the paper's probe).
- `linear`: ordinary least squares, for real-valued scores (the paper's probe for STS-B).
- `ridge`: ridge regression (alpha = 1) for scores, the ridge classifier for class labels.

Metrics: `accuracy`, `mcc` (Matthews correlation, CoLA's metric) and `pearson` (STS-B's).
"""

import math
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
from allennlp.common.checks import ConfigurationError

PROBES = ("logistic", "linear", "ridge")
METRICS = ("accuracy", "mcc", "pearson")


def default_probe(regression: bool) -> str:
    return "linear" if regression else "logistic"


def default_metric(reader_type: str, regression: bool) -> str:
    if regression:
        return "pearson"
    return "mcc" if reader_type == "cola" else "accuracy"


def check_probe(probe: str, metric: str, regression: bool) -> None:
    """Raises `ConfigurationError` for a probe or metric that does not fit the labels."""
    kind = "real-valued scores" if regression else "class labels"
    if probe not in PROBES:
        raise ConfigurationError(f"--probe {probe!r}: expected one of {', '.join(PROBES)}.")
    if metric not in METRICS:
        raise ConfigurationError(f"--metric {metric!r}: expected one of {', '.join(METRICS)}.")
    if regression and probe == "logistic":
        raise ConfigurationError(
            "--probe logistic needs class labels, but this reader gives real-valued scores "
            "(e.g. STS-B). Use --probe linear (the paper's choice) or ridge."
        )
    if not regression and probe == "linear":
        raise ConfigurationError(
            "--probe linear is a regression probe, but this reader gives class labels. Use "
            "--probe logistic (the paper's choice) or ridge."
        )
    if regression != (metric == "pearson"):
        raise ConfigurationError(
            f"--metric {metric} does not fit {kind}: use pearson for scores, accuracy or mcc "
            "for class labels."
        )


def build_probe(probe: str, regression: bool, seed: int = 0):
    from sklearn.linear_model import (
        LinearRegression,
        LogisticRegression,
        Ridge,
        RidgeClassifier,
    )
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if probe == "logistic":
        model = LogisticRegression(C=1.0, max_iter=2000, random_state=seed)
    elif probe == "linear":
        model = LinearRegression()
    elif regression:
        model = Ridge(alpha=1.0)
    else:
        model = RidgeClassifier(alpha=1.0)
    return make_pipeline(StandardScaler(), model)


def score(metric: str, gold: Sequence, predicted: Sequence) -> Optional[float]:
    """The dev metric; `None` where it is undefined (e.g. Pearson with constant predictions)."""
    from sklearn.metrics import accuracy_score, matthews_corrcoef

    if metric == "accuracy":
        return float(accuracy_score(gold, predicted))
    if metric == "mcc":
        return float(matthews_corrcoef(gold, predicted))
    gold_values = np.asarray(gold, dtype=np.float64)
    predicted_values = np.asarray(predicted, dtype=np.float64)
    if gold_values.std() == 0 or predicted_values.std() == 0:
        return None
    value = float(np.corrcoef(gold_values, predicted_values)[0, 1])
    return None if math.isnan(value) else value


def probe_layer(
    train_vectors: np.ndarray,
    train_labels: Sequence[Union[str, float]],
    dev_vectors: np.ndarray,
    dev_labels: Sequence[Union[str, float]],
    *,
    probe: str,
    metric: str,
    regression: bool,
    seed: int = 0,
) -> Optional[float]:
    """Fits one probe on the train vectors of a layer and returns its dev metric."""
    if not regression and len(set(train_labels)) < 2:
        raise ConfigurationError(
            f"The training data has a single label ({train_labels[0]!r}); a classifier probe "
            "needs at least two. Use more training instances (--max-instances)."
        )
    model = build_probe(probe, regression, seed)
    model.fit(train_vectors, np.asarray(train_labels))
    return score(metric, dev_labels, model.predict(dev_vectors))


def probe_layers(
    train, dev, *, probe: str, metric: str, seed: int = 0
) -> Dict[int, Optional[float]]:
    """`probe_layer` for every layer of two `LayerFeatures` (train and dev)."""
    results: Dict[int, Optional[float]] = {}
    for layer in train.layers:
        results[layer] = probe_layer(
            train.vectors[layer],
            train.labels,
            dev.vectors[layer],
            dev.labels,
            probe=probe,
            metric=metric,
            regression=train.regression,
            seed=seed,
        )
    return results


def as_list(values: Dict[int, Optional[float]], layers: List[int]) -> List[Optional[float]]:
    return [values[layer] for layer in layers]
