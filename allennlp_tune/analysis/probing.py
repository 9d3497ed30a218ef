"""
Diagnostic classifiers (Adi et al., 2017) on per-layer vectors, as in Figure 1 of Peters, Ruder &
Smith (2019): one scikit-learn probe per layer, fit on the train vectors and scored on dev.

Probes (features are standardised on train first, so one setting suits every layer):

- `logistic`: multinomial logistic regression (L2, C = 1), for class labels (the paper's probe).
- `linear`: ordinary least squares, for real-valued scores (the paper's probe for STS-B).
- `ridge`: ridge regression (alpha = 1) for scores, the ridge classifier for class labels.

Metrics: `accuracy`, `mcc` (Matthews correlation, CoLA's metric) and `pearson` (STS-B's).
"""

import itertools
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

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


def fit_probe(train_vectors, train_labels, probe: str, regression: bool, seed: int = 0):
    """The probe `build_probe` makes, fit on one layer's train vectors (at least two labels)."""
    if not regression and len(set(train_labels)) < 2:
        raise ConfigurationError(
            f"The training data has a single label ({train_labels[0]!r}); a classifier probe "
            "needs at least two. Use more training instances (--max-instances)."
        )
    model = build_probe(probe, regression, seed)
    model.fit(train_vectors, np.asarray(train_labels))
    return model


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
    model = fit_probe(train_vectors, train_labels, probe, regression, seed)
    return score(metric, dev_labels, model.predict(dev_vectors))


def as_list(values: Dict[int, Optional[float]], layers: List[int]) -> List[Optional[float]]:
    return [values[layer] for layer in layers]


# Information-theoretic readings of a probe: the variational bound, control tasks and MDL.

_LOG2 = math.log(2.0)


def label_entropy(labels: Sequence) -> float:
    """The plug-in entropy of the empirical label distribution, in bits."""
    _, counts = np.unique(np.asarray(labels), return_counts=True)
    shares = counts / counts.sum()
    return float(-(shares * np.log2(shares)).sum())


def cross_entropy_bits(model, vectors: np.ndarray, labels: Sequence, floor: float = 0.0) -> float:
    """
    Mean `-log2 q(y | x)` of a fitted scikit-learn classifier (`predict_proba`) on `labels`.
    A label the model never saw in training gets probability 0 (infinite cross-entropy) unless
    `floor > 0`, which mixes every distribution with the uniform one: `(1 - floor) q + floor / C`.
    """
    return float(_codelengths(model, vectors, labels, floor=floor).mean())


def _codelengths(model, vectors: np.ndarray, labels: Sequence, floor: float, classes=None):
    """Per-example `-log2 q(y | x)` over `classes` (default: the model's own classes)."""
    probabilities = model.predict_proba(vectors)
    model_classes = list(model.classes_)
    classes = model_classes if classes is None else list(classes)
    full = np.zeros((probabilities.shape[0], len(classes)))
    index = {label: position for position, label in enumerate(classes)}
    for column, label in enumerate(model_classes):
        full[:, index[label]] = probabilities[:, column]
    if floor > 0:
        full = (1.0 - floor) * full + floor / len(classes)
    label_index = np.array([index.get(label, -1) for label in np.asarray(labels)])
    chosen = np.where(label_index >= 0, full[np.arange(len(full)), np.maximum(label_index, 0)], 0.0)
    with np.errstate(divide="ignore"):
        return -np.log2(chosen)


def variational_bound(
    model, dev_vectors: np.ndarray, dev_labels: Sequence, temperature: float = 1.0
) -> Dict[str, Optional[float]]:
    """
    The probe's dev cross-entropy `CE = E[-log2 q(y | x)]` and the variational lower bound
    `I(X; Y) >= H(Y) - CE` (bits; Barber & Agakov 2003): for any `q`, `H(Y | X) <= CE`.
    `H(Y)` is the plug-in entropy of the dev labels, the distribution CE is averaged over: with
    train's label distribution the bound would mix two distributions (MRPC's and CoLA's dev
    label shares differ from train's).

    The bound uses the probe's probabilities at a `temperature` chosen on train only
    (`fit_temperature`): a logistic probe with C = 1 on a few hundred examples in 384
    dimensions is over-confident, and its own dev CE can exceed 1 bit for two classes (SST-2 dev,
    pretrained MiniLM: a bound of -0.5 bits at a layer whose probe is 76% accurate). Any `q`
    fixed without the dev labels gives a valid bound, and the calibrated one is far tighter.
    Returns `{"entropy": H(Y), "cross_entropy": the probe's own CE, "calibrated_cross_entropy":
    CE at the temperature, "temperature", "bound": H(Y) - calibrated CE}`.
    """
    entropy = label_entropy(dev_labels)
    cross_entropy = cross_entropy_bits(model, dev_vectors, dev_labels)
    calibrated = float(
        _calibrated_codelengths(model, temperature, dev_vectors, dev_labels, model.classes_).mean()
    )
    return {
        "entropy": entropy,
        "cross_entropy": cross_entropy,
        "calibrated_cross_entropy": calibrated,
        "temperature": temperature,
        "bound": entropy - calibrated if math.isfinite(calibrated) else None,
    }


