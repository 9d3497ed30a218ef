import os
from pathlib import Path

import pytest

from allennlp_tune.data.paths import data_dir

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The planner's calibration (timing a few batches of every cell before tune-grid and
# tune-compare train) is off in the tests; tests/results/test_calibrate.py turns it on.
os.environ.setdefault("TUNE_PLAN_CALIBRATE", "0")


@pytest.fixture(scope="session")
def real_data() -> Path:
    """The real task data (`TUNE_DATA_DIR` or ../shared/data); skips the test when absent."""
    path = data_dir()
    if path is None or not path.is_dir():
        pytest.skip("real data not found: set TUNE_DATA_DIR or place it at ../shared/data")
    return path


def pytest_configure(config):
    # Here rather than in pyproject.toml, whose every change reinstalls the venvs (Makefile,
    # .ci/stock_lane.sh).
    config.addinivalue_line(
        "markers",
        "slow: trains and runs several `allennlp` processes (over a minute); -m 'not slow' "
        "leaves them out",
    )
