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
