import pytest
import torch

from allennlp_tune.data.paths import FIXTURE_DATA_DIR

# The test models are tiny: torch's intra-op threads only add overhead, several times the CPU
# time of the tests themselves on a busy machine.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def fixture_data_dir(monkeypatch):
    """The model test configs read `std.extVar("TUNE_DATA_DIR")`: point it at the fixtures."""
    monkeypatch.setenv("TUNE_DATA_DIR", str(FIXTURE_DATA_DIR))


def reset_stateful_rnns(model) -> None:
    """
    AllenNLP's ELMo keeps its LSTM states from one batch to the next (`stateful`), so the same
    sentence gets different vectors in different batches. The paper treats each sentence
    independently; tests that compare batched with single predictions reset the states before
    every forward pass, as `ensure_model_can_train_save_and_load` does before its comparison.
    """

    def reset(module, inputs):
        for submodule in module.modules():
            if getattr(submodule, "stateful", False):
                submodule.reset_states()

    model.register_forward_pre_hook(reset)


@pytest.fixture
def stateless():
    return reset_stateful_rnns
