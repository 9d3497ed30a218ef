"""
The rendered configs of `training_config/` are what they were before the Jsonnet library moved
from `training_config/common/` into the package (`allennlp_tune/configs/`): every cell file,
rendered with fixed placeholder ext vars, equals its snapshot in
`tests/fixtures_configs/rendered_training_configs.json` (generated from the commit before the
move).

A deliberate change to what a config renders must rewrite the snapshot, and the diff of the
snapshot then shows exactly what changed:

    .venv/bin/python tests/configs/test_rendered_configs.py --write
"""

import json
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
from allennlp.common import Params

import allennlp_tune  # noqa: F401  (registers the components, sets the ext var defaults)
from allennlp_tune.config_vars import CONFIG_VARS
from allennlp_tune.data.paths import REPO_ROOT

SNAPSHOT = REPO_ROOT / "tests" / "fixtures_configs" / "rendered_training_configs.json"

# Every ext var set, to placeholders where a value is a path, so the rendering depends on
# nothing but the config files.
PLACEHOLDER_EXT_VARS = {name: "" for name in CONFIG_VARS} | {
    "TUNE_DATA_DIR": "DATA",
    "TUNE_BERT_MODEL": "BERT",
    "TUNE_ELMO_OPTIONS": "ELMO_OPTIONS",
    "TUNE_ELMO_WEIGHTS": "ELMO_WEIGHTS",
}


def render(config: Path) -> Dict[str, Any]:
    """A config file as AllenNLP reads it, with `PLACEHOLDER_EXT_VARS`."""
    return Params.from_file(str(config), ext_vars=PLACEHOLDER_EXT_VARS).as_dict(quiet=True)


def _snapshot() -> Dict[str, Any]:
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def test_the_snapshot_covers_the_grid():
    cells = {
        f"training_config/{path.name}" for path in (REPO_ROOT / "training_config").glob("*.jsonnet")
    }
    assert cells <= set(_snapshot()), sorted(cells - set(_snapshot()))


@pytest.mark.parametrize("name", sorted(_snapshot()))
def test_a_cell_renders_as_its_snapshot(name: str):
    assert render(REPO_ROOT / name) == _snapshot()[name]


def write_snapshot() -> None:
    configs = sorted(
        path.relative_to(REPO_ROOT).as_posix()
        for path in (REPO_ROOT / "training_config").rglob("*.jsonnet")
    )
    rendered = {name: render(REPO_ROOT / name) for name in configs}
    SNAPSHOT.write_text(json.dumps(rendered, sort_keys=True, separators=(",", ":")))
    print(f"wrote {len(rendered)} configs to {SNAPSHOT}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {sys.argv[0]} --write")
    write_snapshot()
