"""
Issue #20's speed switches through a shipped config, as a user sets them: TUNE_AUTOCAST,
TUNE_COMPILE, TUNE_STATIC_SHAPES and TUNE_FUSED_ADAM (`allennlp_tune/configs/trainers.libsonnet`,
`fast_path`). `sick_e_bert_ft` trains one epoch on the fixtures (tiny BERT, a few SICK rows) with
and without them, in this process (AllenNLP's `main` with an argv). On the CPU the switches must
not change what is learnt: static shapes pad with masked positions and ignored rows, fused AdamW
is AdamW up to rounding, CUDA-graph compilation falls back to the eager model, and bfloat16
autocast only rounds.
"""

import json
import math
import os
import shutil
from pathlib import Path
from typing import Dict

import pytest
import torch
from allennlp.common import cached_transformers
from allennlp.common.params import evaluate_file
from allennlp.training.callbacks import TrainerCallback

import allennlp_tune
from allennlp_tune.data.paths import FIXTURE_MODELS_DIR, REPO_ROOT
from allennlp_tune.testing.torch_support import fused_adamw_on_cpu
from tests.configs.test_training_configs import fixture_ext_vars, run_allennlp

CONFIG = REPO_ROOT / "training_config" / "sick_e_bert_ft.jsonnet"
SWITCHES = ("TUNE_AUTOCAST", "TUNE_COMPILE", "TUNE_STATIC_SHAPES", "TUNE_FUSED_ADAM")
ALL_ON = {
    "TUNE_AUTOCAST": "bfloat16",
    "TUNE_COMPILE": "reduce-overhead",
    "TUNE_STATIC_SHAPES": "1",
    "TUNE_FUSED_ADAM": "1",
}

needs_fused = pytest.mark.skipif(
    not fused_adamw_on_cpu(), reason=f"torch {torch.__version__} has no fused AdamW on the CPU"
)

INTERRUPT = {"armed": False, "epochs_restored": None}


@TrainerCallback.register("fast_path_interrupt_for_test", exist_ok=True)
class InterruptForTest(TrainerCallback):
    """Records how many completed epochs the trainer restored from a checkpoint (`--recover`),
    and, when armed, stops training in epoch 1's `on_epoch`, after epoch 0's checkpoint, as a
    crash would."""

    def on_start(self, trainer, is_primary=True, **kwargs):
        INTERRUPT["epochs_restored"] = trainer._start_after_epochs_completed

    def on_epoch(self, trainer, metrics, epoch, is_primary=True, **kwargs):
        if INTERRUPT["armed"] and epoch == 1:
            raise RuntimeError("interrupted for the test")


