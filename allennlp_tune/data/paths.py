"""Where the task data lives: `TUNE_DATA_DIR`, else `../shared/data` beside the repository."""

import os
from pathlib import Path
from typing import Optional

REPO_ROOT = Path(__file__).resolve().parents[2]
DEVELOPMENT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
# Written by scripts/make_fixtures.py; laid out like the real data folder.
FIXTURES_DIR = REPO_ROOT / "fixtures"
FIXTURE_DATA_DIR = FIXTURES_DIR / "data"
FIXTURE_MODELS_DIR = FIXTURES_DIR / "models"


def data_dir() -> Optional[Path]:
    """The data folder to use, or `None` if neither `TUNE_DATA_DIR` nor the default exists."""
    configured = os.environ.get("TUNE_DATA_DIR")
    if configured:
        return Path(configured)
    return DEVELOPMENT_DATA_DIR if DEVELOPMENT_DATA_DIR.is_dir() else None


def export_default_data_dir() -> None:
    """
    Make `std.extVar("TUNE_DATA_DIR")` work in configs without the user setting it, when the
    development default `../shared/data` exists. AllenNLP passes environment variables to Jsonnet
    as ext vars; an explicit `TUNE_DATA_DIR` always wins.
    """
    if not os.environ.get("TUNE_DATA_DIR") and DEVELOPMENT_DATA_DIR.is_dir():
        os.environ["TUNE_DATA_DIR"] = str(DEVELOPMENT_DATA_DIR)
