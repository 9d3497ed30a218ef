"""
The two vocabularies of a training mode, and the one map between them.

- `RUN_MODES`: a run's short mode name, as run and config names carry it (`sick_e_bert_ft`),
  tune-compare's `--modes` takes it and the report orders its columns by it. `fe` feature
  extraction, `ft` fine-tuning, `sf` stack-then-finetune, `bitfit` bias-only fine-tuning, `lora`
  low-rank adapters.
- Block modes (`topK`, `bottomK`): a family of run modes beside `RUN_MODES`, fine-tuning only
  K layer groups (`block_groups`, `is_run_mode`, `ordered_run_modes`).
- `EMBEDDER_MODES`: the `mode` parameter of the `tune_*` token embedders, what the encoder trains
  when training starts.

`EMBEDDER_MODE_OF_RUN_MODE` maps the first to the second. It is not one to one: a stack-then-
finetune run starts its embedder in `feature_extraction`, and its trainer's `stack_then_finetune`
callback unfreezes the encoder later, so the embedder's mode alone never says `sf`; going back
(`RUN_MODE_OF_EMBEDDER_MODE`) gives the run mode of an embedder that no callback unfreezes, and
a reader of a config must look for that callback to tell `sf` (as `export.archive.recipe_name`
does).

`configs/experiment.libsonnet` keeps the same map (`encoder_modes`) for the configs it renders;
`tests/configs/test_mode_names.py` checks that the two agree. This module imports nothing, so
every room can use it.

`MODES` is the one table of modes: a `Mode` record per run mode (its embedder mode, its titles in
the report and the model card, its colour, its `--budget` search space, whether its encoder
trains, which encoders it applies to, its cost model entry) that the grid, the budget, the
planner, the report and the export read; `mode_record` gives a block mode its record, built from
ft's.
"""

import re
from dataclasses import dataclass, replace
from typing import Dict, Iterable, List, Optional, Tuple

FEATURE_EXTRACTION = "feature_extraction"
FINE_TUNING = "fine_tuning"
BITFIT = "bitfit"
LORA = "lora"
EMBEDDER_MODES: Tuple[str, ...] = (FEATURE_EXTRACTION, FINE_TUNING, BITFIT, LORA)

STACK_THEN_FINETUNE = "sf"
# The report's column order.
RUN_MODES: Tuple[str, ...] = ("fe", "ft", STACK_THEN_FINETUNE, "bitfit", "lora")


@dataclass(frozen=True)
class Mode:
    """
    One run mode, as every room reads it.

    # Parameters

    name : `str`
        The run mode (`fe`, `ft`, ...): run and config names, `--modes`, the report's columns.
    embedder_mode : `str`
        The `tune_*` embedders' `mode` when training starts (one of `EMBEDDER_MODES`).
    title : `str`
        The report's name for it (`reporting/labels.mode_title`).
    meaning : `str`
        The model card's sentence on what trained (`export/card.py`).
    colour : `str`
        Its colour in the report's figures.
    space : `Tuple[str, ...]`
        Its `--budget` search space, as tune-search's `--param` texts.
    elmo_space : `Optional[Tuple[str, ...]]`, optional (default = `None`)
        The space where ELMo's differs (its fine-tuning rates are higher).
    encoder_trains : `bool`, optional (default = `True`)
        `False` for a mode whose encoder stays frozen (one forward pass a trial in compute).
    transformer_only : `bool`, optional (default = `False`)
        Refused with ELMo (LoRA adapts attention and feed-forward layers).
    parameter_efficient : `bool`, optional (default = `False`)
        Trains only some encoder parameters (`mode_parameters()`); `configs/experiment.libsonnet`
        keeps the same list (`parameter_efficient`).
    default : `bool`, optional (default = `False`)
        One of tune-compare's default `--modes`.
    cost_key : `Optional[str]`, optional (default = `None`)
        The `planning/cost_model.COST_MODEL` entry it falls back to when it has none of its own
        (a block mode: ft's, scaled by its share of the layers).
    """

    name: str
    embedder_mode: str
    title: str
    meaning: str
    colour: str
    space: Tuple[str, ...]
    elmo_space: Optional[Tuple[str, ...]] = None
    encoder_trains: bool = True
    transformer_only: bool = False
    parameter_efficient: bool = False
    default: bool = False
    cost_key: Optional[str] = None

    def space_for(self, family: str) -> Tuple[str, ...]:
        """Its search space for an encoder `family` (`elmo_space` for ELMo, where it has one)."""
        return (self.elmo_space if family == "elmo" else None) or self.space


