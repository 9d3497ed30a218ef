"""
EDGE: the ensemble dependency graph estimator of mutual information (Noshad, Zeng & Hero,
"Scalable Mutual Information Estimation using Dependence Graphs", ICASSP 2019, arXiv:1801.09125),
for continuous representations `X` (N x d) and discrete labels `Y`, as used for Figure 2 of
Peters, Ruder & Smith (2019). Results are in **bits** (`log_base=2`), like the reference code.

One base estimate, for a hash resolution epsilon:

1. Locality-sensitive hashing, `H = H2(H1(x))`. `H1` standardises every coordinate, projects onto
   `k` random Gaussian directions when `d` is larger than `max_raw_dim` (the p-stable LSH family;
   small `d` is hashed coordinate-wise, as the reference does for `d <= 6`), standardises each
   projection, and quantises it with width `epsilon` and a random shift `b ~ U[0, epsilon)`:
   `floor(z / epsilon + b / epsilon)`. `H2` maps the integer cell vector to one of
   `F = 2**ceil(log2(4 N))` buckets with a random multiply-shift hash (the paper's
   `F = c_H N`). Labels are discrete, so each label value is its own bucket.
2. The dependence graph: a bipartite multigraph between X buckets and label values with one
   edge per sample. With `N_i` samples in X bucket `i`, `M_j` with label `j` and `N_ij` edges
   between them, the edge weight is `omega_ij = N_ij N / (N_i M_j)` and the estimate is
   `sum_ij (N_ij / N) g(omega_ij)` with `g = log`, capped above at `upper_bound` (the paper's
   `U`). All counts come from `np.bincount`, so a base estimate is O(N k).

The ensemble runs `num_estimators` base estimates at resolutions `epsilon_l = t_l epsilon_0`,
`t_l` spread geometrically over a factor `resolution_range`, each with a fresh projection and
shift, and combines them:

- `"median"` (default): the median of the base estimates, the default of the authors' released
  code and robust to an unlucky hash.
- `"weighted"`: the paper's weighted ensemble: the minimum-norm weights that sum to 1 and
  cancel the two leading bias terms of a base estimate, `epsilon^gamma` and `1 / (N epsilon^k)`
  (see `optimal_ensemble_weights`). It removes the resolution bias (e.g. labels that are a
  deterministic function of `x` are no longer underestimated) at the price of variance: the
  weights' norm is about 3.5 for `k = 6` and 15 for `k = 1` at the default `resolution_range`
  of 2, so widen the range (e.g. 4) when using it. The result is clipped to `[0, H(Y)]`.
- `"mean"`: the plain average.

We default to the median: it is stable (spread about 0.005 bits over seeds at N = 4000), never
exceeds `H(Y)` and keeps the random-label control closest to 0 in high dimension; its price is
a conservative (low) estimate when the label boundary is sharp, since buckets straddling it mix
labels.

How epsilon_0 is chosen. The paper's rate for the bandwidth, `epsilon ~ N^(-1/(2d))`, makes the
number of occupied buckets grow like `sqrt(N)`. Rather than the reference's k-NN heuristics, we
calibrate it directly: epsilon_0 is found by bisection so that the X hash occupies about
`N / bucket_size` buckets, with `bucket_size = sqrt(N)` by default. This keeps the
finite-sample bias for independent labels near `(C - 1) / (2 sqrt(N) ln 2)` bits (C classes),
i.e. about 0 for the random-label control, while buckets stay small enough to separate labels.
The projected dimension defaults to `k = round(log2(N) / 2)` (about two cells per direction at
that bucket count), capped at `d`.

`g` has no lower cap (the authors' code floors every edge term at 0.001 bits): negative edge
terms are kept, so with independent labels the estimate is the small plug-in bias above instead
of being pushed up by the floor.

Cost: O(N d k) for the projections plus O(N k) per bisection step and per base estimate.

**The projected estimator (`edge_projected_mutual_information`, the default of `allennlp mi`,
issue 17).** Plain EDGE on d = 384 standardised dimensions hashes a handful of *random*
projections; label information that lies along a few directions holding a small part of the
variance is diluted into them: two classes whose means differ along one direction (true MI
0.29 bits, N = 2,000) give 0.02 bits, below the random-label control of a smaller sample. The
projected estimator keeps EDGE's hashing and ensemble but chooses what it hashes: a shrinkage
linear discriminant (Ledoit-Wolf, towards a scaled identity) maps `X` to its `C - 1` class
log-odds, cross-fitted over 10 stratified folds (each fold is projected by the discriminant
fit on the other nine, so no sample's own label shapes its projection, and the estimate uses
all N projected samples at once rather than averaging half-sample estimates, which would double
the plug-in bias). EDGE then hashes those few coordinates directly. Against the reference
implementation (Noshad's `EDGE.py`): kept are the p-stable LSH hash with a random shift, the
`F = c_H N` bucket table, the cap `U`, the median ensemble over resolutions (its default) and
the optional weighted ensemble; changed are the projection (learnt, not random, and cross-fitted)
and epsilon (calibrated by occupancy, as above). The estimate is a lower estimate of `I(X; Y)`
(data processing: `I(s(X); Y) <= I(X; Y)`) of the label information its learnt directions see.

**The attenuation correction (on by default, `correct_attenuation=True`; `allennlp mi
--estimator edge_projected_uncorrected` turns it off).** A direction learnt from n examples in
d dimensions is noisy: the estimated mean difference carries noise of squared norm about
`d (1/n_1 + 1/n_0)` (whitened units), so the held-out projection keeps only `cos^2(theta) =
Delta^2 / (Delta^2 + d (1/n_1 + 1/n_0))` of the squared class separation `Delta^2`: at d = 768
and N = 2,000 a 0.107-bit signal reads 0.04 bits. The correction measures the separation
without that noise term (`debiased_separation`) and moves the held-out class means of the
scores apart about their weighted mean by one factor `kappa = 1 / cos(theta) >= 1` until their
separation, in units of the scores' pooled within-class covariance, equals it (Spearman's
correction for attenuation, `disattenuate`); every sample keeps its own deviation from its class
mean, and EDGE hashes the result as before.

How the separation is measured, and why so. Everything is computed in one label-free metric,
`S_T`, the Ledoit-Wolf shrunk total covariance `(1 - a) T + a mu I` of the standardised
features. The scatter of the class means in that metric has, under independent labels and
conditionally on the features (the labels a random assignment of the observed class sizes), the
exact expectation `(C - 1) tr(S_T^-1 T) / (N - 1)` whatever the features' distribution; that is
subtracted per class direction. The correction applies only when a permutation test (the
debiased scatter of 50 label permutations, in the same metric) puts the labels' scatter more
than 3 of the permutations' standard deviations above their mean; otherwise, as with random
labels, nothing is stretched and the estimate is the uncorrected one. Since `S_T = S_W + (1 - a)
B` in the population (`S_W` the shrunk within-class covariance, `B` the between-class scatter),
each eigenvalue `nu` of the debiased `S_T^-1 B` maps to the within-class metric the discriminant
uses by `lambda = nu / (1 - (1 - a) nu)`; the target is `sum lambda`. A first version (stop 28)
measured the scatter in the shrunk *within-class* covariance and gated it with a Gaussian null
formula: that covariance depends on the labels and, at N of about 2 d, is smaller along the
noise direction of the sample class means, which inflates the scatter under independent labels
(by up to 2x at n / d = 2); isotropic Gaussian data hid it (Ledoit-Wolf shrinks it almost fully
to the identity), real MiniLM features did not (random-label controls of 0.12-0.65 bits; with
this version they equal the uncorrected ones, docs/results/NOTEBOOK.md section 11).

What the correction assumes, and its limits: the missed separation is a mean shift, and the
class-conditional scores shift by it without changing shape (MI carried by other than mean
shifts is not recovered). The separation is measured in the shrunk metric, which understates it
along low-variance directions of strongly anisotropic features: there the correction stays below
the truth (it errs low, never high; tests/analysis/test_edge_known_mi.py). Without the
correction the estimate is the (lower) estimate of the projection alone; small signals then
need N of several times d.

Cost: O(N d^2) for the fold Gram matrices and the metric, O(d^3) per fold and once for the
metric's eigendecomposition, O(N d) per permutation, then EDGE on `C - 1` coordinates, so
doubling N at most doubles the time.
"""

