"""
What the runs cost, in the numbers the cost table and the answer show: the means come from
each run's `cost.json` (written by the `tune_cost` trainer callback), and the encoder passes, a
unit every machine shares, from the instances each epoch trained on and whether its encoder
trained.
"""

import dataclasses
import statistics
from typing import Any, Dict, List, Optional, Sequence, Tuple

from allennlp_tune.modes import block_groups
from allennlp_tune.reporting.labels import (
    NOT_AVAILABLE,
)
from allennlp_tune.rundir import (
    CONFIG_NAME,
    Run,
    read_json,
)

# The cost table: (title, cost.json key, how a mean is shown); GPU MB only where some run has it.
COST_COLUMNS = [
    ("Trainable params", "trainable_params", "params"),
    ("Stored params", "stored_params", "params"),
    ("s/epoch", "mean_epoch_seconds", "seconds"),
    ("Peak RSS MB", "peak_rss_mb", "mb"),
    ("Peak GPU MB", "peak_gpu_mb", "mb"),
    ("Archive MB", "archive_bytes", "bytes"),
]
GPU_KEY = "peak_gpu_mb"
PASSES_HEADER = "Encoder passes"
# A run "has costs" when its cost.json has what the tune_cost callback writes.
COST_MARKER = "trainable_params"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def has_costs(run: Run) -> bool:
    """
    Whether the run's `cost.json` has what the `tune_cost` callback records. A run still
    training (or killed) has one too, with the epochs so far: the cost table counts only scored
    runs (`Summary.runs_with_costs`).
    """
    return run.cost is not None and _is_number(run.cost.get(COST_MARKER))


def format_params(count: float) -> str:
    """`110.1M`, `592.4k`, `13`."""
    if count >= 1e6:
        return f"{count / 1e6:.2f}M"
    if count >= 1e3:
        return f"{count / 1e3:.1f}k"
    return f"{count:.0f}"


def _share(part: float, total: float) -> str:
    """`1.45%`, `42.0%`, `100%`; `>99.9%` for a frozen encoder that is a sliver of the model."""
    if part >= total:
        return "100%"
    share = 100.0 * part / total
    if share > 99.9:
        return ">99.9%"
    return f"{share:.2f}%" if share < 10 else f"{share:.1f}%"


def uses_feature_cache(run: Run) -> bool:
    """Whether the run's encoder had a feature cache (`feature_cache` set in its config)."""
    return any(
        key.split(".")[-1] == "feature_cache" or ".feature_cache." in key
        for key, value in (run.settings or {}).items()
        if value not in ("null", "false")
    )


def encoder_layers(run: Run) -> Optional[int]:
    """
    The number of layers of the run's encoder: `cost.json`'s `encoder_layers` (the `tune_cost`
    callback records it), else, for runs from before it did, the planner's reading of the
    encoder folder its config names (`encoder_size.transformer_size`), when that folder is
    still there.
    """
    recorded = (run.cost or {}).get("encoder_layers")
    if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded > 0:
        return recorded
    from allennlp_tune.planning.encoder_size import find_embedder, transformer_size

    embedder = find_embedder(read_json(run.path / CONFIG_NAME) or {})
    if embedder is None or "model_name" not in embedder:
        return None
    try:
        return transformer_size(str(embedder["model_name"])).num_layers
    except (OSError, ValueError, KeyError, AttributeError):  # the folder is gone or not a model
        return None


def block_pass_shares(mode: str, layers: int, prefix_cached: bool) -> Optional[Tuple[float, float]]:
    """
    What one instance of a block mode's trained epoch costs, as (forward+backward,
    forward-only) shares of a whole encoder pass (`None` for other modes). `topK` runs its K of
    the L layers forward and backward, K/L of a fwd+bwd pass, and the frozen L-K below them
    forward only, (L-K)/L of a forward pass, except in the epochs that read those from the
    feature cache (`prefix_cached`: a cached run's epochs after its first), which run none of
    them. `bottomK` tunes the lowest groups, so its backward pass runs through every layer
    above them: a whole fwd+bwd pass.
    """
    groups = block_groups(mode)
    if groups is None or layers <= 0:
        return None
    side, count = groups.split(":")
    if side != "top":
        return 1.0, 0.0
    tuned = min(int(count), layers)
    return tuned / layers, (0.0 if prefix_cached else (layers - tuned) / layers)


