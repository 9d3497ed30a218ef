"""
The mode table (`allennlp_tune.modes.MODES`) is what every room reads: the report's titles and
colours, the model card's sentences, the budget's spaces, the planner's cost entries and the
Jsonnet library's own copies of it. The Python map from run modes to embedder modes
(`allennlp_tune.modes`) says what the Jsonnet library's `encoder_modes`
(`configs/experiment.libsonnet`) renders: a shipped cell of each run mode has a `tune_*`
embedder in the mode the map names, and only the `sf` cell has the `stack_then_finetune`
callback that makes a frozen embedder's run an `sf` one. Going back, the export's `recipe_name`
reads each rendered cell as its own run mode.
"""

import json
import re
from typing import Any, Dict, List

import pytest

from allennlp_tune.data.paths import REPO_ROOT
from allennlp_tune.experiments.budget import encoder_trains, space_texts
from allennlp_tune.experiments.compare import TRANSFORMER_ONLY_MODES
from allennlp_tune.export.archive import recipe_name
from allennlp_tune.export.card import MODE_MEANINGS
from allennlp_tune.modes import (
    DEFAULT_MODES,
    EMBEDDER_MODE_OF_RUN_MODE,
    EMBEDDER_MODES,
    MODES,
    RUN_MODE_OF_EMBEDDER_MODE,
    RUN_MODES,
    mode_record,
)
from allennlp_tune.planning.cost_model import COST_MODEL
from allennlp_tune.reporting.labels import mode_colour, mode_title
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


def _libsonnet_local(name: str) -> Any:
    """The value of `local NAME = ...;` in configs/experiment.libsonnet, evaluated as Jsonnet."""
    import _jsonnet

    text = (REPO_ROOT / "allennlp_tune" / "configs" / "experiment.libsonnet").read_text()
    match = re.search(rf"^local {name} = (.*?);$", text, flags=re.M | re.S)
    assert match, f"no `local {name}` in experiment.libsonnet"
    return json.loads(_jsonnet.evaluate_snippet(name, match.group(1)))


def test_the_libsonnet_holds_the_mode_table():
    # The configs' own copies of the table: what each run mode's embedder starts in, and which
    # modes train only some encoder parameters.
    assert _libsonnet_local("encoder_modes") == {
        name: mode.embedder_mode for name, mode in MODES.items()
    }
    assert _libsonnet_local("parameter_efficient") == [
        name for name, mode in MODES.items() if mode.parameter_efficient
    ]


def test_every_room_reads_the_mode_table():
    for name, mode in MODES.items():
        assert mode_title(name) == mode.title
        assert mode_colour(name) == mode.colour
        assert MODE_MEANINGS[name] == mode.meaning
        assert space_texts(name, "bert") == mode.space
        assert space_texts(name, "elmo") == (mode.elmo_space or mode.space)
        assert name in COST_MODEL, f"planning/cost_model.py has no entry for {name}"
        assert encoder_trains(name) == (name != "fe")
    assert DEFAULT_MODES == ("fe", "ft", "sf")
    assert TRANSFORMER_ONLY_MODES == ("lora",)


def test_a_block_mode_is_fine_tuning_on_some_layers():
    top = mode_record("top2")
    assert top is not None and top.name == "top2"
    assert (top.embedder_mode, top.space, top.cost_key) == ("fine_tuning", MODES["ft"].space, "ft")
    assert mode_title("top2") == "top 2 layer groups fine-tuned"
    assert mode_title("bottom1") == "bottom 1 layer group fine-tuned"
    assert space_texts("bottom3", "elmo") == MODES["ft"].elmo_space
    assert mode_colour("top2") != mode_colour("ft")  # grey: not to be read as ft itself
    assert mode_record("top0") is None and mode_record("half") is None
    assert mode_title("half") == "half"