import math
from typing import Optional, Sequence, Tuple

import numpy as np

ENSEMBLES = ("median", "weighted", "mean")
_BUCKETS_PER_SAMPLE = 4  # the paper's c_H: F = c_H * N hash buckets (rounded up to 2^m)
_BISECTION_STEPS = 16
_BUCKET_COUNT_TOLERANCE = 0.02  # calibration stops within 2% of the target bucket count
_BLOCK_ROWS = 2048
# The attenuation correction applies when the debiased class separation exceeds the mean of
# its permutation null by this many of the null's standard deviations.
_SEPARATION_Z = 3.0
_PERMUTATIONS = 50


def edge_mutual_information(
    representations: np.ndarray,
    labels: Sequence,
    *,
    num_estimators: int = 10,
    ensemble: str = "median",
    bucket_size: Optional[float] = None,
    projection_dim: Optional[int] = None,
    max_raw_dim: int = 6,
    resolution_range: float = 2.0,
    upper_bound: float = 10.0,
    log_base: float = 2.0,
    seed: Optional[int] = 0,
) -> float:
    """
    Estimates `I(X; Y)` with EDGE, in bits by default (see the module docstring for the method).

    # Parameters

    representations : `np.ndarray`
        `(N, d)` continuous features (a 1-D array is one feature).
    labels : `Sequence`
        `N` discrete labels of any hashable type (strings, ints).
    num_estimators : `int`, optional (default = `10`)
        `L`, the number of base estimates (hash resolutions) in the ensemble.
    ensemble : `str`, optional (default = `"median"`)
        How base estimates are combined: `"median"`, `"weighted"` (the paper's optimal weights)
        or `"mean"`.
    bucket_size : `float`, optional (default = `sqrt(N)`)
        Average number of samples per occupied X bucket that sets the base resolution.
    projection_dim : `int`, optional (default = `round(log2(N) / 2)`, at most `d`)
        Number of random projections `k` when `d > max_raw_dim`.
    max_raw_dim : `int`, optional (default = `6`)
        Up to this many dimensions, coordinates are hashed directly without projection.
    resolution_range : `float`, optional (default = `2.0`)
        Ratio between the coarsest and the finest resolution in the ensemble.
    upper_bound : `float`, optional (default = `10.0`)
        The cap `U` on every edge's pointwise information, in units of `log_base`.
    log_base : `float`, optional (default = `2.0`)
        `2` for bits, `math.e` for nats.
    seed : `int`, optional (default = `0`)
        Seed of the random projections, shifts and hashes; `None` draws a fresh one.

    # Returns

    `float`, the estimated mutual information.
    """
    # float32 halves the memory traffic; hashing needs no more precision than that.
    features = np.asarray(representations, dtype=np.float32)
    if features.ndim == 1:
        features = features[:, None]
    if features.ndim != 2:
        raise ValueError(f"representations must be (N, d); got shape {features.shape}.")
    label_ids = _encode_labels(labels)
    num_samples = features.shape[0]
    if label_ids.shape[0] != num_samples:
        raise ValueError(
            f"representations have {num_samples} rows but labels have {label_ids.shape[0]}."
        )
    if ensemble not in ENSEMBLES:
        raise ValueError(f"ensemble is {ensemble!r}; expected one of {', '.join(ENSEMBLES)}.")
    if num_estimators < 1:
        raise ValueError(f"num_estimators must be at least 1, got {num_estimators}.")
    if not np.all(np.isfinite(features)):
        raise ValueError("representations contain NaN or infinite values.")
    if num_samples < 2 or label_ids.max() == 0:
        return 0.0  # one sample, or a single label value: no information to share.

    rng = np.random.default_rng(seed)
    dim = features.shape[1]
    mean, spread = _moments(features)
    if dim > max_raw_dim:
        default_dim = int(round(math.log2(num_samples) / 2))
        hashed_dim = max(1, min(dim, projection_dim or default_dim))
    else:
        hashed_dim = dim
        standardised = ((features - mean) / spread).astype(np.float32)
    target_buckets = num_samples / (bucket_size or math.sqrt(num_samples))
    num_hash_buckets = 1 << math.ceil(math.log2(_BUCKETS_PER_SAMPLE * num_samples))
    num_labels = int(label_ids.max()) + 1
    label_counts = np.bincount(label_ids, minlength=num_labels)

    scales = resolution_range ** np.linspace(-0.5, 0.5, num_estimators)
    if num_estimators == 1:
        scales = np.ones(1)
    estimates = np.empty(num_estimators)
    for index, scale in enumerate(scales):
        if dim > max_raw_dim:
            # Projecting the standardised features, folded into the projection matrix so that
            # no standardised (N, d) copy is made: ((x - mean) / spread) @ W.
            projection = rng.standard_normal((dim, hashed_dim)) / spread[:, None]
            offset = (mean @ projection).astype(np.float32)
            hashed = _standardise(features @ projection.astype(np.float32) - offset)
        else:
            hashed = standardised
        buckets = _LocalitySensitiveHash(hashed, rng, num_hash_buckets)
        width = _calibrate_width(buckets, target_buckets, num_hash_buckets)
        estimates[index] = _dependence_graph_estimate(
            buckets(width * scale),
            label_ids,
            label_counts,
            num_hash_buckets,
            upper_bound * math.log(log_base),
        )

    if ensemble == "median":
        combined = float(np.median(estimates))
    elif ensemble == "mean":
        combined = float(np.mean(estimates))
    else:
        weights = optimal_ensemble_weights(scales, hashed_dim)
        # Extrapolation can overshoot; MI lies in [0, H(Y)].
        label_entropy = -float(
            np.sum(label_counts / num_samples * np.log(label_counts / num_samples))
        )
        combined = float(np.clip(weights @ estimates, 0.0, label_entropy))
    return combined / math.log(log_base)


