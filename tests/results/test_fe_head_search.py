"""
The frozen network in fe's `--budget` search (`TUNE_FE_HEAD`, issue #69): where a light head
applies, fe's default space chooses among the paper network and the light heads, its first
trial is the config's own network (the paper's), and a search's light trials train.
"""

import sys
from pathlib import Path

import optuna
import pytest

import allennlp_tune  # noqa: F401  (registers the subcommands, sets the ext var defaults)
from allennlp_tune.experiments.budget import (
    FE_HEAD_SPACE,
    SPACES,
    default_setting,
    mode_space,
    searched_spaces,
)
from allennlp_tune.experiments.compare import run_compare
from allennlp_tune.experiments.outputs import predict_in_process

sys.path.insert(0, str(Path(__file__).parent))
from test_budget import in_process_training, study_trials, written_configs  # noqa: E402
from test_compare import BERT, write_reviews  # noqa: E402


@pytest.mark.parametrize(
    "modes, family, kind, spaces, ext_vars, widened",
    [
        (["fe", "ft"], "bert", "classification", None, {}, True),
        (["fe"], "bert", "pair_regression", {}, {}, True),
        (["ft"], "bert", "classification", None, {}, False),  # no fe
        (["fe"], "elmo", "classification", None, {}, False),  # no pooled layers
        (["fe"], "bert", "tagging", None, {}, False),  # a tagger tags every word
        (["fe"], "bert", "classification", None, {"TUNE_FE_HEAD": "mlp"}, False),  # fixed
    ],
)
def test_fes_space_chooses_the_frozen_network_where_a_light_head_applies(
    modes, family, kind, spaces, ext_vars, widened
):
    result = searched_spaces(spaces, modes, family, kind, ext_vars)
    assert ("fe" in result and FE_HEAD_SPACE in result["fe"]) is widened
    if widened:
        assert result["fe"] == SPACES["fe"] + (FE_HEAD_SPACE,)


def test_a_given_fe_space_is_kept_as_given():
    given = {"fe": ("TUNE_LR=1e-3:1e-2:log",)}
    assert searched_spaces(given, ["fe"], "bert", "classification", {}) == given


def test_fes_first_trial_is_its_configs_own_network_and_recipe(tmp_path):
    """The choice's default is the one that renders as the variable unset: paper (BCN)."""
    written_configs(tmp_path, ["fe"])
    config = tmp_path / "configs" / "reviews_bertuncased_fe.jsonnet"
    space = searched_spaces(None, ["fe"], "bert", "classification", {})
    params = mode_space("fe", "bert", space)
    setting, notes = default_setting(config, params, {"TUNE_BERT_MODEL": str(BERT)})
    assert not notes
    assert setting == {
        "TUNE_LR": 1e-3,
        "TUNE_DROPOUT": 0.5,
        "TUNE_PATIENCE": 3,
        "TUNE_FE_HEAD": "paper",
    }


def test_a_budget_search_over_the_frozen_networks_trains_light_trials(tmp_path):
    """fe alone, 4 trials over its widened space: the light heads are drawn and train."""
    task = write_reviews(tmp_path / "task")
    results = tmp_path / "out"
    result = run_compare(
        str(task),
        str(BERT),
        ["fe"],
        [1],
        results,
        budget=4,
        ext_vars={"TUNE_EPOCHS": "2"},
        runner=in_process_training,
        predict=predict_in_process,
        progress=False,
        plan=False,
    )
    assert not result.failed
    trials = study_trials(results, "reviews_bertuncased_fe")
    assert len(trials) == 4
    assert trials[0].params["TUNE_FE_HEAD"] == "paper"
    heads = {trial.params["TUNE_FE_HEAD"] for trial in trials}
    assert heads - {"paper"}, heads  # the draws reach a light head
    assert all(trial.state != optuna.trial.TrialState.FAIL for trial in trials)


def test_the_plan_prices_a_network_the_space_can_draw(tmp_path, capsys):
    """`--space fe=TUNE_FE_HEAD=linear,mlp ...` leaves the config's paper network (BCN over a
    token-level cache) out: the plan of the decision prices fe at the space's last choice
    (mlp on the pooled cache) and says so; a space that holds the paper network plans it."""
    task = write_reviews(tmp_path / "task")

    def plan(space, results):
        run_compare(
            str(task), str(BERT), ["fe"], [1], tmp_path / results, budget=2,
            spaces={"fe": space}, plan_only=True, progress=False,
        )  # fmt: skip
        return capsys.readouterr().out

    light = plan(("TUNE_FE_HEAD=linear,mlp", "TUNE_LR=1e-3:1e-2:log"), "light")
    assert "planned at TUNE_FE_HEAD=mlp, its space's last choice" in light, light
    # The search says why the config's own recipe is not its first trial.
    config = tmp_path / "light" / "configs" / "reviews_bertuncased_fe.jsonnet"
    space = mode_space("fe", "bert", {"fe": ("TUNE_FE_HEAD=linear,mlp", "TUNE_LR=1e-3:1e-2:log")})
    assert default_setting(config, space, {"TUNE_BERT_MODEL": str(BERT)}) == (
        None,
        [
            "TUNE_FE_HEAD: the config's own value is none of linear, mlp (the space leaves it "
            "out), so its recipe is not one of the trials"
        ],
    )
    # The pooled-feature cache's size line, and the light heads' 40 epochs.
    assert "x 2 poolings x" in light and "(40 epochs) |" in light, light
    paper = plan(("TUNE_FE_HEAD=paper,linear", "TUNE_LR=1e-3:1e-2:log"), "paper")
    assert "planned at TUNE_FE_HEAD" not in paper and "poolings" not in paper, paper
    assert "(10 epochs) |" in paper, paper
