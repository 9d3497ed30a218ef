"""Hand-made run directories and the tiny fixture config shared by the results tests."""

import json
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

from allennlp_tune.data.paths import FIXTURE_DATA_DIR

TINY_CONFIG = Path(__file__).parent / "fixtures" / "sst2_bow_fe.jsonnet"
# Everything the tiny config reads besides TUNE_SEED.
TINY_EXT_VARS = {
    "TUNE_DATA_DIR": str(FIXTURE_DATA_DIR),
    "TUNE_EPOCHS": "2",
    "TUNE_LR": "0.01",
    "TUNE_DROPOUT": "0.1",
    "TUNE_WEIGHT_DECAY": "0.0",
}


def write_run(
    run_dir: Path,
    seed: Optional[int] = None,
    value: Optional[float] = None,
    metric: str = "+accuracy",
    metrics: bool = True,
    info: Optional[Dict[str, Any]] = None,
    archive: bool = False,
) -> Path:
    """A run directory as `allennlp train` (and tune-grid, with `info`) leaves it."""
    run_dir.mkdir(parents=True)
    config: Dict[str, Any] = {"trainer": {"validation_metric": metric}}
    if seed is not None:
        config["random_seed"] = seed
    (run_dir / "config.json").write_text(json.dumps(config))
    if metrics:
        values = {"best_epoch": 1, "best_validation_loss": 0.5}
        if value is not None:
            values[f"best_validation_{metric[1:]}"] = value
        (run_dir / "metrics.json").write_text(json.dumps(values))
    if archive:
        (run_dir / "model.tar.gz").write_bytes(b"")
    if info is not None:
        (run_dir / "tune_run.json").write_text(json.dumps(info))
    return run_dir


@pytest.fixture
def tiny_config() -> Path:
    return TINY_CONFIG


@pytest.fixture
def tiny_ext_vars() -> Dict[str, str]:
    return dict(TINY_EXT_VARS)


@pytest.fixture
def make_run():
    return write_run
