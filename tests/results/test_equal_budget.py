"""scripts/equal_budget.sh: the commands it would run (--dry-run), not real searches."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from allennlp_tune.experiments.configs import parse_ext_vars
from allennlp_tune.experiments.search import SearchParam, check_config, parse_settings

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "equal_budget.sh"
BIN = str(Path(sys.executable).parent)


def dry_run(*args, results, **env):
    completed = subprocess.run(
        ["bash", str(SCRIPT), "--dry-run", "--results", str(results), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "BIN": BIN, "ENCODER_MODEL": "/models/encoder", **env},
    )
    assert completed.returncode == 0, completed.stderr
    return [shlex.split(line) for line in completed.stdout.splitlines() if line[:1] != "#"]


def option_values(command, option):
    return [command[k + 1] for k, word in enumerate(command) if word == option]


def test_every_mode_gets_the_same_trials_then_n_seeds_into_one_folder(tmp_path):
    commands = dry_run("--modes", "fe ft sf", "sick_e", "6", "4", results=tmp_path)
    searches = [c for c in commands if c[1:2] == ["tune-search"]]
    grids = [c for c in commands if c[1:2] == ["tune-grid"]]
    reports = [c for c in commands if c[1:2] == ["tune-report"]]
    assert len(searches) == len(grids) == 3 and len(reports) == 1
    configs = [f"training_config/sick_e_bert_{mode}.jsonnet" for mode in ("fe", "ft", "sf")]
    assert [c[2] for c in searches] == configs
    assert {tuple(option_values(c, "--trials")) for c in searches} == {("6",)}
    params = {c[2].split("_")[-1][:2]: option_values(c, "--param") for c in searches}
    assert [p.split("=")[0] for p in params["fe"]] == ["TUNE_LR", "TUNE_DROPOUT", "TUNE_PATIENCE"]
    assert [p.split("=")[0] for p in params["ft"]] == ["TUNE_LR", "TUNE_EPOCHS"]
    assert [p.split("=")[0] for p in params["sf"]] == ["TUNE_LR", "TUNE_EPOCHS"]
    # The search seed is not one of the reported seeds.
    assert {tuple(option_values(c, "--seed")) for c in searches} == {("0",)}
    for grid in grids:
        seeds = grid[grid.index("--seeds") + 1 : grid.index("--seeds") + 5]
        assert seeds == ["1", "2", "3", "4"]
        assert option_values(grid, "--results-dir") == [str(tmp_path / "seeds")]
        assert "TUNE_BERT_MODEL=/models/encoder" in option_values(grid, "--ext-var")
    assert reports[0][2:] == [str(tmp_path / "seeds")]
    assert all(option_values(c, "--results-dir") == [str(tmp_path / "search")] for c in searches)


def test_the_best_params_of_each_search_reach_its_seeds(tmp_path):
    study = tmp_path / "search" / "mrpc_bert_ft"
    study.mkdir(parents=True)
    best = {"ext_vars": {"TUNE_LR": "7.8e-05", "TUNE_EPOCHS": "5"}, "value": 0.8}
    (study / "best_params.json").write_text(json.dumps(best))
    commands = dry_run("--modes", "fe ft", "mrpc", "3", "2", results=tmp_path, MAX_INSTANCES="500")
    grids = {c[2]: option_values(c, "--ext-var") for c in commands if c[1:2] == ["tune-grid"]}
    ft = grids["training_config/mrpc_bert_ft.jsonnet"]
    assert "TUNE_LR=7.8e-05" in ft and "TUNE_EPOCHS=5" in ft and "TUNE_MAX_INSTANCES=500" in ft
    fe = grids["training_config/mrpc_bert_fe.jsonnet"]
    assert any("best_params.json" in value for value in fe)  # not searched yet: a placeholder


def test_an_interrupted_search_only_gets_the_trials_it_lacks(tmp_path):
    optuna = pytest.importorskip("optuna")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = f"sqlite:///{tmp_path / 'search' / 'optuna.db'}"
    (tmp_path / "search").mkdir()
    distribution = optuna.distributions.FloatDistribution(1e-5, 1e-3, log=True)
    for name, finished in (("sick_r_bert_fe", 2), ("sick_r_bert_ft", 5)):
        study = optuna.create_study(storage=storage, study_name=name, direction="maximize")
        for k in range(finished):
            study.add_trial(
                optuna.trial.create_trial(
                    params={"TUNE_LR": 1e-4}, distributions={"TUNE_LR": distribution}, value=k
                )
            )
    commands = dry_run("--modes", "fe ft sf", "sick_r", "5", "3", results=tmp_path)
    trials = {c[2]: option_values(c, "--trials") for c in commands if c[1:2] == ["tune-search"]}
    assert trials == {
        "training_config/sick_r_bert_fe.jsonnet": ["3"],
        "training_config/sick_r_bert_sf.jsonnet": ["5"],
    }  # ft has its 5 already


@pytest.mark.parametrize("mode", ["fe", "ft", "sf", "bitfit", "lora"])
def test_each_searched_ext_var_changes_the_config(tmp_path, mode):
    """tune-search's own check: a --param the config does not read would search nothing."""
    config = ROOT / "training_config" / f"sts_b_bert_{mode}.jsonnet"
    if not config.is_file():
        pytest.skip(f"{config.name} does not exist yet")
    commands = dry_run("--modes", mode, "sts_b", "2", "1", results=tmp_path)
    (search,) = [c for c in commands if c[1:2] == ["tune-search"]]
    params = [SearchParam.parse(spec) for spec in option_values(search, "--param")]
    ext_vars = parse_ext_vars(option_values(search, "--ext-var"))
    metric, higher = check_config(config, params, {**ext_vars, "TUNE_SEED": "0"})
    assert metric == "pearson" and higher


