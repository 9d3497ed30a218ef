"""The adaptation schedules on the real embedders (fixture BERT): weight-decay exclusions of
frozen layers, several encoders in one model, the gap rule's sign, the head's rate in phase 2."""

import copy
import importlib
import json
import os
from pathlib import Path
from typing import Any, Dict, List

import pytest
import torch
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.params import evaluate_file
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.training.callbacks import TrainerCallback
from allennlp.training.optimizers import Optimizer

import allennlp_tune
import allennlp_tune.testing  # noqa: F401  (the toy layered embedder)
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT

BERT = str(FIXTURE_MODELS_DIR / "bert-uncased")
NO_DECAY = ["bias", "LayerNorm\\.weight"]


def bert_embedder(mode: str = "feature_extraction") -> Dict[str, Any]:
    return {"type": "tune_transformer", "model_name": BERT, "mode": mode, "layers": "all"}


def build_model(token_embedders: Dict[str, Any]) -> Model:
    vocab = Vocabulary(tokens_to_add={"labels": ["0", "1"]})
    params = {
        "type": "basic_classifier",
        "text_field_embedder": {"token_embedders": copy.deepcopy(token_embedders)},
        "seq2vec_encoder": {"type": "cls_pooler", "embedding_dim": 16 * len(token_embedders)},
    }
    return Model.from_params(params=Params(params), vocab=vocab)


def build_optimizer(model: Model, **options) -> torch.optim.Optimizer:
    params = {
        "type": "discriminative",
        "decay": 0.4,
        "optimizer": {"type": "adamw", "lr": 1e-3, "weight_decay": 0.01},
        **options,
    }
    trainable = [[n, p] for n, p in model.named_parameters() if p.requires_grad]  # as AllenNLP
    return Optimizer.from_params(model_parameters=trainable, params=Params(params))


def group_of(optimizer) -> Dict[int, Dict[str, Any]]:
    return {id(p): group for group in optimizer.param_groups for p in group["params"]}