def optimal_ensemble_weights(
    scales: np.ndarray, hashed_dim: int, smoothness: float = 1.0
) -> np.ndarray:
    """
    The bias-cancelling ensemble weights for base estimates at resolutions `t_l * epsilon_0`.

    The paper bounds a base estimate's bias by `c_1 epsilon^gamma + c_2 / (N epsilon^k)`
    (resolution bias plus the finite-sample bias of small buckets). The weights are the
    minimum-norm `w` with `sum_l w_l = 1`, `sum_l w_l t_l^gamma = 0` and
    `sum_l w_l t_l^(-k) = 0`, so both leading terms cancel whatever `c_1`, `c_2` are; the
    minimum norm keeps the variance they add (a factor `||w||_2` on the spread) as small as
    possible. Returns the `L` weights; with fewer than 3 estimates, uniform weights.
    """
    scales = np.asarray(scales, dtype=np.float64)
    count = scales.shape[0]
    if count < 3:
        return np.full(count, 1.0 / count)
    constraints = np.stack([np.ones(count), scales**smoothness, scales ** (-float(hashed_dim))])
    targets = np.array([1.0, 0.0, 0.0])
    # Minimum-norm solution of constraints @ w = targets.
    weights, *_ = np.linalg.lstsq(constraints, targets, rcond=None)
    return weights