def test_bad_arguments_say_how_to_call_it(tmp_path):
    env = {**os.environ, "BIN": BIN, "ENCODER_MODEL": "/m"}

    def call(*args):
        command = ["bash", str(SCRIPT), "--dry-run", *args]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)

    for args in (["sick_e", "3"], ["sick_e", "x", "3"], ["--nope", "sick_e", "3", "3"]):
        completed = call(*args)
        assert completed.returncode == 2
        assert "equal_budget.sh" in completed.stderr
    completed = call("--modes", "fe", "no_such_task", "3", "3")
    assert completed.returncode == 2 and "does not exist" in completed.stderr


def test_ext_vars_reach_every_trial_and_seed_and_bad_words_are_refused(tmp_path):
    commands = dry_run(
        "--modes", "fe ft", "mrpc", "2", "3", results=tmp_path,
        EXT_VARS="TUNE_CUDA_DEVICE=0 TUNE_POOLING=mean",
    )  # fmt: skip
    runs = [c for c in commands if c[1:2] in (["tune-search"], ["tune-grid"])]
    assert len(runs) == 4
    for command in runs:
        given = option_values(command, "--ext-var")
        assert "TUNE_CUDA_DEVICE=0" in given and "TUNE_POOLING=mean" in given, command
    env = {**os.environ, "BIN": BIN, "ENCODER_MODEL": "/m", "EXT_VARS": "TUNE_CUDA_DEVICE"}
    completed = subprocess.run(
        ["bash", str(SCRIPT), "--dry-run", "--modes", "fe", "mrpc", "2", "3"],
        cwd=ROOT, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert completed.returncode == 2
    assert "EXT_VARS word 'TUNE_CUDA_DEVICE' is not NAME=VALUE" in completed.stderr


def test_start_settings_reach_their_modes_search_as_enqueue(tmp_path):
    commands = dry_run(
        "--modes", "fe ft", "mrpc", "3", "2", results=tmp_path,
        START_FT="TUNE_LR=1e-4  TUNE_EPOCHS=5 ; TUNE_LR=2e-5 TUNE_EPOCHS=3;",
    )  # fmt: skip
    searches = {c[2].split("_")[-1][:2]: c for c in commands if c[1:2] == ["tune-search"]}
    assert option_values(searches["ft"], "--enqueue") == [
        "TUNE_LR=1e-4 TUNE_EPOCHS=5",
        "TUNE_LR=2e-5 TUNE_EPOCHS=3",
    ]
    assert option_values(searches["fe"], "--enqueue") == []
    # What the script passes, tune-search accepts for that mode's search space.
    params = [SearchParam.parse(p) for p in option_values(searches["ft"], "--param")]
    for text in option_values(searches["ft"], "--enqueue"):
        assert set(parse_settings(text, params)) == {"TUNE_LR", "TUNE_EPOCHS"}