def rendered(config: str) -> Dict[str, Any]:
    """A config as a user without any TUNE_* variable gets it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNE_")}
    env.update({name: "" for name in allennlp_tune.config_vars.CONFIG_VARS})
    return json.loads(evaluate_file(str(REPO_ROOT / "training_config" / config), ext_vars=env))


# ------------------------------------------------------------------------------------------------
# 1. no_decay reaches the layers that are frozen when the optimizer is built
# ------------------------------------------------------------------------------------------------
def test_no_decay_applies_to_layers_frozen_when_the_optimizer_is_built():
    model = build_model({"tokens": bert_embedder("feature_extraction")})
    embedder = model._text_field_embedder._token_embedders["tokens"]
    assert embedder.is_frozen  # how stack-then-finetune and gradual unfreezing start
    optimizer = build_optimizer(model, no_decay=NO_DECAY)
    groups = group_of(optimizer)
    checked = {"no_decay": 0, "decay": 0}
    for name, param in model.named_parameters():
        excluded = name.endswith("bias") or "LayerNorm.weight" in name
        expected = 0.0 if excluded else 0.01
        assert groups[id(param)]["weight_decay"] == expected, name
        if not param.requires_grad:  # frozen now, unfrozen later by a callback
            checked["no_decay" if excluded else "decay"] += 1
    assert checked["no_decay"] > 10 and checked["decay"] > 10
    # Each exclusion group keeps its layer's rate.
    rates = {g.get("layer_group_name"): g["lr"] for g in optimizer.param_groups if g["params"]}
    assert rates["layer_1/no_decay"] == rates["layer_1"] == pytest.approx(rates["layer_0"] / 0.4)


def test_stack_then_finetune_configs_exclude_bias_and_layer_norm_from_weight_decay():
    for config in ("sick_e_bert_sf.jsonnet", "conll2003_bert_sf.jsonnet"):
        optimizer = rendered(config)["trainer"]["optimizer"]
        assert optimizer["type"] == "discriminative"
        assert optimizer["no_decay"] == NO_DECAY, config
        assert optimizer["optimizer"]["weight_decay"] > 0
    # the same rule as the BERT fine-tuning cells
    ft = rendered("sick_e_bert_ft.jsonnet")["trainer"]["optimizer"]["parameter_groups"]
    assert ft[0][0] == NO_DECAY and ft[0][1] == {"weight_decay": 0.0}
    # ELMo's sf cells follow its ft cells, which decay every parameter.
    for cell in ("sick_e_elmo_sf.jsonnet", "sick_e_elmo_ft.jsonnet"):
        assert "no_decay" not in rendered(cell)["trainer"]["optimizer"], cell


# ------------------------------------------------------------------------------------------------
# 2. several layered encoders in one model
# ------------------------------------------------------------------------------------------------
TWO_ENCODERS = ["_text_field_embedder.token_embedder_b", "_text_field_embedder.token_embedder_a"]


def two_encoder_config(callbacks: List[Dict[str, Any]], epochs: int) -> Dict[str, Any]:
    """Two toy layered embedders (allennlp_tune.testing) over the same words."""
    toy = {"type": "tune_toy_layered", "frozen": True}
    return {
        "dataset_reader": {
            "type": "sst2",
            "tokenizer": {"type": "whitespace"},
            "token_indexers": {"a": {"type": "single_id"}, "b": {"type": "single_id"}},
        },
        "train_data_path": str(FIXTURE_DATA_DIR / "sst-2" / "train.tsv"),
        "validation_data_path": str(FIXTURE_DATA_DIR / "sst-2" / "dev.tsv"),
        "model": {
            "type": "basic_classifier",
            # "b" is registered first: module order, not the keys' sorted order nor addresses.
            "text_field_embedder": {"token_embedders": {"b": toy, "a": dict(toy)}},
            "seq2vec_encoder": {"type": "bag_of_embeddings", "embedding_dim": 8},
        },
        "data_loader": {"batch_size": 4},
        "trainer": {
            "num_epochs": epochs,
            "optimizer": {
                "type": "discriminative",
                "decay": 0.4,
                "head_lr": 1e-2,
                "optimizer": {"type": "adam", "lr": 1e-3},
            },
            "callbacks": callbacks,
            "cuda_device": -1,
        },
    }


def test_two_encoders_each_decay_from_their_own_top_group_with_distinct_names():
    model = build_model({"b": bert_embedder(), "a": bert_embedder()})
    optimizer = build_optimizer(model)
    named = [(g["layer_group_name"], g) for g in optimizer.param_groups if g["params"]]
    names = [name for name, _ in named]
    assert len(set(names)) == len(names)  # no collision
    embedders = model._text_field_embedder._token_embedders
    groups = {id(p): g for g in optimizer.param_groups for p in g["params"]}
    order = []
    for key, path in (("b", TWO_ENCODERS[0]), ("a", TWO_ENCODERS[1])):
        layer_groups = embedders[key].layer_groups()
        depth = len(layer_groups)
        for index, (group_name, params) in enumerate(layer_groups):
            for _, param in params:
                group = groups[id(param)]
                assert group["layer_group_name"] == f"{path}.{group_name}"
                # the top group of each encoder at lr, 0.4x per group below it
                assert group["lr"] == pytest.approx(1e-3 * 0.4 ** (depth - 1 - index))
            order.append(names.index(f"{path}.{group_name}"))
    assert order == sorted(order)  # the optimizer's groups in module order: b, then a
    assert names[-1] == "head"


def test_two_encoders_unfreeze_together_and_log_distinct_names(tmp_path):
    params = two_encoder_config([{"type": "gradual_unfreezing"}], epochs=2)
    model = train_model(Params(params), str(tmp_path / "run"))
    log = [json.loads(line) for line in (tmp_path / "run" / "adaptation.jsonl").open()]
    assert [r["trainable_groups"] for r in log] == [0, 1, 2]
    top = "layer_2"
    assert log[1]["trainable_group_names"] == [f"{path}.{top}" for path in TWO_ENCODERS]
    rates = log[1]["learning_rates"]
    for path in TWO_ENCODERS:
        assert rates[f"{path}.{top}"] == pytest.approx(1e-3)
        assert rates[f"{path}.embeddings"] < rates[f"{path}.{top}"]
    for key in ("a", "b"):  # both encoders follow the schedule (2 groups after the last epoch)
        embedder = model._text_field_embedder._token_embedders[key]
        assert [ps[0][1].requires_grad for _, ps in embedder.layer_groups()] == [
            False, False, True, True,
        ]  # fmt: skip


# ------------------------------------------------------------------------------------------------
# 3. the gap rule with an explicit metric
# ------------------------------------------------------------------------------------------------
class _Tracker:
    tracked_metrics = [(1.0, "accuracy")]  # the trainer's validation_metric: "+accuracy"


class _Trainer:
    _metric_tracker = _Tracker()


# Realistic epochs around max_gap 0.05: overfitting by 0.02 to 0.1, and dev better than train.
# The gap is how far dev is worse than train: dev - train for a loss, train - dev for accuracy.
GAPS = [
    # (metric, training, validation, gap)
    ("loss", 0.30, 0.40, 0.10),
    ("loss", 0.40, 0.47, 0.07),
    ("loss", 0.40, 0.42, 0.02),  # not yet
    ("loss", 0.45, 0.40, -0.05),  # dev loss below train (dropout on in training)
    ("-loss", 0.30, 0.40, 0.10),
    ("-loss", 0.45, 0.40, -0.05),
    ("mse", 0.20, 0.28, 0.08),
    ("mse", 0.28, 0.20, -0.08),
    ("accuracy", 0.90, 0.82, 0.08),
    ("accuracy", 0.84, 0.82, 0.02),
    ("accuracy", 0.80, 0.88, -0.08),
    ("+accuracy", 0.90, 0.82, 0.08),
    ("+accuracy", 0.82, 0.90, -0.08),
]


@pytest.mark.parametrize("metric, training, validation, gap", GAPS)
def test_the_gap_rule_reads_an_explicit_metric_with_its_direction(
    monkeypatch, metric, training, validation, gap
):
    from allennlp_tune.training.callbacks.adaptation import AdaptationCallback
    from allennlp_tune.training.callbacks.stack_then_finetune import StackThenFinetune

    monkeypatch.setattr(AdaptationCallback, "on_epoch", lambda *args, **kwargs: None)
    callback = StackThenFinetune("", frozen_epochs=5, max_gap=0.05, metric=metric)
    name = metric.lstrip("+-")
    metrics = {f"training_{name}": training, f"validation_{name}": validation}
    callback.on_epoch(_Trainer(), metrics, epoch=0)
    assert metrics["adaptation_train_validation_gap"] == pytest.approx(gap)
    assert (callback.groups_for_epoch(1, 4) == 4) is (gap > 0.05)


# ------------------------------------------------------------------------------------------------
# 5. the head's rate in phase 2
# ------------------------------------------------------------------------------------------------
BATCH_RATES: List[Dict[str, float]] = []


@TrainerCallback.register("record_rates_for_fidelity", exist_ok=True)
class RecordRates(TrainerCallback):
    def on_batch(self, trainer, *args, is_training=True, **kwargs):
        if is_training:
            groups = trainer.optimizer.param_groups
            BATCH_RATES.append({g.get("layer_group_name", "?"): g["lr"] for g in groups})


def toy_config(callbacks: List[Dict[str, Any]], epochs: int, scheduler=None) -> Dict[str, Any]:
    params = two_encoder_config(callbacks + [{"type": "record_rates_for_fidelity"}], epochs)
    params["dataset_reader"]["token_indexers"] = {"tokens": {"type": "single_id"}}
    toy = {"type": "tune_toy_layered", "frozen": True}
    params["model"]["text_field_embedder"]["token_embedders"] = {"tokens": toy}
    params["model"]["seq2vec_encoder"]["embedding_dim"] = 4
    params["trainer"]["optimizer"]["decay"] = 0.5
    if scheduler:
        params["trainer"]["learning_rate_scheduler"] = scheduler
    return params


def phase_rates(tmp_path, name: str, scheduler=None, **options) -> List[Dict[str, float]]:
    callback = {"type": "stack_then_finetune", "frozen_epochs": 2, **options}
    BATCH_RATES.clear()
    train_model(Params(toy_config([callback], 4, scheduler)), str(tmp_path / name))
    assert len(BATCH_RATES) == 12  # 3 batches x 4 epochs
    return list(BATCH_RATES)


@pytest.mark.parametrize(
    "scheduler",
    [None, {"type": "slanted_triangular", "cut_frac": 0.5, "ratio": 10}],
    ids=["constant", "slanted_triangular"],
)
def test_head_lr_factor_scales_the_heads_rate_in_phase_two_only(tmp_path, scheduler):
    same = phase_rates(tmp_path, "same", scheduler)
    halved = phase_rates(tmp_path, "halved", scheduler, head_lr_factor=0.5, encoder_lr=2e-3)
    for before, after in zip(same[:6], halved[:6]):  # phase 1: the same rates
        assert after == pytest.approx(before)
    for before, after in zip(same[6:], halved[6:]):  # phase 2: half the head's rate
        assert after["head"] == pytest.approx(0.5 * before["head"])
        assert after["layer_2"] == pytest.approx(2 * before["layer_2"])  # encoder_lr 2e-3
        assert after["layer_1"] == pytest.approx(0.5 * after["layer_2"])  # ratio kept
    if scheduler is None:
        assert [r["head"] for r in halved] == pytest.approx([1e-2] * 6 + [5e-3] * 6)
    log = [json.loads(line) for line in (tmp_path / "halved" / "adaptation.jsonl").open()]
    assert log[2]["learning_rates"]["head"] < log[1]["learning_rates"]["head"]  # at the switch


def test_head_lr_factor_needs_a_positive_value():
    from allennlp_tune.training.callbacks.stack_then_finetune import StackThenFinetune

    with pytest.raises(ConfigurationError, match="head_lr_factor is 0"):
        StackThenFinetune("", head_lr_factor=0)


# ------------------------------------------------------------------------------------------------
# 4. freezing by masking: eval mode, gradient accumulation, distributed stack-then-finetune
# ------------------------------------------------------------------------------------------------
def bert_sst2_config(callbacks, epochs: int, embedder: Dict[str, Any]) -> Dict[str, Any]:
    indexer = {"type": "pretrained_transformer", "model_name": BERT}
    return {
        "dataset_reader": {
            "type": "sst2",
            "tokenizer": {"type": "pretrained_transformer", "model_name": BERT},
            "token_indexers": {"tokens": indexer},
        },
        "train_data_path": str(FIXTURE_DATA_DIR / "sst-2" / "train.tsv"),
        "validation_data_path": str(FIXTURE_DATA_DIR / "sst-2" / "dev.tsv"),
        "model": {
            "type": "basic_classifier",
            "text_field_embedder": {"token_embedders": {"tokens": embedder}},
            "seq2vec_encoder": {"type": "cls_pooler", "embedding_dim": 16},
            "dropout": 0.1,
        },
        "data_loader": {"batch_size": 4},
        "validation_data_loader": {"batch_size": 4},
        "random_seed": 5,
        "numpy_seed": 5,
        "pytorch_seed": 5,
        "trainer": {
            "num_epochs": epochs,
            "optimizer": {
                "type": "discriminative",
                "decay": 1.0,
                "head_lr": 1e-2,
                "optimizer": {"type": "adamw", "lr": 1e-3},
            },
            "callbacks": callbacks + [{"type": "record_encoder_modes"}],
            "cuda_device": -1,
        },
    }


def encoder_modes(run_dir, rank: int = 0) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / f"encoder_modes_{rank}.jsonl").open()]


def use_fidelity_callbacks(monkeypatch) -> None:
    """Registers record_encoder_modes here and in any worker started from now on (spawned
    workers get this sys.path)."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    importlib.import_module("fidelity_callbacks")