def _encode_labels(labels: Sequence) -> np.ndarray:
    values = np.asarray(labels)
    if values.ndim != 1:
        values = values.reshape(len(values), -1)
        if values.shape[1] != 1:
            raise ValueError(f"labels must be one discrete value per sample; got {values.shape}.")
        values = values[:, 0]
    if values.dtype.kind == "f" and not np.all(np.equal(np.mod(values, 1), 0)):
        raise ValueError(
            "labels look continuous (non-integer floats). EDGE here needs discrete labels: "
            "bin regression scores first (e.g. `discretise_scores`)."
        )
    _, inverse = np.unique(values, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


def discretise_scores(scores: Sequence[float], num_bins: int = 5) -> np.ndarray:
    """
    Bins real-valued labels (STS-B, SICK-R scores) into `num_bins` equal-frequency bins (edges at
    the score quantiles; tied scores stay in one bin), so they can be used as discrete labels.
    """
    values = np.asarray(scores, dtype=np.float64)
    edges = np.unique(np.quantile(values, np.linspace(0, 1, num_bins + 1)[1:-1]))
    return np.searchsorted(edges, values, side="right")


def _moments(values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Per-column mean and standard deviation (float64); constant columns get deviation 1."""
    # In row blocks: a float64 copy of all of `values` would fall out of the cache at large N.
    blocks = range(0, values.shape[0], _BLOCK_ROWS)
    total = np.zeros(values.shape[1])
    for start in blocks:
        total += values[start : start + _BLOCK_ROWS].sum(axis=0, dtype=np.float64)
    mean = total / values.shape[0]
    squares = np.zeros(values.shape[1])
    for start in blocks:
        block = values[start : start + _BLOCK_ROWS].astype(np.float64) - mean
        squares += np.einsum("ij,ij->j", block, block)
    spread = np.sqrt(squares / values.shape[0])
    spread[spread <= 1e-6 * np.maximum(1.0, np.abs(mean))] = 1.0
    return mean, spread


def _standardise(values: np.ndarray) -> np.ndarray:
    """A float32 copy of `values` with every column at mean 0 and deviation 1, in row blocks."""
    mean, spread = _moments(values)
    standardised = np.empty(values.shape, dtype=np.float32)
    for start in range(0, values.shape[0], _BLOCK_ROWS):
        block = (values[start : start + _BLOCK_ROWS] - mean) / spread
        standardised[start : start + _BLOCK_ROWS] = block
    return standardised


class _LocalitySensitiveHash:
    """
    `H2(H1(z))` for standardised (projected) features `z` at a given width: `H1` quantises every
    coordinate with a random shift, `H2` maps the integer cell vector to `[0, num_buckets)`.
    """

    def __init__(self, features: np.ndarray, rng: np.random.Generator, num_buckets: int) -> None:
        dim = features.shape[1]
        self.columns = np.ascontiguousarray(features.T)  # (k, N): one contiguous row per axis
        self.shift = rng.random(dim).astype(np.float32)[:, None]
        # Odd 64-bit multipliers: a random linear hash of the cell vector, then multiply-shift.
        self.multipliers = rng.integers(1, 2**62, size=dim, dtype=np.uint64) * np.uint64(2) + 1
        self.mixer = rng.integers(1, 2**62, size=1, dtype=np.uint64) * np.uint64(2) + 1
        self.bucket_shift = np.uint64(64 - int(math.log2(num_buckets)))

    def __call__(self, width: float) -> np.ndarray:
        scaled = self.columns * np.float32(1.0 / width)
        scaled += self.shift
        np.floor(scaled, out=scaled)
        cells = scaled.astype(np.int64).view(np.uint64)
        # uint64 products and sums wrap modulo 2^64, which is what a hash wants.
        combined = cells[0] * self.multipliers[0]
        for axis in range(1, cells.shape[0]):
            combined += cells[axis] * self.multipliers[axis]
        combined ^= combined >> np.uint64(31)
        combined *= self.mixer
        combined >>= self.bucket_shift
        return combined.view(np.int64)


def _calibrate_width(buckets, target: float, num_hash_buckets: int) -> float:
    """Bisection on log(width) for about `target` occupied buckets (fewer as width grows)."""

    def occupied(width: float) -> int:
        return int(np.count_nonzero(np.bincount(buckets(width), minlength=num_hash_buckets)))

    # Widths are in units of the standardised coordinates' standard deviation.
    low, high = math.log(1e-3), math.log(1e3)
    middle = 0.0
    for _ in range(_BISECTION_STEPS):
        count = occupied(math.exp(middle))
        if abs(count - target) <= _BUCKET_COUNT_TOLERANCE * target:
            break
        if count > target:
            low = middle
        else:
            high = middle
        middle = 0.5 * (low + high)
    return math.exp(middle)


def _dependence_graph_estimate(
    x_buckets: np.ndarray,
    label_ids: np.ndarray,
    label_counts: np.ndarray,
    num_hash_buckets: int,
    upper_bound_nats: float,
) -> float:
    """`sum_ij (N_ij / N) min(log omega_ij, U)` in nats, summed per sample (one edge each)."""
    num_samples = x_buckets.shape[0]
    num_labels = label_counts.shape[0]
    bucket_counts = np.bincount(x_buckets, minlength=num_hash_buckets)
    joint_ids = x_buckets * num_labels + label_ids
    joint_counts = np.bincount(joint_ids, minlength=num_hash_buckets * num_labels)
    weights = (
        joint_counts[joint_ids].astype(np.float64)
        * num_samples
        / (bucket_counts[x_buckets] * label_counts[label_ids].astype(np.float64))
    )
    pointwise = np.minimum(np.log(weights), upper_bound_nats)
    return float(pointwise.mean())


def edge_projected_mutual_information(
    representations: np.ndarray,
    labels: Sequence,
    *,
    folds: int = 10,
    correct_attenuation: bool = True,
    seed: Optional[int] = 0,
    log_base: float = 2.0,
    **edge_options,
) -> float:
    """
    EDGE on a supervised, cross-fitted projection: the default estimator of `allennlp mi`.

    The samples are split into `folds` stratified folds. For every fold, a shrinkage linear
    discriminant (`lda_scores`) is fit on the other folds and maps the fold's own samples to
    their `C - 1` discriminant log-odds (class `c` against the last class); no sample is
    projected by a map that saw its label. EDGE (`edge_mutual_information`, its options in
    `edge_options`) then estimates `I(s(X); Y)` on all `N` projected samples at once, each hashed
    coordinate by coordinate when `C - 1 <= max_raw_dim`. By the data-processing inequality
    `I(s(X); Y) <= I(X; Y)`, so the estimate errs low, by the label information the learnt
    directions miss (see the module docstring); with random labels the projection is noise and
    the estimate stays at EDGE's small plug-in bias.

    With `correct_attenuation` (the default), the held-out class means are first moved apart
    until they show the class separation measured without the noise of the class means
    (`debiased_separation`, `disattenuate` and the module docstring), when a permutation test
    finds that separation clearly above what independent labels give; this removes most of the
    shortfall at N of a few times d when the missed separation is a mean shift. Without it, the
    uncorrected projection, a lower estimate.
    """
    features = np.asarray(representations, dtype=np.float32)
    if features.ndim == 1:
        features = features[:, None]
    label_ids = _encode_labels(labels)
    if features.shape[0] != label_ids.shape[0]:
        raise ValueError(
            f"representations have {features.shape[0]} rows but labels have {label_ids.shape[0]}."
        )
    if folds < 2:
        raise ValueError(f"folds must be at least 2, got {folds}.")
    if not np.all(np.isfinite(features)):
        raise ValueError("representations contain NaN or infinite values.")
    if features.shape[0] < 4 or label_ids.max() == 0:
        return 0.0  # a single label value, or too few samples to hold any out
    # Tiny samples (test fixtures) get fewer folds: at least two samples in each.
    folds = min(folds, features.shape[0] // 2)
    standardised = _standardise(features)  # (N, d), shared by the projection and the correction
    scores = _cross_fitted_lda(standardised, label_ids, folds=folds, seed=seed)
    if correct_attenuation:
        separation = _debiased_separation(standardised, label_ids, _PERMUTATIONS, seed)
        if separation is not None:
            scores = disattenuate(scores, label_ids, separation)
    return edge_mutual_information(scores, label_ids, seed=seed, log_base=log_base, **edge_options)


def disattenuate(scores: np.ndarray, label_ids: np.ndarray, separation: float) -> np.ndarray:
    """
    Moves the class means of held-out `scores` apart, by one factor `kappa >= 1` about their
    prior-weighted mean, until their between-class separation `tr(W_s^-1 B_s)` (in units of
    the scores' own pooled within-class covariance `W_s`) equals `separation`; the samples keep
    their within-class deviations. `kappa = 1` (the scores unchanged) when `separation` does not
    exceed what the scores already show, in particular when it is <= 0.
    """
    values = np.asarray(scores, dtype=np.float64)
    num_classes = int(label_ids.max()) + 1
    counts = np.bincount(label_ids, minlength=num_classes).astype(np.float64)
    if np.any(counts == 0) or values.shape[0] <= num_classes:
        return scores
    means = (np.eye(num_classes)[label_ids].T @ values) / counts[:, None]  # (C, C - 1)
    weights = counts / counts.sum()
    centred = means - weights @ means
    residuals = values - means[label_ids]
    within = residuals.T @ residuals / (values.shape[0] - num_classes)
    between = (centred.T * weights) @ centred
    shown = float(np.trace(np.linalg.pinv(within) @ between))
    if not (shown > 0 and separation > shown):
        return scores
    stretch = math.sqrt(separation / shown)
    stretched = values + (stretch - 1.0) * centred[label_ids]
    return stretched.astype(np.float32)


def stratified_folds(label_ids: np.ndarray, folds: int, seed: Optional[int]) -> np.ndarray:
    """A fold index per sample: each class's samples, shuffled, dealt to the folds in turn."""
    rng = np.random.default_rng(seed)
    assignment = np.empty(label_ids.shape[0], dtype=np.int64)
    offset = 0
    for label in np.unique(label_ids):
        members = rng.permutation(np.flatnonzero(label_ids == label))
        assignment[members] = (np.arange(members.shape[0]) + offset) % folds
        offset += members.shape[0]  # spread the classes' remainders over the folds
    return assignment


def cross_fitted_lda_scores(
    features: np.ndarray, label_ids: np.ndarray, *, folds: int = 10, seed: Optional[int] = 0
) -> np.ndarray:
    """
    `(N, C - 1)` held-out discriminant log-odds: for each fold, a linear discriminant with
    Ledoit-Wolf shrinkage of the pooled within-class covariance towards a scaled identity, fit
    on the other folds. The features are standardised first (label-free). Gram matrices are
    accumulated once per fold, so the cost is O(N d^2) plus O(d^3) per fold.
    """
    return _cross_fitted_lda(_standardise(features), label_ids, folds=folds, seed=seed)


def _cross_fitted_lda(
    standardised: np.ndarray, label_ids: np.ndarray, *, folds: int, seed: Optional[int]
) -> np.ndarray:
    """The held-out log-odds of `cross_fitted_lda_scores`, on features already standardised."""
    num_classes = int(label_ids.max()) + 1
    fold_of = stratified_folds(label_ids, folds, seed)
    dim = standardised.shape[1]
    grams = np.zeros((folds, dim, dim))
    sums = np.zeros((folds, num_classes, dim))
    counts = np.zeros((folds, num_classes))
    squared_norms = np.einsum("ij,ij->i", standardised, standardised, dtype=np.float64)
    for fold in range(folds):
        rows = standardised[fold_of == fold]
        fold_labels = label_ids[fold_of == fold]
        grams[fold] = rows.T @ rows  # float32 BLAS; accumulated in float64 across folds
        one_hot = np.eye(num_classes, dtype=np.float32)[fold_labels]
        sums[fold] = one_hot.T @ rows
        counts[fold] = np.bincount(fold_labels, minlength=num_classes)
    scores = np.zeros((standardised.shape[0], max(1, num_classes - 1)))
    for fold in range(folds):
        train = np.arange(folds) != fold
        class_counts = counts[train].sum(axis=0)
        present = class_counts > 0
        class_means = sums[train].sum(axis=0) / np.maximum(class_counts, 1)[:, None]
        total = class_counts.sum()
        scatter = grams[train].sum(axis=0) - (class_means.T * class_counts) @ class_means
        covariance = scatter / max(total - present.sum(), 1.0)
        # ||x_i - m_c(i)||^2 = ||x_i||^2 - 2 x_i . m_c(i) + ||m_c(i)||^2, without copying rows.
        in_train = fold_of != fold
        products = standardised @ class_means.T.astype(np.float32)  # (N, C)
        own = label_ids[in_train]
        residual_norms = (
            squared_norms[in_train]
            - 2 * products[in_train, own]
            + np.einsum("cd,cd->c", class_means, class_means)[own]
        )
        covariance = _ledoit_wolf(covariance, residual_norms)
        priors = np.log(np.maximum(class_counts, 1) / total)
        solved = np.linalg.inv(covariance) @ class_means.T  # (d, C): S^-1 m_c
        offsets = -0.5 * np.einsum("dc,cd->c", solved, class_means) + priors
        held_out = fold_of == fold
        discriminants = standardised[held_out] @ solved.astype(np.float32) + offsets
        discriminants[:, ~present] = -np.inf
        reference = discriminants[:, -1:] if present[-1] else discriminants.max(1, keepdims=True)
        log_odds = discriminants[:, :-1] - reference
        scores[held_out] = np.where(np.isfinite(log_odds), log_odds, -1e3)
    return scores.astype(np.float32)


def debiased_separation(
    features: np.ndarray,
    label_ids: np.ndarray,
    *,
    permutations: int = _PERMUTATIONS,
    seed: Optional[int] = 0,
) -> Optional[float]:
    """
    The class separation `sum_i lambda_i` (the eigenvalues of `S_W^-1 B`, the between-class
    scatter in the metric of the shrunk within-class covariance), measured without the noise of
    the class means, or `None` when the labels are not clearly dependent on the features.

    Every quantity is computed in one label-free metric: `S_T`, the Ledoit-Wolf shrunk total
    covariance `(1 - a) T + a mu I` of the standardised features. With `z` the features whitened
    by `S_T` and `g_c = sqrt(pi_c) (mean_c(z) - mean(z))`, the `C x C` Gram matrix `G = g g^T`
    has the eigenvalues `nu_i` of `S_T^-1 B`. Under independent labels, conditionally on the
    features (the labels a random assignment of the observed class sizes), `E[G] = tr(S_T^-1 T)
    / (N - 1) (I - u u^T)` exactly, `u = sqrt(pi)`, whatever the features' distribution: that is
    subtracted. `S_T = S_W + (1 - a) B` (population), so each `nu` maps to the within-class
    metric by `lambda = nu / (1 - (1 - a) nu)`.

    The gate is a permutation test: the debiased `tr(G)` of the labels against that of
    `permutations` random permutations of them, in the same metric; the separation is returned
    only when it exceeds the permutations' mean by `_SEPARATION_Z` of their standard deviations.
    Cost: O(N d^2 + d^3) for the metric, O(N d) per permutation.
    """
    return _debiased_separation(_standardise(features), label_ids, permutations, seed)


def _debiased_separation(
    standardised: np.ndarray, label_ids: np.ndarray, permutations: int, seed: Optional[int]
) -> Optional[float]:
    """`debiased_separation` on features already standardised."""
    num_samples = standardised.shape[0]
    num_classes = int(label_ids.max()) + 1
    counts = np.bincount(label_ids, minlength=num_classes)
    if np.any(counts == 0) or num_samples <= num_classes:
        return None
    total = (standardised.T @ standardised).astype(np.float64) / num_samples  # (d, d): T
    squared_norms = np.einsum("ij,ij->i", standardised, standardised, dtype=np.float64)
    shrunk, shrinkage = _ledoit_wolf(total, squared_norms, return_shrinkage=True)
    eigenvalues, eigenvectors = np.linalg.eigh(shrunk)
    whitening = (eigenvectors / np.sqrt(np.maximum(eigenvalues, 1e-12))).astype(np.float32)
    whitened = standardised @ whitening  # (N, d): z, mean 0
    # tr(S_T^-1 T) / (N - 1): the null expectation of each nonzero eigenvalue direction of G.
    noise = float(np.einsum("ij,ij->", whitened, whitened, dtype=np.float64))
    noise /= num_samples * (num_samples - 1)
    priors = counts / num_samples
    rng = np.random.default_rng(seed)
    # The labels and their permutations as one (N, (1 + permutations) C) indicator matrix: the
    # class sums of every labelling in one pass over the whitened features.
    labellings = [label_ids] + [rng.permutation(label_ids) for _ in range(permutations)]
    indicators = np.zeros((num_samples, len(labellings) * num_classes), dtype=np.float32)
    for index, labels in enumerate(labellings):
        indicators[np.arange(num_samples), index * num_classes + labels] = 1.0
    sums = (whitened.T @ indicators).T.reshape(len(labellings), num_classes, -1)  # (L, C, d)
    scaled = np.sqrt(priors)[None, :, None] * (sums / counts[None, :, None])  # (L, C, d): g
    grams = np.einsum("lcd,led->lce", scaled, scaled, dtype=np.float64)  # (L, C, C): G
    traces = np.einsum("lcc->l", grams) - (num_classes - 1) * noise
    observed, debiased, null = grams[0], float(traces[0]), traces[1:]
    if permutations < 2 or debiased <= null.mean() + _SEPARATION_Z * null.std(ddof=1):
        return None
    root = np.sqrt(priors)
    complement = np.eye(num_classes) - np.outer(root, root)
    nus = np.linalg.eigvalsh(observed - noise * complement)[::-1][: num_classes - 1]
    nus = np.clip(nus, 0.0, None)
    # nu < 1 / (1 - a) in the population; a noisy nu at the limit is a very large separation.
    lambdas = nus / np.maximum(1.0 - (1.0 - shrinkage) * nus, 1e-6)
    return float(lambdas.sum())


def _ledoit_wolf(covariance: np.ndarray, squared_norms: np.ndarray, return_shrinkage: bool = False):
    """
    Ledoit & Wolf (2004) shrinkage of `covariance` towards `mu I`, given the squared norms of
    the residuals it was computed from.
    """
    num_samples = squared_norms.shape[0]
    dim = covariance.shape[0]
    mu = np.trace(covariance) / dim
    distance = np.sum((covariance - mu * np.eye(dim)) ** 2)
    # sum_i ||r_i r_i^T - S||_F^2 / n^2 = (sum_i ||r_i||^4 / n - ||S||_F^2) / n
    spread = (np.mean(squared_norms**2) - np.sum(covariance**2)) / num_samples
    shrinkage = 0.0 if distance <= 0 else float(np.clip(spread / distance, 0.0, 1.0))
    shrunk = (1.0 - shrinkage) * covariance + shrinkage * mu * np.eye(dim)
    return (shrunk, shrinkage) if return_shrinkage else shrunk