def _logits(model, vectors: np.ndarray) -> np.ndarray:
    """`(N, C)` logits of a fitted linear classifier (binary: `[0, decision]`)."""
    decision = np.asarray(model.decision_function(vectors), dtype=np.float64)
    if decision.ndim == 1:
        decision = np.stack([np.zeros_like(decision), decision], axis=1)
    return decision


def _calibrated_codelengths(
    model, temperature: float, vectors: np.ndarray, labels: Sequence, classes, floor: float = 1e-6
) -> np.ndarray:
    """Per-example `-log2 q_T(y | x)`, `q_T = softmax(logits / T)` over `classes`."""
    logits = _logits(model, vectors) / temperature
    logits -= logits.max(axis=1, keepdims=True)
    log_probabilities = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    probabilities = np.exp(log_probabilities)
    classes = list(classes)
    index = {label: position for position, label in enumerate(classes)}
    full = np.zeros((len(probabilities), len(classes)))
    for column, label in enumerate(model.classes_):
        full[:, index[label]] = probabilities[:, column]
    full = (1.0 - floor) * full + floor / len(classes)
    rows = np.arange(len(full))
    label_index = np.array([index[label] for label in np.asarray(labels)])
    return -np.log2(full[rows, label_index])


def fit_temperature(
    probe: str, vectors: np.ndarray, labels: Sequence, *, seed: int = 0, folds: int = 3
) -> float:
    """
    The softmax temperature that minimises the held-out cross-entropy of `probe` within the
    given (train) data: `folds`-fold cross-fitted logits, then a 1-D search over `log T`.
    Returns 1.0 when a fold lacks a class or there are too few examples.
    """
    from scipy.optimize import minimize_scalar

    from allennlp_tune.analysis.edge import stratified_folds

    label_array = np.asarray(labels)
    classes, label_ids = np.unique(label_array, return_inverse=True)
    if len(classes) < 2 or len(label_array) < 2 * folds:
        return 1.0
    fold_of = stratified_folds(label_ids.reshape(-1), folds, seed)
    logits = np.zeros((len(label_array), len(classes)))
    for fold in range(folds):
        train = fold_of != fold
        if len(set(label_array[train].tolist())) < len(classes):
            return 1.0
        model = build_probe(probe, regression=False, seed=seed).fit(
            vectors[train], label_array[train]
        )
        logits[~train] = _logits(model, vectors[~train])
    rows = np.arange(len(label_array))

    def loss(log_temperature: float) -> float:
        scaled = logits / math.exp(log_temperature)
        scaled = scaled - scaled.max(axis=1, keepdims=True)
        log_normaliser = np.log(np.exp(scaled).sum(axis=1))
        return float(np.mean(log_normaliser - scaled[rows, label_ids.reshape(-1)]))

    result = minimize_scalar(loss, bounds=(math.log(0.05), math.log(1000.0)), method="bounded")
    return float(math.exp(result.x))


def control_labels(
    train_types: Sequence, train_labels: Sequence, dev_types: Sequence, seed: int = 0
) -> Tuple[List, List]:
    """
    A control task (Hewitt & Liang 2019): every type (a word type for token tasks; here the
    sentence or pair, by its wordpiece ids) gets one label drawn at random from the train labels'
    empirical distribution, with a fixed seed, so that the same type always has the same control
    label in train and dev. Types are numbered in order of first appearance (train, then dev),
    so the assignment does not depend on anything but the data and the seed. Returns the control
    labels of train and dev.
    """
    rng = np.random.default_rng(seed)
    pool = np.asarray(train_labels, dtype=object)
    assigned: Dict[Any, Any] = {}
    for key in itertools.chain(train_types, dev_types):
        if key not in assigned:
            assigned[key] = None
    draws = rng.integers(0, len(pool), size=len(assigned))
    for key, draw in zip(assigned, draws):
        assigned[key] = pool[draw]
    return [assigned[key] for key in train_types], [assigned[key] for key in dev_types]