# The modes, in the report's column order (`RUN_MODES`).
MODES: Dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode(
            "fe",
            FEATURE_EXTRACTION,
            title="feature extraction",
            meaning=(
                "feature extraction: the encoder stayed frozen; the scalar mix and the head trained"
            ),
            colour="#1f77b4",
            # The frozen encoder's network: rate (the recipe's 1e-3), dropout (0.5 in ESIM, 0.1
            # in the pooled heads), and the patience of its early stopping (3 of at most 10
            # epochs).
            space=("TUNE_LR=1e-4:1e-2:log", "TUNE_DROPOUT=0.0:0.5", "TUNE_PATIENCE=1:5"),
            encoder_trains=False,
            default=True,
        ),
        Mode(
            "ft",
            FINE_TUNING,
            title="fine-tuning",
            meaning="fine-tuning: every encoder weight trained with the head",
            colour="#d62728",
            # BERT's 2e-5 x 3 up to MiniLM's 1e-4 x 5 and beyond; ELMo's fine-tuning cells train
            # at 5e-4 (discriminative rates, 0.4x per group below the top).
            space=("TUNE_LR=1e-5:2e-4:log", "TUNE_EPOCHS=2:6"),
            elmo_space=("TUNE_LR=1e-4:2e-3:log", "TUNE_EPOCHS=2:6"),
            default=True,
        ),
        Mode(
            STACK_THEN_FINETUNE,
            FEATURE_EXTRACTION,  # the stack_then_finetune callback unfreezes it
            title="stack-then-finetune",
            meaning=(
                "stack-then-finetune: the head trained on the frozen encoder first, then the "
                "encoder was fine-tuned with it"
            ),
            colour="#ff7f0e",
            # Both phases: 2 frozen epochs + 2..6 fine-tuning ones.
            space=("TUNE_LR=1e-5:2e-4:log", "TUNE_EPOCHS=4:8"),
            elmo_space=("TUNE_LR=1e-4:2e-3:log", "TUNE_EPOCHS=4:8"),
            default=True,
        ),
        Mode(
            "bitfit",
            BITFIT,
            title="bias-only fine-tuning",
            meaning="BitFit: only the encoder's biases trained (with the head)",
            colour="#2ca02c",
            # Few parameters train, at higher rates (the recipes' 3e-3 and 1.5e-3).
            space=("TUNE_LR=5e-5:5e-3:log", "TUNE_EPOCHS=2:6"),
            parameter_efficient=True,
        ),
        Mode(
            "lora",
            LORA,
            title="low-rank adapters",
            meaning=(
                "LoRA: low-rank adapters on the encoder's linear layers trained (with the head); "
                "the encoder's own weights are the pretrained ones"
            ),
            colour="#9467bd",
            space=("TUNE_LR=5e-5:5e-3:log", "TUNE_EPOCHS=2:6"),
            transformer_only=True,
            parameter_efficient=True,
        ),
    )
}
assert tuple(MODES) == RUN_MODES

EMBEDDER_MODE_OF_RUN_MODE: Dict[str, str] = {
    name: mode.embedder_mode for name, mode in MODES.items()
}
DEFAULT_MODES: Tuple[str, ...] = tuple(name for name, mode in MODES.items() if mode.default)
RUN_MODE_OF_EMBEDDER_MODE: Dict[str, str] = {
    embedder_mode: run_mode
    for run_mode, embedder_mode in EMBEDDER_MODE_OF_RUN_MODE.items()
    if run_mode != STACK_THEN_FINETUNE
}

# A block mode's colour in the figures: dark grey, as any mode without one of its own.
BLOCK_COLOUR = "#555555"

# Block modes, a family of run modes: `topK` / `bottomK` fine-tune only the K highest / lowest
# layer groups (the embedder's `tuned_groups`, `top:K` / `bottom:K`) and keep the rest frozen.
BLOCK_MODE_PATTERN = r"(?:top|bottom)[1-9][0-9]?"
_BLOCK_MODE = re.compile(r"^(top|bottom)([1-9][0-9]?)$")


def block_groups(mode: str) -> Optional[str]:
    """The embedder's `tuned_groups` of a block mode (`top2` -> `top:2`), `None` for others."""
    match = _BLOCK_MODE.match(mode)
    return f"{match.group(1)}:{match.group(2)}" if match else None


def mode_record(mode: str) -> Optional[Mode]:
    """
    The `Mode` of a run mode or a block mode, `None` for any other name. A block mode (`top2`)
    trains like ft: its record is ft's with its own name and title, and ft's cost model entry.
    """
    if mode in MODES:
        return MODES[mode]
    groups = block_groups(mode)
    if groups is None:
        return None
    side, count = groups.split(":")
    title = f"{side} {count} layer group{'s' if count != '1' else ''} fine-tuned"
    return replace(
        MODES["ft"], name=mode, title=title, colour=BLOCK_COLOUR, default=False, cost_key="ft"
    )


def is_run_mode(mode: str) -> bool:
    """One of `RUN_MODES` or a block mode."""
    return mode in RUN_MODES or block_groups(mode) is not None


def mode_order(mode: str) -> Tuple[int, int, int, str]:
    """The sort key of the report's order: `RUN_MODES`, then the top blocks by size, then the
    bottom ones, then any other name."""
    if mode in RUN_MODES:
        return (RUN_MODES.index(mode), 0, 0, mode)
    match = _BLOCK_MODE.match(mode)
    if match:  # after RUN_MODES: the top blocks by size, then the bottom ones
        return (len(RUN_MODES), 0 if match.group(1) == "top" else 1, int(match.group(2)), mode)
    return (len(RUN_MODES) + 1, 0, 0, mode)


def ordered_run_modes(modes: Iterable[str]) -> List[str]:
    """`modes` once each in the report's order: `RUN_MODES`, then top blocks, bottom blocks, and
    any other name last."""
    return sorted(set(modes), key=mode_order)


__all__ = [
    "DEFAULT_MODES",
    "MODES",
    "Mode",
    "mode_record",
    "BLOCK_MODE_PATTERN",
    "block_groups",
    "is_run_mode",
    "mode_order",
    "ordered_run_modes",
    "BITFIT",
    "EMBEDDER_MODES",
    "EMBEDDER_MODE_OF_RUN_MODE",
    "FEATURE_EXTRACTION",
    "FINE_TUNING",
    "LORA",
    "RUN_MODES",
    "RUN_MODE_OF_EMBEDDER_MODE",
    "STACK_THEN_FINETUNE",
]
