"""`tune_adamw`: the `fused` / `capturable` switches give AllenNLP's `adamw` updates."""

import pytest
import torch
from allennlp.common import Params
from allennlp.training.optimizers import Optimizer

from allennlp_tune.testing.torch_support import fused_adamw_on_cpu

pytestmark = pytest.mark.skipif(
    not fused_adamw_on_cpu(), reason=f"torch {torch.__version__} has no fused AdamW on the CPU"
)


def train(optimizer_params, steps=5):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    optimizer = Optimizer.from_params(
        model_parameters=list(model.named_parameters()), params=Params(optimizer_params)
    )
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        inputs = torch.randn(4, 6, generator=generator)
        loss = model(inputs).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return optimizer, [parameter.detach().clone() for parameter in model.parameters()]


# (capturable needs an accelerator: torch refuses it on the CPU; a GPU session checks it.)
@pytest.mark.parametrize("switches", [{"fused": True}, {"fused": True, "amsgrad": True}])
def test_switches_give_adamws_updates(switches):
    settings = {"lr": 0.01, "weight_decay": 0.1, "betas": [0.9, 0.98]}
    _, expected = train({"type": "adamw", **settings, "amsgrad": switches.get("amsgrad", False)})
    optimizer, trained = train({"type": "tune_adamw", **settings, **switches})
    for key, value in switches.items():
        assert optimizer.param_groups[0][key] is value
    for got, want in zip(trained, expected):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_inside_discriminative_its_groups_keep_fused():
    # As the inner optimizer of `discriminative` (here with explicit groups): fused in every group.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    optimizer = Optimizer.from_params(
        model_parameters=list(model.named_parameters()),
        params=Params(
            {
                "type": "discriminative",
                "groups": [["^0\\."], ["^1\\."]],
                "optimizer": {"type": "tune_adamw", "lr": 1e-3, "fused": True},
            }
        ),
    )
    assert len(optimizer.param_groups) >= 2
    assert all(group["fused"] for group in optimizer.param_groups)
    model(torch.randn(3, 4)).sum().backward()
    before = [parameter.detach().clone() for parameter in model.parameters()]
    optimizer.step()
    assert all(not torch.equal(b, a) for b, a in zip(before, model.parameters()))
