"""discriminative, gradual_unfreezing and stack_then_finetune on a toy layered embedder.

The toy embedder (allennlp_tune.testing) has 4 groups: embeddings, layer_0, layer_1, layer_2.
"""

import copy
import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
import torch
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.training.callbacks import TrainerCallback
from allennlp.training.optimizers import Optimizer

import allennlp_tune  # noqa: F401
import allennlp_tune.testing  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_DATA_DIR

GROUPS = ["embeddings", "layer_0", "layer_1", "layer_2"]
TRAINED_GROUPS: List[List[str]] = []  # filled by the recording callback, one entry per epoch
LEARNING_RATES: List[Dict[str, float]] = []  # and the groups' rates, one entry per batch


@TrainerCallback.register("record_trained_groups", exist_ok=True)
class RecordTrainedGroups(TrainerCallback):
    """Records, per epoch, the encoder groups whose parameters received a gradient."""

    def on_epoch_start(self, trainer) -> None:
        self.seen: set = set()

    def on_batch(
        self,
        trainer,
        batch_inputs,
        batch_outputs,
        batch_metrics,
        epoch,
        batch_number,
        is_training,
        is_primary=True,
        batch_grad_norm=None,
        **kwargs,
    ):
        if not is_training:
            return
        LEARNING_RATES.append(
            {g.get("layer_group_name", "default"): g["lr"] for g in trainer.optimizer.param_groups}
        )
        embedder = trainer.model._text_field_embedder._token_embedders["tokens"]
        for name, params in embedder.layer_groups():
            if any(p.grad is not None and p.grad.abs().sum() > 0 for _, p in params):
                self.seen.add(name)

    def on_start(self, trainer, is_primary=True, **kwargs):
        super().on_start(trainer, is_primary=is_primary, **kwargs)
        self.on_epoch_start(trainer)

    def on_epoch(self, trainer, metrics, epoch, is_primary=True, **kwargs):
        TRAINED_GROUPS.append(sorted(self.seen, key=GROUPS.index))
        self.on_epoch_start(trainer)


INTERRUPT = {"after_epoch": None}


@TrainerCallback.register("interrupt_for_test", exist_ok=True)
class InterruptForTest(TrainerCallback):
    """Stops training after a given epoch's checkpoint, as a crash would (when armed)."""

    def on_epoch(self, trainer, metrics, epoch, is_primary=True, **kwargs):
        # on_epoch runs before the epoch's checkpoint: stop in the next epoch's on_epoch.
        if INTERRUPT["after_epoch"] is not None and epoch == INTERRUPT["after_epoch"] + 1:
            raise RuntimeError("interrupted for the test")


def config(
    callbacks: List[Dict[str, Any]],
    epochs: int = 5,
    frozen: bool = True,
    optimizer: Dict[str, Any] = None,
) -> Dict[str, Any]:
    return {
        "dataset_reader": {"type": "sst2", "tokenizer": {"type": "whitespace"}},
        "train_data_path": str(FIXTURE_DATA_DIR / "sst-2" / "train.tsv"),
        "validation_data_path": str(FIXTURE_DATA_DIR / "sst-2" / "dev.tsv"),
        "model": {
            "type": "basic_classifier",
            "text_field_embedder": {
                "token_embedders": {"tokens": {"type": "tune_toy_layered", "frozen": frozen}}
            },
            "seq2vec_encoder": {"type": "bag_of_embeddings", "embedding_dim": 4},
        },
        "data_loader": {"batch_size": 4, "shuffle": True},
        # A shuffling validation loader draws from the RNG, and AllenNLP's --recover skips
        # validation of the epochs it replays: only an unshuffled one recovers exactly.
        "validation_data_loader": {"batch_size": 4, "shuffle": False},
        "random_seed": 3,
        "numpy_seed": 3,
        "pytorch_seed": 3,
        "trainer": {
            "num_epochs": epochs,
            "optimizer": optimizer
            or {"type": "discriminative", "decay": 0.5, "optimizer": {"type": "adam", "lr": 0.01}},
            "callbacks": callbacks + [{"type": "record_trained_groups"}],
            "cuda_device": -1,
        },
    }


