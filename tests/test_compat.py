"""Each fix in allennlp_tune/compat.py, with the failure it prevents."""

import inspect

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data.tokenizers import SpacyTokenizer
from allennlp.training.learning_rate_schedulers import LearningRateScheduler
from allennlp.training.learning_rate_schedulers.pytorch_lr_schedulers import (
    ReduceOnPlateauLearningRateScheduler as AllenNlpReduceOnPlateau,
)

import allennlp_tune  # noqa: F401
from allennlp_tune.compat import ReduceOnPlateauLearningRateScheduler


def optimizer() -> torch.optim.Optimizer:
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=1.0)


@pytest.mark.skipif(
    "verbose" in inspect.signature(torch.optim.lr_scheduler.ReduceLROnPlateau).parameters,
    reason=f"torch {torch.__version__}'s ReduceLROnPlateau still accepts `verbose` (torch 2.x "
    "removed it), so AllenNLP's own scheduler works here and there is no breakage to show",
)
def test_allennlp_reduce_on_plateau_is_broken_on_this_torch():
    # The reason for the fix: torch 2.x's ReduceLROnPlateau has no `verbose` argument.
    with pytest.raises(TypeError, match="verbose"):
        AllenNlpReduceOnPlateau(optimizer())


def test_reduce_on_plateau_from_config_builds_and_reduces():
    opt = optimizer()
    params = Params({"type": "reduce_on_plateau", "mode": "max", "factor": 0.5, "patience": 0,
                     "verbose": True})  # fmt: skip
    scheduler = LearningRateScheduler.from_params(params=params, optimizer=opt)
    assert isinstance(scheduler, ReduceOnPlateauLearningRateScheduler)
    scheduler.step(1.0)
    scheduler.step(0.5)  # no improvement with patience 0: halve
    assert opt.param_groups[0]["lr"] == pytest.approx(0.5)
    state = scheduler.state_dict()
    fresh = LearningRateScheduler.from_params(
        params=Params({"type": "reduce_on_plateau", "mode": "max"}), optimizer=optimizer()
    )
    fresh.load_state_dict(state)  # checkpoints and --recover keep working
    assert fresh.lr_scheduler.best == pytest.approx(1.0)


def test_missing_spacy_model_is_a_clear_configuration_error():
    with pytest.raises(ConfigurationError, match="spaCy model 'en_core_web_sm' is not installed"):
        SpacyTokenizer(language="en_core_web_sm")