def test_masking_keeps_frozen_groups_in_eval_mode_like_requires_grad(tmp_path, monkeypatch):
    use_fidelity_callbacks(monkeypatch)

    runs = {}
    for freeze_by in ("requires_grad", "masking"):
        callback = {"type": "gradual_unfreezing", "start_groups": 1, "freeze_by": freeze_by}
        embedder = bert_embedder("fine_tuning" if freeze_by == "masking" else "feature_extraction")
        train_model(Params(bert_sst2_config([callback], 2, embedder)), str(tmp_path / freeze_by))
        runs[freeze_by] = encoder_modes(tmp_path / freeze_by)
    masking = runs["masking"]
    assert masking == runs["requires_grad"]
    top = bert_embedder_groups()[-1]
    for record in masking:  # epoch 0: the top group trains; epoch 1: the top two
        trains = bert_embedder_groups()[-1 - record["epoch"] :]
        for group, flags in record["training"].items():
            assert flags == [group in trains], (record["epoch"], group)
        assert record["graded"] == trains
    assert top in masking[0]["training"] and "embeddings" in masking[0]["training"]


def bert_embedder_groups() -> List[str]:
    model = build_model({"tokens": bert_embedder()})
    return model._text_field_embedder._token_embedders["tokens"].layer_group_names()