def train(tmp_path: Path, params: Dict[str, Any], name: str = "run", **kwargs) -> Model:
    TRAINED_GROUPS.clear()
    LEARNING_RATES.clear()
    return train_model(Params(copy.deepcopy(params)), str(tmp_path / name), **kwargs)


def adaptation_log(run_dir: Path) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "adaptation.jsonl").read_text().splitlines()]


def build_model(frozen: bool = True) -> Model:
    vocab = Vocabulary(tokens_to_add={"tokens": ["a", "b", "c"], "labels": ["0", "1"]})
    params = Params(copy.deepcopy(config([], frozen=frozen)["model"]))
    return Model.from_params(params=params, vocab=vocab)


def build_optimizer(model: Model, **options) -> torch.optim.Optimizer:
    params = {"type": "discriminative", "optimizer": {"type": "adam", "lr": 0.01}, **options}
    trainable = [[n, p] for n, p in model.named_parameters() if p.requires_grad]
    return Optimizer.from_params(model_parameters=trainable, params=Params(params))


# ------------------------------------------------------------------------------------------------
# discriminative
# ------------------------------------------------------------------------------------------------
def test_each_parameter_gets_lr_times_decay_to_its_depth_and_the_head_its_own_rate():
    model = build_model(frozen=True)
    optimizer = build_optimizer(model, decay=0.4, head_lr=0.5)
    rate = {id(p): g["lr"] for g in optimizer.param_groups for p in g["params"]}
    embedder = model._text_field_embedder._token_embedders["tokens"]
    groups = embedder.layer_groups()
    for index, (name, params) in enumerate(groups):
        depth = len(groups) - 1 - index  # the top group has depth 0
        for _, param in params:
            assert rate[id(param)] == pytest.approx(0.01 * 0.4**depth), name
    encoder = {id(p) for _, ps in groups for _, p in ps}
    head = [(n, p) for n, p in model.named_parameters() if id(p) not in encoder]
    assert head and all(rate[id(p)] == 0.5 for _, p in head)  # the scalar mix is head
    assert any("scalar_mix" in n for n, _ in head)
    # Frozen encoder layers are in the optimizer, ready to be unfrozen; every parameter once.
    assert sorted(rate) == sorted(id(p) for p in model.parameters())
    assert sum(len(g["params"]) for g in optimizer.param_groups) == len(list(model.parameters()))


def test_no_decay_splits_groups_and_regex_groups_work_for_plain_embedders():
    model = build_model(frozen=False)
    optimizer = build_optimizer(
        model, no_decay=["bias"], optimizer={"type": "adamw", "lr": 0.1, "weight_decay": 0.01}
    )
    names = {id(p): n for n, p in model.named_parameters()}
    for group in optimizer.param_groups:
        for param in group["params"]:
            assert (group["weight_decay"] == 0.0) == names[id(param)].endswith("bias")
    regex = build_optimizer(model, decay=0.5, groups=[["embeddings"], ["layers\\.0\\."]])
    rate = {names[id(p)]: g["lr"] for g in regex.param_groups for p in g["params"]}
    assert rate["_text_field_embedder.token_embedder_tokens.embeddings.weight"] == 0.005
    assert rate["_text_field_embedder.token_embedder_tokens.layers.0.weight"] == 0.01
    assert rate["_text_field_embedder.token_embedder_tokens.layers.2.weight"] == 0.01  # head