def encoder_passes(run: Run) -> Optional[Tuple[float, float]]:
    """
    (forward+backward, forward-only) encoder passes over training instances, from `cost.json`'s
    `epoch_instances` and `epoch_encoder_trained`: an epoch whose encoder trains counts its
    instances forward and backward, a frozen epoch forward only, and with a feature cache only
    the first frozen epoch (the later ones read the cache and run no encoder); where the run
    recorded its cache's lookups (`epoch_cache_lookups`), each frozen epoch counts the share of
    its entries the encoder computed, so a run that read a cache an earlier run filled runs no
    encoder at all, and one whose cache kept only part of its entries pays the rest every
    epoch. A block mode's
    trained epochs count the shares of `block_pass_shares` (top2 of 6 layers: a third of a
    fwd+bwd pass and two thirds of a forward one, the latter only in its first epoch with a
    cache); when its encoder's layers cannot be known (`encoder_layers`), whole passes, as
    for ft. Validation passes are not counted. `None` for a run that did not record them.
    """
    cost = run.cost or {}
    instances, trained = cost.get("epoch_instances"), cost.get("epoch_encoder_trained")
    if not isinstance(instances, list) or not isinstance(trained, list) or not instances:
        return None
    cached = uses_feature_cache(run)
    computed = computed_shares(cost, len(instances)) if cached else None
    mode = run.name.mode if run.name is not None else ""
    layers = encoder_layers(run) if block_groups(mode) is not None else None
    both = forward = 0.0
    frozen_epochs = trained_epochs = 0
    for count, encoder_trained in zip(instances, trained):
        if encoder_trained:
            shares = (
                block_pass_shares(mode, layers, cached and trained_epochs > 0) if layers else None
            )
            shares = shares or (1.0, 0.0)
            both += int(count) * shares[0]
            forward += int(count) * shares[1]
            trained_epochs += 1
            continue
        if computed is not None:
            forward += int(count) * computed[frozen_epochs + trained_epochs]
        elif not cached or frozen_epochs == 0:
            forward += int(count)
        frozen_epochs += 1
    return both, forward


def computed_shares(cost: Dict[str, Any], epochs: int) -> Optional[List[float]]:
    """Per epoch, the share of its feature-cache lookups the encoder computed (cost.json's
    `epoch_cache_lookups`: computed, read); `None` where it was not recorded for every epoch."""
    lookups = cost.get("epoch_cache_lookups")
    if not isinstance(lookups, list) or len(lookups) < epochs:
        return None
    shares = []
    for pair in lookups[:epochs]:
        if not (isinstance(pair, list) and len(pair) == 2 and all(map(_is_number, pair))):
            return None
        total = pair[0] + pair[1]
        shares.append(pair[0] / total if total > 0 else 0.0)
    return shares


def passes_to_the_end(run: Run) -> Optional[Tuple[float, float]]:
    """
    `encoder_passes` of the run as if it had trained every epoch its config planned
    (`trainer.num_epochs`): the epochs it did not reach repeat its last one (so a cached frozen
    epoch adds nothing, a fine-tuning epoch its instances forward and backward). What a pruned
    trial would have cost had it not been pruned: an upper bound where early stopping would
    have ended it sooner. A run that trained its planned epochs, or whose plan is unknown,
    counts as trained.
    """
    cost = run.cost or {}
    instances, trained = cost.get("epoch_instances"), cost.get("epoch_encoder_trained")
    planned = (run.settings or {}).get("trainer.num_epochs")
    try:
        missing = int(str(planned)) - len(instances)
    except (TypeError, ValueError):
        missing = 0
    if missing <= 0 or not isinstance(trained, list) or not instances or not trained:
        return encoder_passes(run)
    extended = {
        **cost,
        "epoch_instances": list(instances) + [instances[-1]] * missing,
        "epoch_encoder_trained": list(trained) + [trained[-1]] * missing,
    }
    lookups = cost.get("epoch_cache_lookups")
    if isinstance(lookups, list) and lookups:
        extended["epoch_cache_lookups"] = list(lookups) + [lookups[-1]] * missing
    return encoder_passes(dataclasses.replace(run, cost=extended))