def test_masking_under_gradient_accumulation_trains_like_requires_grad(tmp_path):
    models = {}
    for freeze_by in ("requires_grad", "masking"):
        callback = {"type": "gradual_unfreezing", "freeze_by": freeze_by}
        params = toy_config([callback], 3)
        toy = params["model"]["text_field_embedder"]["token_embedders"]["tokens"]
        toy["frozen"] = freeze_by == "requires_grad"
        params["data_loader"] = {"batch_size": 2}  # 6 batches: 3 steps of 2 an epoch
        params["trainer"]["num_gradient_accumulation_steps"] = 2
        # plain SGD: the step is proportional to the gradient, so a wrong scale shows
        params["trainer"]["optimizer"]["optimizer"] = {"type": "sgd", "lr": 0.5}
        models[freeze_by] = train_model(Params(params), str(tmp_path / freeze_by))
    reference = dict(models["requires_grad"].named_parameters())
    changed = 0
    for name, param in models["masking"].named_parameters():
        assert torch.allclose(param, reference[name], atol=1e-6), name
        changed += "layers.2" in name  # the top layer trained in epochs 1 and 2
    assert changed == 2


def distinct(records: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [r for i, r in enumerate(records) if r not in records[:i]]


def test_distributed_stack_then_finetune_from_a_frozen_cached_start(tmp_path, monkeypatch):
    use_fidelity_callbacks(monkeypatch)
    embedder = dict(bert_embedder("feature_extraction"), feature_cache={})
    params = bert_sst2_config([{"type": "stack_then_finetune", "frozen_epochs": 1}], 2, embedder)
    train_model(Params(copy.deepcopy(params)), str(tmp_path / "single"))
    distributed = copy.deepcopy(params)
    distributed["distributed"] = {
        "cuda_devices": [-1, -1],
        "ddp_accelerator": {"type": "tune_torch"},
    }
    train_model(Params(distributed), str(tmp_path / "ddp"), include_package=["fidelity_callbacks"])

    logs = {run: [json.loads(line) for line in (tmp_path / run / "adaptation.jsonl").open()]
            for run in ("single", "ddp")}  # fmt: skip
    assert [r["trainable_groups"] for r in logs["ddp"]] == [0, 5, 5]
    assert [r["trainable_group_names"] for r in logs["ddp"]] == [
        r["trainable_group_names"] for r in logs["single"]
    ]
    assert {r["freeze_by"] for r in logs["ddp"]} == {"masking"}
    # Phase 1 in eval mode, without gradients, from the cache; phase 2 trains every group.
    expected = distinct(encoder_modes(tmp_path / "single"))
    assert [r["frozen"] for r in expected] == [True, False]
    assert expected[0]["graded"] == [] and len(expected[1]["graded"]) == 5
    assert all(flags == [False] for flags in expected[0]["training"].values())
    assert all(flags == [True] for flags in expected[1]["training"].values())
    for rank in (0, 1):
        assert distinct(encoder_modes(tmp_path / "ddp", rank)) == expected, rank
    assert any((tmp_path / "ddp" / "feature_cache").rglob("*")), "phase 1 used the cache"
    # The encoder trained in phase 2: the primary's weights after the last epoch.
    (last,) = (tmp_path / "ddp").glob("model_state_e2_*.th")  # 2 epochs completed
    trained = torch.load(last, map_location="cpu")
    pretrained = dict(build_model({"tokens": bert_embedder()}).named_parameters())
    encoder = [n for n in pretrained if ".transformer_model." in n]
    assert len(encoder) > 20
    unchanged = [n for n in encoder if torch.equal(pretrained[n], trained[n])]
    assert unchanged == [n for n in encoder if ".pooler." in n], unchanged  # the pooler is unused