@pytest.mark.parametrize(
    "options, message",
    [
        ({"optimizer": {"type": "adam"}}, "optimizer.optimizer.lr is required"),
        ({"decay": 1.5}, "decay is 1.5"),
        ({"optimizer": {"type": "adam", "lr": 1, "parameter_groups": []}}, "parameter_groups"),
        ({"groups": [["no_such_parameter"]]}, "groups[0]"),
    ],
)
def test_discriminative_config_errors(options, message):
    with pytest.raises(ConfigurationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        build_optimizer(build_model(frozen=False), **options)


@pytest.mark.parametrize(
    "scheduler",
    [
        {"type": "slanted_triangular", "cut_frac": 0.5},
        {"type": "linear_with_warmup", "warmup_steps": 2},
    ],
    ids=lambda scheduler: scheduler["type"],
)
def test_discriminative_composes_with_schedulers(tmp_path, scheduler):
    params = config([], epochs=2, frozen=False)
    params["trainer"]["learning_rate_scheduler"] = scheduler
    train(tmp_path, params)
    assert len(LEARNING_RATES) == 6  # 3 batches x 2 epochs
    tops = [rates["layer_2"] for rates in LEARNING_RATES]
    assert len(set(tops)) > 2  # the schedule moved the rates
    for rates in LEARNING_RATES:  # and scaled every group from its own rate
        assert rates["layer_1"] == pytest.approx(rates["layer_2"] * 0.5)
        assert rates["embeddings"] == pytest.approx(rates["layer_2"] * 0.125)
        assert rates["head"] == pytest.approx(rates["layer_2"])


# ------------------------------------------------------------------------------------------------
# gradual_unfreezing
# ------------------------------------------------------------------------------------------------
def test_gradual_unfreezing_trains_one_more_group_each_epoch(tmp_path):
    train(tmp_path, config([{"type": "gradual_unfreezing"}], epochs=6))
    expected = [GROUPS[len(GROUPS) - min(e, 4) :] if e else [] for e in range(6)]
    assert TRAINED_GROUPS == expected
    log = adaptation_log(tmp_path / "run")
    assert [r["trainable_groups"] for r in log] == [0, 1, 2, 3, 4, 4, 4]  # epochs 0..6
    assert log[1]["trainable_group_names"] == ["layer_2"]
    assert log[1]["learning_rates"]["layer_2"] == 0.01
    assert log[1]["learning_rates"]["embeddings"] == pytest.approx(0.01 * 0.5**3)
    epoch_1 = json.loads((tmp_path / "run" / "metrics_epoch_1.json").read_text())
    assert epoch_1["adaptation_trainable_groups"] == 1  # what trained in epoch 1
    assert epoch_1["adaptation_lr_layer_1"] == pytest.approx(0.005)


def test_masking_gives_the_same_trainable_sets(tmp_path):
    callback = {"type": "gradual_unfreezing", "freeze_by": "masking"}
    train(tmp_path, config([callback], epochs=5, frozen=False))
    assert TRAINED_GROUPS == [[], ["layer_2"], ["layer_1", "layer_2"], GROUPS[1:], GROUPS]
    with pytest.raises(ConfigurationError, match="set its mode to 'fine_tuning'"):
        train(tmp_path, config([callback], epochs=1, frozen=True), name="frozen")


def test_frozen_layers_outside_the_optimizer_are_refused(tmp_path):
    params = config(
        [{"type": "gradual_unfreezing"}], epochs=1, optimizer={"type": "adam", "lr": 0.01}
    )
    with pytest.raises(ConfigurationError, match="not in the optimizer"):
        train(tmp_path, params)


def test_recovered_run_matches_an_uninterrupted_one(tmp_path):
    callbacks = [{"type": "gradual_unfreezing"}, {"type": "interrupt_for_test"}]
    params = config(callbacks, epochs=4)
    uninterrupted = train(tmp_path, params, name="whole")
    whole_log = adaptation_log(tmp_path / "whole")
    INTERRUPT["after_epoch"] = 1
    try:
        with pytest.raises(RuntimeError, match="interrupted"):
            train(tmp_path, params, name="resumed")
    finally:
        INTERRUPT["after_epoch"] = None
    recovered = train(tmp_path, params, name="resumed", recover=True)
    resumed_log = adaptation_log(tmp_path / "resumed")
    # The resumed run picks up at epoch 2 with the set an uninterrupted run had then.
    assert resumed_log[-3:] == whole_log[-3:]
    assert resumed_log[-3]["epoch"] == 2 and resumed_log[-3]["trainable_groups"] == 2
    for (name, a), (_, b) in zip(uninterrupted.named_parameters(), recovered.named_parameters()):
        assert torch.allclose(a, b, atol=1e-6), name
        assert a.requires_grad == b.requires_grad, name


# ------------------------------------------------------------------------------------------------
# stack_then_finetune
# ------------------------------------------------------------------------------------------------
def test_stack_then_finetune_switches_at_the_configured_epoch(tmp_path):
    callback = {"type": "stack_then_finetune", "frozen_epochs": 2, "encoder_lr": 0.002}
    train(tmp_path, config([callback], epochs=4))
    assert TRAINED_GROUPS == [[], [], GROUPS, GROUPS]
    log = adaptation_log(tmp_path / "run")
    assert [r["epoch"] for r in log] == [0, 1, 2, 3, 4]  # one line per epoch, the switch too
    rates = log[2]["learning_rates"]  # logged after the switch set the encoder's rate
    assert rates["layer_2"] == pytest.approx(0.002)
    assert rates["layer_1"] == pytest.approx(0.001)  # decay 0.5 kept below the new top rate
    assert rates["head"] == 0.01


def test_stack_then_finetune_gap_rule_ends_phase_one_early(tmp_path):
    early = {"type": "stack_then_finetune", "frozen_epochs": 10, "max_gap": -1e9, "metric": "loss"}
    train(tmp_path, config([early], epochs=3), name="early")
    assert TRAINED_GROUPS == [[], GROUPS, GROUPS]
    late = dict(early, max_gap=1e9, frozen_epochs=2)
    train(tmp_path, config([late], epochs=3), name="late")
    assert TRAINED_GROUPS == [[], [], GROUPS]
    metrics = json.loads((tmp_path / "late" / "metrics_epoch_0.json").read_text())
    assert "training_loss" in metrics


# ------------------------------------------------------------------------------------------------
# distributed
# ------------------------------------------------------------------------------------------------
def test_two_process_distributed_run_has_the_single_process_trainable_sets(tmp_path):
    params = config([{"type": "gradual_unfreezing"}], epochs=3, frozen=False)
    params["trainer"]["callbacks"] = [{"type": "gradual_unfreezing"}]  # only importable ones
    train(tmp_path, params, name="single")
    distributed = copy.deepcopy(params)
    distributed["distributed"] = {"cuda_devices": [-1, -1]}
    train(tmp_path, distributed, name="ddp", include_package=["allennlp_tune.testing"])
    single, ddp = adaptation_log(tmp_path / "single"), adaptation_log(tmp_path / "ddp")
    assert [r["freeze_by"] for r in single] == ["requires_grad"] * 4
    assert [r["freeze_by"] for r in ddp] == ["masking"] * 4
    assert [r["trainable_group_names"] for r in ddp] == [r["trainable_group_names"] for r in single]
    assert [r["trainable_groups"] for r in ddp] == [0, 1, 2, 3]
    assert json.loads((tmp_path / "ddp" / "metrics.json").read_text())["epoch"] == 2


def head_rates() -> List[float]:
    return [rates["head"] for rates in LEARNING_RATES]


SLANTED = {"type": "slanted_triangular", "cut_frac": 0.5, "ratio": 10}


def test_stack_then_finetune_restarts_the_schedule_over_the_remaining_epochs(tmp_path):
    # Reference: the same schedule configured for a 2-epoch run (3 batches an epoch).
    reference = config([], epochs=2, frozen=False)
    reference["trainer"]["learning_rate_scheduler"] = SLANTED
    train(tmp_path, reference, name="reference")
    fresh = head_rates()
    assert len(fresh) == 6 and len(set(fresh)) > 3

    callback = {"type": "stack_then_finetune", "frozen_epochs": 2}
    params = config([callback], epochs=4)
    params["trainer"]["learning_rate_scheduler"] = SLANTED
    train(tmp_path, params, name="restarted")
    rates = head_rates()
    assert TRAINED_GROUPS == [[], [], GROUPS, GROUPS]
    assert rates[6:] == pytest.approx(fresh)  # phase 2 runs the whole schedule again
    assert rates[6] == pytest.approx(fresh[0]) and rates[6] < rates[5]  # back to the warmup start

    params["trainer"]["callbacks"][0]["restart_schedule"] = False
    train(tmp_path, params, name="continued")
    continued = head_rates()
    assert continued[:6] == pytest.approx(rates[:6])  # phase 1 is the same either way
    assert continued[6:] != pytest.approx(fresh)  # without restart it goes on decaying
    assert continued[-1] < continued[6]


def test_recovery_after_the_switch_keeps_the_restarted_schedule(tmp_path):
    callbacks = [
        {"type": "stack_then_finetune", "frozen_epochs": 2},
        {"type": "interrupt_for_test"},
    ]
    params = config(callbacks, epochs=4)
    params["trainer"]["learning_rate_scheduler"] = SLANTED
    uninterrupted = train(tmp_path, params, name="whole")
    whole_rates = head_rates()
    INTERRUPT["after_epoch"] = 2  # the checkpoint after epoch 2, one epoch into phase 2
    try:
        with pytest.raises(RuntimeError, match="interrupted"):
            train(tmp_path, params, name="resumed")
    finally:
        INTERRUPT["after_epoch"] = None
    recovered = train(tmp_path, params, name="resumed", recover=True)
    assert head_rates() == pytest.approx(whole_rates[9:])  # epoch 3 replays the same rates
    for (name, a), (_, b) in zip(uninterrupted.named_parameters(), recovered.named_parameters()):
        assert torch.allclose(a, b, atol=1e-6), name


def test_restart_schedule_refuses_a_schedule_it_cannot_restart(tmp_path):
    params = config([{"type": "stack_then_finetune", "frozen_epochs": 1}], epochs=2)
    params["trainer"]["learning_rate_scheduler"] = {"type": "reduce_on_plateau"}
    with pytest.raises(ConfigurationError, match="cannot restart a .*restart_schedule: false"):
        train(tmp_path, params)


class _Tracker:
    def __init__(self, sign: int, name: str) -> None:
        self.tracked_metrics = [(sign, name)]


class _Trainer:
    def __init__(self, sign: int, name: str) -> None:
        self._metric_tracker = _Tracker(sign, name)


@pytest.mark.parametrize(
    "validation_metric, metrics, switches",
    [
        ((1, "accuracy"), {"training_accuracy": 0.90, "validation_accuracy": 0.80}, True),
        ((1, "accuracy"), {"training_accuracy": 0.82, "validation_accuracy": 0.80}, False),
        ((1, "accuracy"), {"training_accuracy": 0.70, "validation_accuracy": 0.80}, False),
        # Lower is better: the gap is validation loss above training loss.
        ((-1, "loss"), {"training_loss": 0.20, "validation_loss": 0.50}, True),
        ((-1, "loss"), {"training_loss": 0.50, "validation_loss": 0.52}, False),
    ],
)
def test_gap_rule_reads_the_validation_metric_with_its_sign(
    monkeypatch, validation_metric, metrics, switches
):
    from allennlp_tune.training.callbacks.adaptation import AdaptationCallback
    from allennlp_tune.training.callbacks.stack_then_finetune import StackThenFinetune

    monkeypatch.setattr(AdaptationCallback, "on_epoch", lambda *args, **kwargs: None)
    callback = StackThenFinetune(serialization_dir="", frozen_epochs=5, max_gap=0.05)
    callback.on_epoch(_Trainer(*validation_metric), dict(metrics), epoch=0)
    assert (callback.groups_for_epoch(1, 4) == 4) is switches
    assert callback.groups_for_epoch(5, 4) == 4  # frozen_epochs ends phase 1 in any case
