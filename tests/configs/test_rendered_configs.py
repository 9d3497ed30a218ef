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

import functools
import json
import re
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


@functools.lru_cache(maxsize=1)
def _snapshot() -> Dict[str, Any]:
    """The snapshot, read once per session (the tests only read it)."""
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def test_the_snapshot_covers_the_grid():
    cells = {
        f"training_config/{path.name}" for path in (REPO_ROOT / "training_config").glob("*.jsonnet")
    }
    assert cells <= set(_snapshot()), sorted(cells - set(_snapshot()))


@pytest.mark.parametrize("name", sorted(_snapshot()))
def test_a_cell_renders_as_its_snapshot(name: str):
    assert render(REPO_ROOT / name) == _snapshot()[name]


def _header_rate(config: Path) -> str:
    """The learning rate a cell file's `//` header names ("..., lr 3e-3."), or "" for none."""
    header = " ".join(line for line in config.read_text().splitlines() if line.startswith("//"))
    match = re.search(r"\blr (\d[\d.]*(?:e-?\d+)?)", header)
    return match.group(1) if match else ""


RATED_CELLS = sorted(name for name in _snapshot() if _header_rate(REPO_ROOT / name))


def test_some_headers_name_a_rate():
    # The PEFT cells name their rate, the one value a user must change for another encoder.
    assert any("_lora" in name for name in RATED_CELLS)
    assert any("_bitfit" in name for name in RATED_CELLS)


@pytest.mark.parametrize("name", RATED_CELLS)
def test_a_header_names_the_rate_the_cell_renders(name: str):
    # The header is hand-written and the default lives in trainers.libsonnet: a default that
    # moves must move the header too (BitFit's said 1e-3 after its default became 3e-3).
    rendered = _snapshot()[name]["trainer"]["optimizer"]["lr"]
    assert float(_header_rate(REPO_ROOT / name)) == rendered, (name, rendered)


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
