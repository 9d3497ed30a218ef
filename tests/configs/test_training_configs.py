"""
Every config in `training_config/` trains one epoch on the fixtures (tiny BERT, tiny ELMo, a few
rows of every task), then `allennlp evaluate` and `allennlp predict` run on its archive. Configs
are discovered by globbing, so a new config is tested without touching this file. Everything
runs in this process (AllenNLP's `main` with an argv), which saves the 8 s start-up of a
subprocess per command; one test below runs the real command line as a user does.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
import torch
from allennlp.commands import main as allennlp_main
from allennlp.common import Params

import allennlp_tune  # noqa: F401  (registers the components, sets the ext var defaults)
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT

CONFIG_DIR = REPO_ROOT / "training_config"
CONFIGS = sorted(CONFIG_DIR.glob("*.jsonnet"))
DISTRIBUTED_CONFIGS = sorted((CONFIG_DIR / "distributed").glob("*.jsonnet"))

# One natural JSON line per task, as a user would send to `allennlp predict`.
PREDICT_INPUTS = {
    "conll2003": {"tokens": ["EU", "rejects", "German", "call", "."]},
    "sst2": {"sentence": "a charming and funny film"},
    "cola": {"sentence": "the cat sat on the mat"},
    "pair": {"premise": "A man is playing a guitar", "hypothesis": "A man is playing music"},
}
REGRESSION_TASKS = ("sick_r", "sts_b")


def task_of(config: Path) -> str:
    name = config.stem
    for task in ("conll2003", "sst2", "mnli", "sick_e", "sick_r", "mrpc", "sts_b", "cola"):
        if name.startswith(task + "_"):
            return task
    raise AssertionError(f"{config.name} does not follow <task>_<encoder>_<mode>[_<variant>]")


def fixture_ext_vars(config: Path, cache_dir: Path) -> Dict[str, str]:
    """The ext vars that turn a real-run config into a fixture run."""
    cased = task_of(config) == "conll2003"
    return {
        "TUNE_DATA_DIR": str(FIXTURE_DATA_DIR),
        "TUNE_BERT_MODEL": str(FIXTURE_MODELS_DIR / ("bert-cased" if cased else "bert-uncased")),
        "TUNE_ELMO_OPTIONS": str(FIXTURE_MODELS_DIR / "elmo" / "options.json"),
        "TUNE_ELMO_WEIGHTS": str(FIXTURE_MODELS_DIR / "elmo" / "weights.hdf5"),
        # Stack-then-finetune gets one frozen and one fine-tuning epoch, the others one epoch.
        "TUNE_EPOCHS": "2" if config.stem.endswith("_sf") else "1",
        "TUNE_FROZEN_EPOCHS": "1",
        "TUNE_BATCH_SIZE": "4",
        "TUNE_FEATURE_CACHE_DIR": str(cache_dir),
        "TUNE_CUDA_DEVICES": "[-1, -1]",  # the distributed variants: two CPU processes (gloo)
    }


def run_allennlp(monkeypatch, *argv: str):
    monkeypatch.setattr(sys, "argv", ["allennlp", *argv])
    return allennlp_main(prog="allennlp")


def check_prediction(task: str, output: Dict) -> None:
    if task == "conll2003":
        assert len(output["tags"]) == len(PREDICT_INPUTS["conll2003"]["tokens"]), output
    elif task in REGRESSION_TASKS:
        assert isinstance(output["score"], float), output
    else:
        assert isinstance(output["label"], str) and output["label"], output
        probabilities = output["probabilities"]  # {label: probability}, whatever the model
        assert output["label"] in probabilities, output
        assert abs(sum(probabilities.values()) - 1.0) < 1e-4, output


@pytest.mark.parametrize(
    "config",
    CONFIGS + DISTRIBUTED_CONFIGS,
    ids=[c.stem for c in CONFIGS] + [f"distributed/{c.stem}" for c in DISTRIBUTED_CONFIGS],
)
def test_config_trains_evaluates_and_predicts(config: Path, tmp_path, monkeypatch):
    if config.stem.endswith("_lora") and importlib.util.find_spec("peft") is None:
        pytest.skip("peft (allennlp-tune[lora]) is not installed; it needs torch >= 1.13")
    torch.set_num_threads(1)  # tiny models: intra-op threads only add overhead
    for name, value in fixture_ext_vars(config, tmp_path / "cache").items():
        monkeypatch.setenv(name, value)
    task = task_of(config)
    params = Params.from_file(str(config))
    metric = params["trainer"]["validation_metric"].lstrip("+-")
    epochs = params["trainer"]["num_epochs"]
    assert epochs == (2 if config.stem.endswith("_sf") else 1)

    out = tmp_path / "run"
    run_allennlp(monkeypatch, "train", str(config), "-s", str(out))
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epoch"] == epochs - 1
    if config.stem.endswith("_sf"):  # epoch 0 frozen, epoch 1 fine-tunes every group
        phases = [json.loads(line) for line in (out / "adaptation.jsonl").read_text().splitlines()]
        assert phases[0]["trainable_groups"] == 0 and phases[-1]["trainable_groups"] > 0
    if config in DISTRIBUTED_CONFIGS:
        assert "world size 2 initialized" in (out / "out_worker1.log").read_text()
    if config.stem.endswith(("_bitfit", "_lora")):  # part of the encoder trains, not all of it
        cost = json.loads((out / "cost.json").read_text())  # the tune_cost callback's
        assert 0 < cost["encoder_trainable_params"] < cost["encoder_params"], cost
    assert f"best_validation_{metric}" in metrics, sorted(metrics)
    archive = out / "model.tar.gz"

    evaluation = tmp_path / "evaluation.json"
    validation = params["validation_data_path"]
    run_allennlp(
        monkeypatch, "evaluate", str(archive), validation, "--output-file", str(evaluation)
    )
    assert metric in json.loads(evaluation.read_text())

    inputs = tmp_path / "inputs.jsonl"
    line = PREDICT_INPUTS.get(task, PREDICT_INPUTS["pair"])
    inputs.write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n")
    predictions = tmp_path / "predictions.jsonl"
    run_allennlp(
        monkeypatch,
        "predict",
        str(archive),
        str(inputs),
        "--silent",
        "--output-file",
        str(predictions),
    )
    outputs = [json.loads(row) for row in predictions.read_text().splitlines()]
    assert len(outputs) == 2
    for output in outputs:
        check_prediction(task, output)


def test_the_grid_is_complete():
    names = {config.stem for config in CONFIGS}
    tasks = ("conll2003", "sst2", "mnli", "sick_e", "sick_r", "mrpc", "sts_b")
    for task in tasks:
        for encoder in ("elmo", "bert"):
            for mode in ("fe", "ft", "sf"):
                assert f"{task}_{encoder}_{mode}" in names
        # Issue 15's parameter-efficient modes: bitfit for both encoders, lora for BERT only
        # (LoRA adapts transformer layers). 54 cells before, 75 with these 21.
        assert f"{task}_elmo_bitfit" in names
        assert f"{task}_bert_bitfit" in names
        assert f"{task}_bert_lora" in names
        assert f"{task}_elmo_lora" not in names
    for task in ("sick_e", "sick_r", "sts_b", "mrpc"):
        assert f"{task}_elmo_ft_no_biattn" in names  # Table 3
        assert f"{task}_bert_fe_separate" in names  # Table 4
    for variant in ("fe_crf", "ft_crf", "ft_bilstm_crf"):  # Table 5, beside fe and ft
        assert f"conll2003_elmo_{variant}" in names
    # The 42 cells of the paper's grid, 11 ablations and CoLA's ft cell (54), and the 21
    # bitfit / lora cells of issue 15.
    assert len(names) == 54 + 21


@pytest.mark.parametrize(
    "config",
    CONFIGS + DISTRIBUTED_CONFIGS,
    ids=[c.stem for c in CONFIGS] + [f"distributed/{c.stem}" for c in DISTRIBUTED_CONFIGS],
)
def test_every_trainer_records_its_cost_after_its_own_callbacks(config: Path):
    callbacks = real_run_defaults(str(config.relative_to(CONFIG_DIR)))["trainer"]["callbacks"]
    assert callbacks[-1] == {"type": "tune_cost"}
    assert [c["type"] for c in callbacks].count("tune_cost") == 1


def real_run_defaults(config: str) -> Dict:
    """The config as a user without any TUNE_* variable gets it."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("TUNE_")}
    env.update({name: "" for name in allennlp_tune.config_vars.CONFIG_VARS})
    from allennlp.common.params import evaluate_file

    return json.loads(evaluate_file(str(CONFIG_DIR / config), ext_vars=env))


