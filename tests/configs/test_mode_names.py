"""
The Python map from run modes to embedder modes (`allennlp_tune.modes`) says what the Jsonnet
library's `encoder_modes` (`configs/experiment.libsonnet`) renders: a shipped cell of each run
mode has a `tune_*` embedder in the mode the map names, and only the `sf` cell has the
`stack_then_finetune` callback that makes a frozen embedder's run an `sf` one. Going back, the
export's `recipe_name` reads each rendered cell as its own run mode.
"""

from typing import Any, Dict, List

import pytest

from allennlp_tune.data.paths import REPO_ROOT
from allennlp_tune.export.archive import recipe_name
from allennlp_tune.modes import (
    EMBEDDER_MODE_OF_RUN_MODE,
    EMBEDDER_MODES,
    RUN_MODE_OF_EMBEDDER_MODE,
    RUN_MODES,
)
from tests.configs.test_rendered_configs import render

# One shipped cell per run mode: a transformer cell of one task (every mode has one).
CELLS = {mode: REPO_ROOT / "training_config" / f"sst2_bert_{mode}.jsonnet" for mode in RUN_MODES}


def embedders(config: Any) -> List[Dict[str, Any]]:
    """Every `tune_*` token embedder in a rendered config."""
    if isinstance(config, dict):
        found = (
            [config] if str(config.get("type", "")).startswith("tune_") and "mode" in config else []
        )
        return found + [inner for value in config.values() for inner in embedders(value)]
    if isinstance(config, list):
        return [inner for value in config for inner in embedders(value)]
    return []


def callback_types(rendered: Dict[str, Any]) -> List[str]:
    return [callback.get("type") for callback in rendered["trainer"].get("callbacks") or []]


def test_the_map_covers_both_vocabularies():
    assert tuple(EMBEDDER_MODE_OF_RUN_MODE) == RUN_MODES
    assert set(EMBEDDER_MODE_OF_RUN_MODE.values()) == set(EMBEDDER_MODES)
    assert set(RUN_MODE_OF_EMBEDDER_MODE) == set(EMBEDDER_MODES)
    for embedder_mode, run_mode in RUN_MODE_OF_EMBEDDER_MODE.items():
        assert EMBEDDER_MODE_OF_RUN_MODE[run_mode] == embedder_mode
    # sf is the one run mode that the embedder alone does not name.
    assert set(RUN_MODES) - set(RUN_MODE_OF_EMBEDDER_MODE.values()) == {"sf"}


@pytest.mark.parametrize("run_mode", RUN_MODES)
def test_a_rendered_cell_has_the_embedder_mode_of_its_run_mode(run_mode: str):
    rendered = render(CELLS[run_mode])
    found = embedders(rendered["model"])
    assert found, f"no tune_* embedder in {CELLS[run_mode].name}"
    assert {embedder["mode"] for embedder in found} == {EMBEDDER_MODE_OF_RUN_MODE[run_mode]}
    unfreezes = "stack_then_finetune" in callback_types(rendered)
    assert unfreezes == (run_mode == "sf")
    assert recipe_name(found[0]["mode"], rendered["trainer"]) == run_mode