# Voita & Titov (2020), section 3.2: the online code's block boundaries, as shares of train.
MDL_FRACTIONS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.0625, 0.125, 0.25, 0.5, 1.0)
MDL_FLOOR = 1e-3


def online_codelength(
    vectors: np.ndarray,
    labels: Sequence,
    *,
    probe: str = "logistic",
    fractions: Sequence[float] = MDL_FRACTIONS,
    seed: int = 0,
    floor: float = MDL_FLOOR,
) -> Dict[str, Any]:
    """
    Minimum description length of the labels given the vectors with the online (prequential)
    code of Voita & Titov (2020). The train examples are shuffled (fixed seed) and cut at
    `t_i = max(1, round(fractions[i] * N))`; the first block is sent with the uniform code
    (`t_1 log2 C` bits), then for every later block a probe fit on all the examples before it
    encodes it with `-log2 q(y | x)`. Compression is the uniform codelength `N log2 C` over the
    online codelength: about 1 when the labels cannot be learnt from the vectors, larger the
    more they can. Every distribution is mixed with `floor` of the uniform one (at most
    `-log2(1 - floor)`, 0.0014 bits an example at the default), so that a class that a block's
    prefix lacks costs a finite `log2(C / floor)` bits instead of infinity; a prefix with a
    single class is coded by its Laplace-smoothed label counts. Two departures from Voita &
    Titov, who early-stop a neural probe on held-out data, both because the logistic probe
    (C = 1) is not tuned per block and is over-confident on small prefixes in 384 dimensions
    (random labels then cost more than the uniform code: compression 0.77 in a synthetic
    check, and pretrained MiniLM's SST-2 features barely 1.0): each block is coded with the
    probe's probabilities at a softmax temperature fit on the prefix alone by 3-fold
    cross-validation (`fit_temperature`), and with the cheaper of that and the uniform code,
    plus one bit saying which (11 bits in all at the standard fractions). The temperature
    depends only on the prefix, which the receiver has decoded, and the choice is sent, so this
    is still an online code. Random labels come out at compression just under 1 (SST-2 dev as
    the data, MiniLM layer 5: 1.28, shuffled labels 0.99). Returns the codelength and the
    uniform codelength (bits), compression, and the per-block codelengths.
    """
    label_array = np.asarray(labels)
    classes = sorted(set(label_array.tolist()))
    num_classes = len(classes)
    total = len(label_array)
    if num_classes < 2:
        raise ConfigurationError("MDL needs at least two classes in the training labels.")
    order = np.random.default_rng(seed).permutation(total)
    vectors, label_array = np.asarray(vectors)[order], label_array[order]
    bounds = sorted({min(total, max(1, int(round(share * total)))) for share in fractions})
    if bounds[-1] != total:
        bounds.append(total)
    uniform_bits = math.log2(num_classes)
    blocks = [bounds[0] * uniform_bits]
    for start, end in zip(bounds[:-1], bounds[1:]):
        prefix = label_array[:start]
        if len(set(prefix.tolist())) < 2:
            counts = np.array([np.sum(prefix == label) for label in classes]) + 1.0
            shares = dict(zip(classes, counts / counts.sum()))
            bits = -np.log2([shares[label] for label in label_array[start:end]])
        else:
            model = build_probe(probe, regression=False, seed=seed)
            model.fit(vectors[:start], prefix)
            temperature = fit_temperature(probe, vectors[:start], prefix, seed=seed)
            bits = _calibrated_codelengths(
                model, temperature, vectors[start:end], label_array[start:end], classes, floor
            )
        # One bit per block says whether the probe or the uniform code sends it, so a probe
        # that overfits a small prefix never costs more than the uniform code plus that bit.
        blocks.append(1.0 + min(float(np.sum(bits)), (end - start) * uniform_bits))
    codelength = float(sum(blocks))
    uniform = total * uniform_bits
    return {
        "codelength": codelength,
        "uniform_codelength": uniform,
        "compression": uniform / codelength,
        "block_ends": bounds,
        "block_codelengths": blocks,
    }