def test_defaults_are_the_papers_real_setting():
    ner = real_run_defaults("conll2003_bert_ft.jsonnet")
    assert ner["model"]["text_field_embedder"]["token_embedders"]["tokens"]["model_name"] == (
        "bert-base-cased"
    )
    sick = real_run_defaults("sick_e_bert_fe.jsonnet")
    embedder = sick["model"]["text_field_embedder"]["token_embedders"]["tokens"]
    assert embedder["model_name"] == "bert-base-uncased"
    assert embedder["mode"] == "feature_extraction" and embedder["layers"] == "all"
    # The width is the model's to read off its embedder (768 for bert-base), not the config's.
    assert "input_size" not in sick["model"]["encoder"]
    assert sick["dataset_reader"]["pair_encoding"] == "joint"
    elmo = real_run_defaults("sst2_elmo_ft.jsonnet")
    embedder = elmo["model"]["text_field_embedder"]["token_embedders"]["elmo_chars"]
    assert embedder["weight_file"].startswith("https://") and "5.5B" in embedder["weight_file"]
    assert elmo["trainer"]["optimizer"]["decay"] == 0.4
    assert elmo["trainer"]["callbacks"] == [{"type": "gradual_unfreezing"}, {"type": "tune_cost"}]
    assert elmo["model"]["pooling"] == "max"
    assert real_run_defaults("sick_e_elmo_ft.jsonnet")["trainer"]["callbacks"] == [
        {"type": "tune_cost"}
    ]
    bert_ft = real_run_defaults("sts_b_bert_ft.jsonnet")
    assert bert_ft["trainer"]["optimizer"]["type"] == "adamw"
    assert bert_ft["trainer"]["learning_rate_scheduler"]["type"] == "slanted_triangular"
    assert bert_ft["model"]["regression"] is True
    assert bert_ft["trainer"]["validation_metric"] == "+pearson"
    assert bert_ft["trainer"]["cuda_device"] == -1