# A backward pass through the encoder costs about two forward ones (Kaplan et al., 2020: 6N
# against 2N flops per token), so a fwd+bwd pass counts as three forward passes where passes
# of both kinds are added up (the answer's cheapest arm, the decision's cost).
BACKWARD_FORWARDS = 2.0


def forward_equivalents(passes: Optional[Tuple[float, float]]) -> Optional[float]:
    """(fwd+bwd, fwd) passes as forward passes: fwd+bwd x (1 + `BACKWARD_FORWARDS`) + fwd."""
    if passes is None:
        return None
    both, forward = passes
    return both * (1.0 + BACKWARD_FORWARDS) + forward


def head_forward_equivalents(run: Run, wordpieces_per_instance: Optional[float]) -> Optional[float]:
    """
    The task network's work over the run's training epochs, in forward passes of the encoder
    over one instance (`forward_equivalents`' unit), so that a frozen arm whose head is a
    BiLSTM is not counted as free. Per instance and epoch the head (every parameter outside the
    encoder: `total_params - encoder_params` of `cost.json`) runs forward and backward, three
    times its forward flops, once per token (BCN, ESIM, a tagger: about as many positions as the
    encoder's wordpieces, which cancel) or once per instance (`head_runs_per: "instance"`, a
    head on pooled vectors: against `wordpieces_per_instance` encoder positions). Each
    parameter counts about 2 flops per position, as each of the encoder's dense parameters
    (`encoder_dense_params`, else `encoder_params`) does. A flop count: it leaves out what a
    BiLSTM's sequential steps cost beyond their flops (on this CPU a cached BCN epoch took
    about as long as an ft epoch, docs/results/NOTEBOOK.md section 14), and AllenNLP's per-batch
    work.
    `None` without those fields, or for a per-instance head without `wordpieces_per_instance`.
    """
    cost = run.cost or {}
    total, encoder = cost.get("total_params"), cost.get("encoder_params")
    dense = cost.get("encoder_dense_params")
    dense = dense if _is_number(dense) and dense > 0 else encoder
    instances = cost.get("epoch_instances")
    if not (_is_number(total) and _is_number(dense) and dense > 0 and isinstance(instances, list)):
        return None
    per_instance = (1.0 + BACKWARD_FORWARDS) * max(0.0, float(total) - float(encoder)) / dense
    if cost.get("head_runs_per") == "instance":
        if not wordpieces_per_instance:
            return None
        per_instance /= wordpieces_per_instance
    return per_instance * sum(int(count) for count in instances if _is_number(count))


def compute_equivalents(run: Run, wordpieces_per_instance: Optional[float]) -> Optional[float]:
    """What the run's training cost in the budget's compute unit (`tune-compare --budget-unit
    compute`): its encoder passes as forward passes (`forward_equivalents`) plus its head's
    work (`head_forward_equivalents`); `None` where either is unknown."""
    encoder = forward_equivalents(encoder_passes(run))
    head = head_forward_equivalents(run, wordpieces_per_instance)
    if encoder is None or head is None:
        return None
    return encoder + head


def mean_encoder_passes(runs: Sequence[Run]) -> Optional[Tuple[float, float]]:
    """The mean of `encoder_passes` over the runs that recorded it (pass the scored runs)."""
    counted = [p for p in map(encoder_passes, runs) if p is not None]
    if not counted:
        return None
    return (
        statistics.fmean(both for both, _ in counted),
        statistics.fmean(forward for _, forward in counted),
    )


def passes_text(passes: Optional[Tuple[float, float]]) -> str:
    """`12.0k fwd+bwd, 4.0k fwd`, `n/a`."""
    if passes is None:
        return NOT_AVAILABLE
    both, forward = passes
    return f"{format_params(both)} fwd+bwd, {format_params(forward)} fwd"
