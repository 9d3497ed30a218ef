"""
The two vocabularies of a training mode, and the one map between them.

- `RUN_MODES`: a run's short mode name, as run and config names carry it (`sick_e_bert_ft`),
  tune-compare's `--modes` takes it and the report orders its columns by it. `fe` feature
  extraction, `ft` fine-tuning, `sf` stack-then-finetune, `bitfit` bias-only fine-tuning, `lora`
  low-rank adapters.
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

from typing import Dict, Tuple

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

__all__ = [
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