def test_ext_vars_override_the_defaults(monkeypatch):
    monkeypatch.setenv("TUNE_LR", "3e-5")
    monkeypatch.setenv("TUNE_EPOCHS", "7")
    monkeypatch.setenv("TUNE_POOLING", "mean")
    monkeypatch.setenv("TUNE_SEED", "5")
    params = Params.from_file(str(CONFIG_DIR / "mrpc_bert_ft.jsonnet")).as_dict()
    assert params["trainer"]["optimizer"]["lr"] == 3e-5
    assert params["trainer"]["num_epochs"] == 7
    assert params["model"]["pooling"] == "mean"
    assert params["random_seed"] == params["pytorch_seed"] == 5


def test_bad_boolean_ext_var_names_the_variable(monkeypatch):
    monkeypatch.setenv("TUNE_FEATURE_CACHE", "maybe")
    with pytest.raises(Exception, match="TUNE_FEATURE_CACHE is 'maybe'; expected true or false"):
        Params.from_file(str(CONFIG_DIR / "sick_e_bert_fe.jsonnet"))


def test_sick_e_elmo_ft_from_the_command_line_with_only_data_and_elmo_vars(tmp_path):
    """The issue's example, as a user types it; the ELMo size is read off the options file."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("TUNE_")}
    env.update(
        TUNE_DATA_DIR=str(FIXTURE_DATA_DIR),
        TUNE_ELMO_OPTIONS=str(FIXTURE_MODELS_DIR / "elmo" / "options.json"),
        TUNE_ELMO_WEIGHTS=str(FIXTURE_MODELS_DIR / "elmo" / "weights.hdf5"),
    )
    command: List[str] = [sys.executable, "-m", "allennlp", "train"]
    command += ["training_config/sick_e_elmo_ft.jsonnet", "--include-package", "allennlp_tune"]
    command += ["-s", str(tmp_path / "out")]
    result = subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["epoch"] == 4  # the real default, 5 epochs
    assert 0.0 <= metrics["best_validation_accuracy"] <= 1.0