def cross_fitted_bound(
    vectors: np.ndarray, labels: Sequence, *, folds: int = 5, seed: int = 0, probe: str = "logistic"
) -> Dict[str, Optional[float]]:
    """
    The variational bound `H(Y) - CE` on one set of vectors (what `allennlp mi` has: the dev
    file only), cross-fitted: the probe is fit on `folds - 1` stratified folds and its
    cross-entropy taken on the held-out one, for every fold, so no example is scored by a probe
    that saw it, at a temperature fit by 3-fold cross-validation inside the training folds
    (`fit_temperature`; see `variational_bound` for why). `H(Y)` is the plug-in entropy of
    these labels. Probabilities are mixed with
    `1e-6` of the uniform distribution so that a class absent from a training fold (fewer than
    `folds` examples) costs 20 bits, not infinity; the bound stays a bound (any `q` gives one).
    """
    from allennlp_tune.analysis.edge import stratified_folds

    label_array = np.asarray(labels)
    classes = sorted(set(label_array.tolist()))
    entropy = label_entropy(label_array)
    if len(classes) < 2:
        return {"entropy": entropy, "cross_entropy": 0.0, "bound": 0.0}
    _, label_ids = np.unique(label_array, return_inverse=True)
    fold_of = stratified_folds(label_ids.reshape(-1), min(folds, len(label_array)), seed)
    bits = np.zeros(len(label_array))
    for fold in np.unique(fold_of):
        train, held_out = fold_of != fold, fold_of == fold
        if len(set(label_array[train].tolist())) < 2:
            bits[held_out] = math.log2(len(classes))  # nothing to learn from: the uniform code
            continue
        model = build_probe(probe, regression=False, seed=seed)
        model.fit(vectors[train], label_array[train])
        temperature = fit_temperature(probe, vectors[train], label_array[train], seed=seed)
        bits[held_out] = _calibrated_codelengths(
            model, temperature, vectors[held_out], label_array[held_out], classes
        )
    cross_entropy = float(bits.mean())
    return {"entropy": entropy, "cross_entropy": cross_entropy, "bound": entropy - cross_entropy}


def probe_layer_report(
    train_vectors: np.ndarray,
    train_labels: Sequence,
    dev_vectors: np.ndarray,
    dev_labels: Sequence,
    *,
    probe: str,
    metric: str,
    regression: bool,
    seed: int = 0,
    control: Optional[Tuple[Sequence, Sequence]] = None,
    mdl: bool = False,
) -> Dict[str, Any]:
    """
    One layer's probe and what it says in bits: the dev metric (`score`), for classifiers with
    probabilities the dev cross-entropy and the bound `H(Y) - CE` (`variational_bound`), with
    `control` (control train and dev labels, `control_labels`) the same probe's metric on the
    control task and the selectivity (task minus control), and with `mdl` the online code of
    the train labels (`online_codelength`, always with the logistic probe, Voita & Titov's
    choice). Entries that do not apply (regression, a probe without probabilities) are `None`.
    """
    model = fit_probe(train_vectors, train_labels, probe, regression, seed)
    report: Dict[str, Any] = {
        "score": score(metric, dev_labels, model.predict(dev_vectors)),
        "entropy": None,
        "cross_entropy": None,
        "calibrated_cross_entropy": None,
        "temperature": None,
        "bound": None,
    }
    if not regression and hasattr(model, "predict_proba"):
        temperature = fit_temperature(probe, train_vectors, train_labels, seed=seed)
        report.update(variational_bound(model, dev_vectors, dev_labels, temperature))
    if control is not None:
        control_train, control_dev = control
        if not regression and len(set(control_train)) < 2:
            control_score = None
        else:
            control_model = build_probe(probe, regression, seed)
            control_model.fit(train_vectors, np.asarray(control_train))
            control_score = score(metric, control_dev, control_model.predict(dev_vectors))
        report["control_score"] = control_score
        report["selectivity"] = (
            None
            if control_score is None or report["score"] is None
            else report["score"] - control_score
        )
    if mdl:
        report["mdl"] = (
            None if regression else online_codelength(train_vectors, train_labels, seed=seed)
        )
    return report
