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
"""

import re
from typing import Dict, Iterable, List, Optional, Tuple

FEATURE_EXTRACTION = "feature_extraction"
FINE_TUNING = "fine_tuning"
BITFIT = "bitfit"
LORA = "lora"
EMBEDDER_MODES: Tuple[str, ...] = (FEATURE_EXTRACTION, FINE_TUNING, BITFIT, LORA)

STACK_THEN_FINETUNE = "sf"
# The report's column order.
RUN_MODES: Tuple[str, ...] = ("fe", "ft", STACK_THEN_FINETUNE, "bitfit", "lora")

EMBEDDER_MODE_OF_RUN_MODE: Dict[str, str] = {
    "fe": FEATURE_EXTRACTION,
    "ft": FINE_TUNING,
    STACK_THEN_FINETUNE: FEATURE_EXTRACTION,  # the stack_then_finetune callback unfreezes it
    "bitfit": BITFIT,
    "lora": LORA,
}
RUN_MODE_OF_EMBEDDER_MODE: Dict[str, str] = {
    embedder_mode: run_mode
    for run_mode, embedder_mode in EMBEDDER_MODE_OF_RUN_MODE.items()
    if run_mode != STACK_THEN_FINETUNE
}

# Block modes, a family of run modes: `topK` / `bottomK` fine-tune only the K highest / lowest
# layer groups (the embedder's `tuned_groups`, `top:K` / `bottom:K`) and keep the rest frozen.
BLOCK_MODE_PATTERN = r"(?:top|bottom)[1-9][0-9]?"
_BLOCK_MODE = re.compile(r"^(top|bottom)([1-9][0-9]?)$")


def block_groups(mode: str) -> Optional[str]:
    """The embedder's `tuned_groups` of a block mode (`top2` -> `top:2`), `None` for others."""
    match = _BLOCK_MODE.match(mode)
    return f"{match.group(1)}:{match.group(2)}" if match else None


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