@pytest.fixture(scope="module")
def fixture_vars(tmp_path_factory) -> Dict[str, str]:
    """The ext vars of a fixture run of sick_e_bert_ft, with the fixture BERT's dropout off.

    Dropout draws one random number per element, so longer (padded) batches get other masks
    and another run: comparing static shapes with the plain config needs a training pass that
    is the same function of the real tokens. 8 training and 4 validation rows in batches of 3:
    the last batches are filled up."""
    root = tmp_path_factory.mktemp("fixture_vars")
    bert = root / "bert-uncased"
    shutil.copytree(FIXTURE_MODELS_DIR / "bert-uncased", bert)
    config = json.loads((bert / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (bert / "config.json").write_text(json.dumps(config))
    return {
        **fixture_ext_vars(CONFIG, root / "cache"),
        "TUNE_BERT_MODEL": str(bert),
        "TUNE_DROPOUT": "0",  # the head's
        "TUNE_BATCH_SIZE": "3",
    }


def train(
    fixture_vars: Dict[str, str], tmp_path: Path, monkeypatch, name: str, *extra: str, **switches
) -> Dict:
    """`allennlp train` of sick_e_bert_ft on the fixtures with `switches`; its metrics.json."""
    torch.set_num_threads(1)  # tiny model: intra-op threads only add overhead
    # Every run loads the encoder from disk, as `allennlp train` in a new process does. A copy
    # from AllenNLP's in-process cache skips the random draws that loading makes (transformers
    # 4.20, the stock lane), so the head would get other initial weights after the first run.
    cached_transformers._clear_caches()
    for var, value in fixture_vars.items():
        monkeypatch.setenv(var, value)
    for var in SWITCHES:
        monkeypatch.setenv(var, switches.get(var, ""))
    for var, value in switches.items():
        monkeypatch.setenv(var, value)
    out = tmp_path / name
    run_allennlp(monkeypatch, "train", str(CONFIG), "-s", str(out), *extra)
    return json.loads((out / "metrics.json").read_text())


def learnt(metrics: Dict) -> Dict[str, float]:
    """The losses and scores of a run, without its timings, memory and epoch counts."""
    return {
        key: value
        for key, value in metrics.items()
        if key.startswith(("training_", "validation_", "best_validation_"))
        and isinstance(value, float)
        and not any(word in key for word in ("duration", "memory", "MB", "epoch"))
    }


@pytest.fixture(scope="module")
def baseline(fixture_vars, tmp_path_factory) -> Dict:
    """The run without any switch: `gradient_descent` and AllenNLP's `adamw`, as before."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        tmp_path = tmp_path_factory.mktemp("baseline")
        metrics = train(fixture_vars, tmp_path, monkeypatch, "run")
        config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert "type" not in config["trainer"] and config["trainer"]["optimizer"]["type"] == "adamw"
    assert "collate_fn" not in config["data_loader"]
    scores = learnt(metrics)
    assert {"training_loss", "validation_loss", "best_validation_accuracy"} <= set(scores)
    return scores


def written_config(tmp_path: Path, name: str = "run") -> Dict:
    return json.loads((tmp_path / name / "config.json").read_text())


@needs_fused
def test_static_shapes_and_fused_adamw_learn_what_the_plain_config_does(
    fixture_vars, baseline, tmp_path, monkeypatch
):
    metrics = train(
        fixture_vars, tmp_path, monkeypatch, "run", TUNE_STATIC_SHAPES="1", TUNE_FUSED_ADAM="1"
    )
    config = written_config(tmp_path)
    assert config["trainer"]["type"] == "tune_gradient_descent"
    assert config["trainer"]["optimizer"]["type"] == "tune_adamw"
    assert config["trainer"]["optimizer"]["fused"] is True
    # Every batch is filled to the batch size (3), lengths padded to multiples of 8.
    assert config["data_loader"]["collate_fn"] == {"type": "static_shapes", "rows": 3}
    scores = learnt(metrics)
    assert scores.keys() == baseline.keys()
    for key, value in baseline.items():
        assert scores[key] == pytest.approx(value, rel=1e-4, abs=1e-5), key


def test_cuda_graph_compilation_on_the_cpu_trains_the_eager_model(
    fixture_vars, baseline, tmp_path, monkeypatch
):
    metrics = train(fixture_vars, tmp_path, monkeypatch, "run", TUNE_COMPILE="reduce-overhead")
    config = written_config(tmp_path)
    assert config["trainer"]["type"] == "tune_gradient_descent"
    assert config["trainer"]["compile"] == {"mode": "reduce-overhead"}
    assert config["trainer"]["optimizer"]["type"] == "adamw"  # only what was asked for
    log = (tmp_path / "run" / "out.log").read_text()
    # torch >= 2.1: CUDA graphs need a CUDA device; torch 1.12: there is no torch.compile.
    reason = "captures CUDA graphs" if hasattr(torch, "compiler") else "has no torch.compile"
    assert reason in log and "the model runs eagerly" in log, log[-3000:]
    # The eager model is the plain config's model: the same numbers, exactly.
    assert learnt(metrics) == baseline


def test_bfloat16_autocast_trains_close_to_float32(fixture_vars, baseline, tmp_path, monkeypatch):
    metrics = train(fixture_vars, tmp_path, monkeypatch, "run", TUNE_AUTOCAST="bfloat16")
    config = written_config(tmp_path)
    assert config["trainer"]["type"] == "tune_gradient_descent"
    assert config["trainer"]["autocast"] == "bfloat16"
    scores = learnt(metrics)
    for key in ("training_loss", "validation_loss"):
        assert math.isfinite(scores[key]), key
        # bfloat16 keeps 8 bits of mantissa: close, not equal (a run that diverged, or that
        # skipped autocast entirely, is caught by the second check).
        assert scores[key] == pytest.approx(baseline[key], rel=0.05), key
    assert scores != baseline, "bfloat16 autocast changed nothing: was it applied?"


def test_recover_resumes_a_run_with_every_switch_on(fixture_vars, tmp_path, monkeypatch):
    # Without a fused AdamW for the CPU (torch < 2.4) the other three switches.
    switches = dict(ALL_ON) if fused_adamw_on_cpu() else {**ALL_ON, "TUNE_FUSED_ADAM": ""}
    switches["TUNE_EPOCHS"] = "2"
    # A dotted key: `{"trainer": {...}}` would replace the whole trainer.
    callbacks = [{"type": "fast_path_interrupt_for_test"}, {"type": "tune_cost"}]
    # The shipped configs validate with their shuffling training loader, which draws from the
    # RNG, and `--recover` skips the validation of the epoch it restores, so epoch 1 would get
    # other batches than in the uninterrupted run (the plain config too): validate unshuffled.
    validation_loader = {
        "batch_sampler": {"type": "bucket", "batch_size": 3, "shuffle": False},
        "collate_fn": {"type": "static_shapes", "rows": 3},
    }
    interrupt = json.dumps(
        {"trainer.callbacks": callbacks, "validation_data_loader": validation_loader}
    )
    whole = train(fixture_vars, tmp_path, monkeypatch, "whole", "-o", interrupt, **switches)
    INTERRUPT["armed"] = True
    try:
        with pytest.raises(RuntimeError, match="interrupted for the test"):
            train(fixture_vars, tmp_path, monkeypatch, "resumed", "-o", interrupt, **switches)
    finally:
        INTERRUPT["armed"] = False
    run = tmp_path / "resumed"
    assert not (run / "metrics.json").exists()
    assert (run / "metrics_epoch_0.json").exists()
    resumed = train(
        fixture_vars, tmp_path, monkeypatch, "resumed", "-o", interrupt, "--recover", **switches
    )
    assert written_config(tmp_path, "resumed")["trainer"]["type"] == "tune_gradient_descent"
    assert resumed["epoch"] == 1
    assert INTERRUPT["epochs_restored"] == 1  # epoch 0 came from its checkpoint
    # Epoch 1 starts from epoch 0's weights, optimizer state and schedule: the numbers of the
    # uninterrupted run, up to what recovering costs the plain config as well (its resumed
    # epoch 1 differs from the uninterrupted one by ~5e-5 relative, with no switch on). Where
    # autocast computes the loss itself in bfloat16 (torch 1.12 on the CPU; later versions keep
    # cross entropy in float32), such a difference can flip a loss to the neighbouring bfloat16
    # value: one step is 2**-7 relative at most.
    rel = 2**-7 if loss_is_bfloat16_under_autocast() else 1e-3
    assert learnt(resumed).keys() == learnt(whole).keys()
    for key, value in learnt(whole).items():
        assert learnt(resumed)[key] == pytest.approx(value, rel=rel, abs=1e-4), key


def loss_is_bfloat16_under_autocast() -> bool:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = torch.nn.Linear(4, 3)(torch.randn(2, 4))
        loss = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 2]))
    return loss.dtype == torch.bfloat16


UNSET = " (unset it for the config's default)"


@pytest.mark.parametrize(
    "name, value, expected",
    [
        ("TUNE_AUTOCAST", "float16", "expected one of bfloat16" + UNSET),
        ("TUNE_COMPILE", "max", "expected one of default, reduce-overhead" + UNSET),
        ("TUNE_STATIC_SHAPES", "yes", "expected true or false"),
        ("TUNE_FUSED_ADAM", "2", "expected true or false"),
    ],
)
def test_a_bad_value_stops_allennlp_train_naming_the_variable(
    name, value, expected, fixture_vars, tmp_path, monkeypatch
):
    with pytest.raises(RuntimeError) as error:
        train(fixture_vars, tmp_path, monkeypatch, "run", **{name: value})
    assert str(error.value).splitlines()[0] == f"RUNTIME ERROR: {name} is '{value}'; {expected}"
    assert not (tmp_path / "run").exists()


def render(config: str, **ext_vars: str) -> Dict:
    env = {name: value for name, value in os.environ.items() if not name.startswith("TUNE_")}
    env.update({name: "" for name in allennlp_tune.config_vars.CONFIG_VARS})
    env.update(ext_vars)
    return json.loads(evaluate_file(str(REPO_ROOT / "training_config" / config), ext_vars=env))


def test_the_switches_reach_discriminative_optimizers_and_regression_batches():
    # ELMo fine-tuning on a regression task: the inner AdamW of `discriminative` is fused, and
    # score batches get their lengths padded but no filled rows (they have no label to ignore).
    elmo = render("sick_r_elmo_ft.jsonnet", **ALL_ON)
    assert elmo["trainer"]["optimizer"]["type"] == "discriminative"
    assert elmo["trainer"]["optimizer"]["optimizer"]["type"] == "tune_adamw"
    assert elmo["trainer"]["optimizer"]["optimizer"]["fused"] is True
    assert elmo["data_loader"]["collate_fn"] == {"type": "static_shapes"}
    assert elmo["trainer"]["autocast"] == "bfloat16"
    plain = render("sick_r_elmo_ft.jsonnet")
    # Apart from the switches, the trainer is the plain config's.
    switched = {
        k: v for k, v in elmo["trainer"].items() if k not in ("type", "autocast", "compile")
    }
    plain["trainer"]["optimizer"]["optimizer"].update(type="tune_adamw", fused=True)
    assert switched == plain["trainer"]
    # TUNE_COMPILE=default: torch.compile's default mode; only static shapes: no other switch.
    assert render("sick_e_bert_fe.jsonnet", TUNE_COMPILE="default")["trainer"]["compile"] == {
        "mode": "default"
    }
    only_shapes = render("sick_e_bert_fe.jsonnet", TUNE_STATIC_SHAPES="true")
    assert only_shapes["trainer"]["type"] == "tune_gradient_descent"
    assert only_shapes["trainer"]["optimizer"]["type"] == "adamw"
    assert not {"autocast", "compile"} & set(only_shapes["trainer"])
    assert only_shapes["data_loader"]["collate_fn"] == {"type": "static_shapes", "rows": 32}
