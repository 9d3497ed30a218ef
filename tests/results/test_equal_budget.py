"""scripts/equal_budget.sh, a thin caller of `tune-compare --budget`: the command it would run
(--dry-run), not real searches; and the default search spaces against the shipped configs."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from allennlp_tune.experiments.budget import mode_space, parse_spaces
from allennlp_tune.experiments.search import check_config

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "equal_budget.sh"
BIN = str(Path(sys.executable).parent)


def call(*args, **env):
    command = ["bash", str(SCRIPT), "--dry-run", *args]
    environment = {**os.environ, "BIN": BIN, "ENCODER_MODEL": "/models/encoder", **env}
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=environment)


def option_values(command, option):
    return [command[k + 1] for k, word in enumerate(command) if word == option]


def test_one_tune_compare_with_the_budget_and_the_seeds(tmp_path):
    completed = call(
        "--modes", "fe ft", "--results", str(tmp_path), "mrpc", "6", "4",
        EXT_VARS="TUNE_CUDA_DEVICE=0", MAX_INSTANCES="500",
        SPACE_FT="TUNE_LR=1e-5:1e-4:log  TUNE_EPOCHS=2:4",
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    [command] = [shlex.split(line) for line in completed.stdout.splitlines()]
    assert command[1:3] == ["tune-compare", "mrpc"]
    assert option_values(command, "--encoder") == ["/models/encoder"]
    assert option_values(command, "--encoder-label") == ["bert"]  # mrpc_bert_<mode> runs
    assert option_values(command, "--budget") == ["6"]
    at = command.index("--seeds")
    assert command[at + 1 : at + 5] == ["1", "2", "3", "4"] and command[at + 5] == "--results-dir"
    assert command[command.index("--modes") + 1 : command.index("--modes") + 3] == ["fe", "ft"]
    assert option_values(command, "--results-dir") == [str(tmp_path)]
    assert option_values(command, "--ext-var") == ["TUNE_MAX_INSTANCES=500", "TUNE_CUDA_DEVICE=0"]
    # The space as tune-compare's --space takes it.
    [space] = option_values(command, "--space")
    assert parse_spaces([space], ["fe", "ft"]) == {
        "ft": ("TUNE_LR=1e-5:1e-4:log", "TUNE_EPOCHS=2:4")
    }


def test_bad_arguments_say_how_to_call_it():
    for args in (["sick_e", "3"], ["sick_e", "x", "3"], ["--nope", "sick_e", "3", "3"]):
        completed = call(*args)
        assert completed.returncode == 2 and "equal_budget.sh" in completed.stderr
    completed = call("--modes", "fe", "no_such_task", "3", "3")
    assert completed.returncode == 2 and "does not exist" in completed.stderr
    completed = call("--modes", "fe", "mrpc", "2", "3", EXT_VARS="TUNE_CUDA_DEVICE")
    assert completed.returncode == 2
    assert "EXT_VARS word 'TUNE_CUDA_DEVICE' is not NAME=VALUE" in completed.stderr


@pytest.mark.parametrize("mode", ["fe", "ft", "sf", "bitfit", "lora"])
def test_each_searched_ext_var_changes_the_config(mode):
    """tune-search's own check on every default space: a variable the config does not read
    would search nothing."""
    config = ROOT / "training_config" / f"sts_b_bert_{mode}.jsonnet"
    metric, higher = check_config(config, mode_space(mode, "bert"), {"TUNE_SEED": "0"})
    assert metric == "pearson" and higher
