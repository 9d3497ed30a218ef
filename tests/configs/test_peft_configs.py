"""
The parameter-efficient cells (issue #15): `<task>_bert_bitfit`, `<task>_bert_lora` and
`<task>_elmo_bitfit` for the paper's seven tasks. Each is its fine-tuning cell with another
embedder mode (and LoRA's options) and the `parameter_efficient` trainer: the same reader, layers
and head, never a feature cache, BERT fine-tuning's optimizer and schedule at the larger rates
these modes want. LoRA with ELMo is refused by `cell()` with the reason.

That every one of them trains, evaluates and predicts on the fixtures is
`test_training_configs.py`'s test, which globs `training_config/`.
"""

import json
import os
import re
from pathlib import Path
from typing import Any, Dict

import pytest
from allennlp.common.params import evaluate_file

import allennlp_tune
from allennlp_tune.data.paths import REPO_ROOT

CONFIG_DIR = REPO_ROOT / "training_config"
LIBRARY = REPO_ROOT / "allennlp_tune" / "configs"
TASKS = ("conll2003", "sst2", "mnli", "sick_e", "sick_r", "mrpc", "sts_b")
CELLS = [f"{task}_bert_{mode}" for task in TASKS for mode in ("bitfit", "lora")] + [
    f"{task}_elmo_bitfit" for task in TASKS
]
DEFAULT_LR = {"bitfit": 3e-3, "lora": 1.5e-3}


def evaluate(path: Path, **ext_vars: str) -> Dict[str, Any]:
    """The config as a user without any other TUNE_* variable gets it."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("TUNE_")}
    env.update({name: "" for name in allennlp_tune.config_vars.CONFIG_VARS})
    env.update(ext_vars)
    return json.loads(evaluate_file(str(path), ext_vars=env))


def only_embedder(config: Dict[str, Any]) -> Dict[str, Any]:
    (embedder,) = config["model"]["text_field_embedder"]["token_embedders"].values()
    return embedder


def without_embedders(model: Dict[str, Any]) -> Dict[str, Any]:
    return {key: value for key, value in model.items() if key != "text_field_embedder"}


def test_the_cells_are_the_seven_tasks_in_each_mode():
    found = sorted(
        path.stem
        for path in CONFIG_DIR.glob("*.jsonnet")
        if path.stem.endswith(("_bitfit", "_lora"))
    )
    assert found == sorted(CELLS)
    # LoRA adapts transformer layers: no ELMo cell.
    assert not list(CONFIG_DIR.glob("*_elmo_lora*.jsonnet"))


@pytest.mark.parametrize("name", CELLS)
def test_a_cell_is_its_fine_tuning_cell_with_another_mode(name: str):
    # The feature cache switched on explicitly: it must still stay off outside feature extraction.
    config = evaluate(CONFIG_DIR / f"{name}.jsonnet", TUNE_FEATURE_CACHE="true")
    mode = name.rpartition("_")[2]
    ft = evaluate(CONFIG_DIR / f"{name.rpartition('_')[0]}_ft.jsonnet")

    embedder = only_embedder(config)
    assert embedder["mode"] == mode
    assert "feature_cache" not in embedder
    if mode == "lora":
        assert embedder["lora"] == {"r": 8, "alpha": 16, "dropout": 0.1}
    else:
        assert "lora" not in embedder
    # Reader, layers and head of the fine-tuning cell: only the embedder's mode (and LoRA's
    # options) differ.
    assert {key: value for key, value in embedder.items() if key not in ("mode", "lora")} == {
        key: value for key, value in only_embedder(ft).items() if key != "mode"
    }
    assert only_embedder(ft)["mode"] == "fine_tuning"
    assert without_embedders(config["model"]) == without_embedders(ft["model"])
    for key in ("dataset_reader", "train_data_path", "validation_data_path", "data_loader"):
        assert config.get(key) == ft.get(key), key
    if "_bert_" in name:
        assert embedder["layers"] == "top"  # [CLS] / the first wordpiece, as BERT fine-tuning

    trainer = config["trainer"]
    assert trainer["num_epochs"] == 5
    assert trainer["validation_metric"] == ft["trainer"]["validation_metric"]
    assert trainer["optimizer"] == {
        "type": "adamw",
        "lr": DEFAULT_LR[mode],
        "weight_decay": 0.01,
        "parameter_groups": [[["bias", "LayerNorm\\.weight"], {"weight_decay": 0.0}]],
    }
    assert trainer["learning_rate_scheduler"] == {
        "type": "slanted_triangular",
        "cut_frac": 0.1,
        "ratio": 1000,
    }
    assert trainer["grad_norm"] == 1.0 and trainer["run_confidence_checks"] is False
    # No gradual unfreezing (the ELMo SST-2 / NER fine-tuning cells'): only the cost is recorded.
    assert trainer["callbacks"] == [{"type": "tune_cost"}]


def test_the_rate_and_epochs_are_overridable():
    config = evaluate(CONFIG_DIR / "sick_e_bert_lora.jsonnet", TUNE_LR="4e-4", TUNE_EPOCHS="10")
    assert config["trainer"]["optimizer"]["lr"] == 4e-4
    assert config["trainer"]["num_epochs"] == 10
    bitfit = evaluate(CONFIG_DIR / "sts_b_elmo_bitfit.jsonnet", TUNE_LR="1e-4")
    assert bitfit["trainer"]["optimizer"]["lr"] == 1e-4


def cell_text(task: str, encoder: str, mode: str) -> str:
    return f'(import "{LIBRARY / "experiment.libsonnet"}").cell("{task}", "{encoder}", "{mode}")'


def test_lora_with_elmo_is_refused_with_the_reason(tmp_path):
    path = tmp_path / "elmo_lora.jsonnet"
    path.write_text(cell_text("sick_e", "elmo", "lora"), encoding="utf-8")
    with pytest.raises(RuntimeError, match="mode lora adapts a transformer's attention") as error:
        evaluate(path)
    assert "use bitfit (ELMo's bias terms train) or ft with elmo" in str(error.value)


def test_an_unknown_mode_lists_the_modes(tmp_path):
    path = tmp_path / "adapter.jsonnet"
    path.write_text(cell_text("sick_e", "bert", "adapter"), encoding="utf-8")
    with pytest.raises(
        RuntimeError, match=re.escape("mode must be fe, ft, sf, bitfit, lora, topK or bottomK")
    ):
        evaluate(path)
