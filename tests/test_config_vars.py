"""
Every `TUNE_*` value a config reads is checked where `common/vars.libsonnet` reads it: a bad one
is an error naming the variable, its value and what it expects, instead of a Jsonnet parse error
naming nothing (TUNE_LR=abc), "best.th does not exist" (TUNE_EPOCHS=0) or a ZeroDivisionError
(TUNE_BATCH_SIZE=0).
"""

import json
import os
import sys
from typing import Dict

import pytest
from allennlp.commands import main as allennlp_main
from allennlp.common.params import evaluate_file

import allennlp_tune
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT

CONFIG_DIR = REPO_ROOT / "training_config"


def evaluate(config: str, **ext_vars: str) -> Dict:
    """The config as `allennlp train` evaluates it: the environment, unset TUNE_* as ""."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("TUNE_")}
    env.update({name: "" for name in allennlp_tune.config_vars.CONFIG_VARS})
    env.update(ext_vars)
    return json.loads(evaluate_file(str(CONFIG_DIR / config), ext_vars=env))


@pytest.mark.parametrize(
    "name, value, expected",
    [
        ("TUNE_LR", "abc", "a number > 0"),
        ("TUNE_LR", "0", "a number > 0"),
        ("TUNE_SEED", "abc", "an integer >= 0 and <= 4294967295"),
        ("TUNE_SEED", "1.5", "an integer >= 0 and <= 4294967295"),
        ("TUNE_EPOCHS", "0", "an integer >= 1"),
        ("TUNE_EPOCHS", "-1", "an integer >= 1"),
        ("TUNE_BATCH_SIZE", "0", "an integer >= 1"),
        ("TUNE_BATCH_SIZE", "32x", "an integer >= 1"),
        ("TUNE_DROPOUT", "1", "a number >= 0 and < 1"),
        ("TUNE_WEIGHT_DECAY", "-0.1", "a number >= 0"),
        ("TUNE_HEAD_LR", "1e-3e", "a number > 0"),
        ("TUNE_MAX_INSTANCES", "0", "an integer >= 1"),
        ("TUNE_CUDA_DEVICE", "cuda:0", "an integer >= -1"),
    ],
)
def test_a_bad_value_is_named_with_what_is_expected(name, value, expected):
    # sick_e_bert_sf reads every one of these (stack-then-finetune has a head learning rate).
    with pytest.raises(RuntimeError) as error:
        evaluate("sick_e_bert_sf.jsonnet", **{name: value})
    first_line = str(error.value).splitlines()[0]
    assert first_line == (
        f"RUNTIME ERROR: {name} is '{value}'; expected {expected} (unset it for the config's "
        "default)"
    )


def test_good_values_and_unset_variables_still_work():
    config = evaluate(
        "sick_e_bert_sf.jsonnet",
        TUNE_LR=" 2E-5 ",
        TUNE_SEED="7",
        TUNE_EPOCHS="1e1",
        TUNE_BATCH_SIZE="8",
        TUNE_DROPOUT="0",
        TUNE_CUDA_DEVICE="-1",
    )
    assert config["trainer"]["optimizer"]["optimizer"]["lr"] == 2e-5
    assert config["random_seed"] == config["pytorch_seed"] == 7
    assert config["trainer"]["num_epochs"] == 10
    assert config["data_loader"]["batch_sampler"]["batch_size"] == 8
    defaults = evaluate("sick_e_bert_sf.jsonnet")
    assert defaults["random_seed"] == 13370 and defaults["trainer"]["cuda_device"] == -1


def test_the_distributed_variant_checks_its_devices_and_port():
    config = "distributed/sick_e_bert_ft.jsonnet"
    distributed = evaluate(config, TUNE_CUDA_DEVICES="[-1, -1]", TUNE_PRIMARY_PORT="29500")
    assert distributed["distributed"]["cuda_devices"] == [-1, -1]
    assert distributed["distributed"]["primary_port"] == 29500
    assert evaluate(config)["distributed"]["cuda_devices"] == [0, 1]
    with pytest.raises(RuntimeError, match=r"TUNE_CUDA_DEVICES is '0,1'; expected a JSON list"):
        evaluate(config, TUNE_CUDA_DEVICES="0,1")
    with pytest.raises(RuntimeError, match=r"TUNE_PRIMARY_PORT is '70000'; expected an integer"):
        evaluate(config, TUNE_PRIMARY_PORT="70000")


def test_allennlp_train_stops_on_a_zero_batch_size_naming_it(tmp_path, monkeypatch):
    """The command a user runs: the error names TUNE_BATCH_SIZE before anything is built."""
    monkeypatch.setenv("TUNE_DATA_DIR", str(FIXTURE_DATA_DIR))
    monkeypatch.setenv("TUNE_BERT_MODEL", str(FIXTURE_MODELS_DIR / "bert-uncased"))
    monkeypatch.setenv("TUNE_BATCH_SIZE", "0")
    out = tmp_path / "out"
    argv = ["allennlp", "train", str(CONFIG_DIR / "sick_e_bert_ft.jsonnet"), "-s", str(out)]
    monkeypatch.setattr(sys, "argv", [*argv, "--include-package", "allennlp_tune"])
    with pytest.raises(RuntimeError, match=r"TUNE_BATCH_SIZE is '0'; expected an integer >= 1"):
        allennlp_main(prog="allennlp")
    assert not out.exists()


def test_tune_grid_records_which_variable_was_bad(tmp_path):
    """A grid run that fails on a bad --ext-var says so in tune_run.json and the report."""
    from allennlp_tune.experiments.grid import run_grid

    ext_vars = {"TUNE_DATA_DIR": str(FIXTURE_DATA_DIR), "TUNE_EPOCHS": "0"}
    config = CONFIG_DIR / "sick_e_bert_fe.jsonnet"
    result = run_grid([config], [1], tmp_path, ext_vars=ext_vars, progress=False)
    [failed] = result.failed
    info = json.loads((failed / "tune_run.json").read_text())
    assert info["error"] == (
        "exit code 1: RuntimeError: RUNTIME ERROR: TUNE_EPOCHS is '0'; expected an integer "
        ">= 1 (unset it for the config's default)"
    )
