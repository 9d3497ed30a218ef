"""
What `tune-export` reads: a model archive of the plugin, loaded with AllenNLP's `load_archive`,
the `tune_*` token embedder inside its model, the run's mode, and the run folder's files.

An archive is "one of the plugin's models" when its model holds exactly one `tune_transformer`,
`tune_transformer_mismatched` or `tune_elmo` embedder: only those know their mode and keep the
encoder and the scalar mix apart from the rest of the model, which is what the export splits.
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import Archive
from allennlp.modules.token_embedders import TokenEmbedder

from allennlp_tune.modes import FEATURE_EXTRACTION, FINE_TUNING, RUN_MODE_OF_EMBEDDER_MODE
from allennlp_tune.modules.token_embedders import (
    TuneElmoEmbedder,
    TuneTransformerEmbedder,
    TuneTransformerMismatchedEmbedder,
)
from allennlp_tune.rundir import Run, is_run_dir, load_run
from allennlp_tune.rundir.folders import folder_problem

# Trainer callbacks that unfreeze a frozen encoder during training, by registered name, with the
# name of the resulting recipe.
UNFREEZING_CALLBACKS = {"stack_then_finetune": "sf", "gradual_unfreezing": "gradual unfreezing"}
PLUGIN_EMBEDDERS = (TuneTransformerEmbedder, TuneTransformerMismatchedEmbedder, TuneElmoEmbedder)


@dataclass
class LoadedRun:
    """
    A loaded archive and what the export needs to know about it.

    # Parameters

    archive_file : `Path`
        The archive (or serialization folder) as the user named it.
    archive : `Archive`
        AllenNLP's loaded archive: the model (on the CPU, in eval mode) and its config.
    embedder_path : `str`
        The module path of the plugin's token embedder in the model (the outer one for
        `tune_transformer_mismatched`); the head is every weight outside it.
    embedder : `torch.nn.Module`
        The module that holds the encoder and the scalar mix: a `TuneTransformerEmbedder`
        (the inner one of a mismatched embedder) or a `TuneElmoEmbedder`.
    mode : `str`
        The grid's name of the recipe: `fe`, `ft`, `sf`, `bitfit`, `lora`, or a combination
        such as `sf (lora)` (stack-then-finetune over a LoRA embedder).
    run : `Optional[Run]`
        The run folder beside the archive (`metrics.json`, `cost.json`, its name), read with
        `allennlp_tune.rundir.load_run`; `None` when the archive has no run folder.
    """

    archive_file: Path
    archive: Archive
    embedder_path: str
    embedder: torch.nn.Module
    mode: str
    run: Optional[Run]

    @property
    def config(self) -> Dict[str, Any]:
        return self.archive.config.as_dict(quiet=True)

    @property
    def is_elmo(self) -> bool:
        return isinstance(self.embedder, TuneElmoEmbedder)

    @property
    def task(self) -> str:
        """The run's task from its folder name, else the dataset reader's type."""
        if self.run is not None and self.run.name is not None:
            return self.run.name.task
        reader = self.config.get("dataset_reader") or {}
        return str(reader.get("type", "unknown")) if isinstance(reader, dict) else "unknown"

    @property
    def model_name(self) -> Optional[str]:
        """The transformers name or folder the encoder was loaded from, as the config has it."""
        return getattr(self.embedder, "_model_name", None)


def check_output_dir(output_dir: Path) -> None:
    """
    Refuses an output folder that holds anything (the export never overwrites or mixes with a
    user's files), a path that is a file or lies under one, and one that cannot be created or
    written (a read-only or virtual filesystem). A missing or empty folder is fine.
    """
    if output_dir.exists() and not output_dir.is_dir():
        raise ConfigurationError(
            f"DIR {output_dir} is a file; give a new folder (tune-export creates it) or an "
            "empty one."
        )
    problem = folder_problem(output_dir)  # under a file, a read-only or virtual filesystem
    if problem is not None:
        raise ConfigurationError(f"DIR {output_dir} {problem}")
    if output_dir.is_dir() and any(output_dir.iterdir()):
        raise ConfigurationError(
            f"DIR {output_dir} exists and is not empty; tune-export never overwrites files. "
            "Give a new folder (it is created) or an empty one."
        )


def find_plugin_embedders(model: torch.nn.Module) -> List[Tuple[str, torch.nn.Module]]:
    """
    The outermost `tune_*` token embedders of `model`, as `(module path, module)`: a
    `tune_transformer_mismatched` counts once, not again for the `tune_transformer` inside it.
    """
    found: List[Tuple[str, torch.nn.Module]] = []
    for name, module in model.named_modules():
        if not isinstance(module, PLUGIN_EMBEDDERS):
            continue
        if any(name.startswith(outer + ".") for outer, _ in found):
            continue
        found.append((name, module))
    return found


def recipe_name(embedder_mode: str, trainer: Any) -> str:
    """
    The grid's name of what trained the encoder: the embedder's mode (`fe`, `ft`, `bitfit`,
    `lora`), or `sf` when a `stack_then_finetune` callback unfroze a frozen embedder
    (`sf (bitfit)` / `sf (lora)` over a partial mode), or `gradual unfreezing` alike.

    # Parameters

    embedder_mode : `str`
        The embedder's configured mode (`feature_extraction`, `fine_tuning`, ...).
    trainer : `Any`
        The archive config's `trainer` section (a dict, or anything else when absent).
    """
    short = RUN_MODE_OF_EMBEDDER_MODE.get(embedder_mode, embedder_mode)
    callbacks = trainer.get("callbacks") if isinstance(trainer, dict) else None
    for callback in callbacks if isinstance(callbacks, list) else []:
        kind = callback.get("type") if isinstance(callback, dict) else None
        if kind in UNFREEZING_CALLBACKS and embedder_mode != FINE_TUNING:
            recipe = UNFREEZING_CALLBACKS[kind]
            return recipe if embedder_mode == FEATURE_EXTRACTION else f"{recipe} ({short})"
    return short


def _run_folder(archive_file: Path) -> Optional[Path]:
    folder = archive_file if archive_file.is_dir() else archive_file.parent
    return folder if is_run_dir(folder) else None


def load_plugin_archive(archive_file: Path) -> LoadedRun:
    """
    Loads `archive_file` (a `model.tar.gz`, or the serialization folder holding it) on the CPU
    with AllenNLP's `load_archive` (through `allennlp_tune.compat`: members are checked before
    extraction, weights load with `weights_only=True`) and finds the plugin's embedder in it.
    Raises a `ConfigurationError` naming the archive and the fix when the file is missing, is
    not an archive, or holds a model without exactly one `tune_*` embedder.
    """
    from allennlp.models.archival import load_archive

    if not archive_file.exists():
        raise ConfigurationError(
            f"ARCHIVE {archive_file} does not exist; give the model.tar.gz that `allennlp train` "
            "wrote in the run's serialization folder."
        )
    from allennlp_tune.quiet import quiet_loggers
    from allennlp_tune_preimport.cli import verbose_requested

    # AllenNLP logs each config parameter, the vocabulary and every initialised weight at INFO
    # while it loads an archive (about 200 lines): not before this command's one line of
    # result, unless asked for (-v / ALLENNLP_TUNE_VERBOSE=1).
    loud = verbose_requested()
    try:
        with quiet_loggers(*(() if loud else ("allennlp", "allennlp_tune"))):
            archive = load_archive(str(archive_file), cuda_device=-1)
    except FileNotFoundError as error:
        raise ConfigurationError(
            f"ARCHIVE {archive_file} is not a model archive ({error}); give the model.tar.gz "
            "that `allennlp train` wrote, or its serialization folder."
        ) from None
    model = archive.model
    model.eval()
    embedders = find_plugin_embedders(model)
    if len(embedders) != 1:
        token_embedders = sorted(
            {
                type(module).__name__
                for module in model.modules()
                if isinstance(module, TokenEmbedder)
            }
        )
        found = "none" if not embedders else ", ".join(name for name, _ in embedders)
        raise ConfigurationError(
            f"ARCHIVE {archive_file} is not one of allennlp-tune's models: tune-export needs "
            f"exactly one tune_transformer, tune_transformer_mismatched or tune_elmo token "
            f"embedder in the model, found {found} (its {type(model).__name__} has the token "
            f"embedders {', '.join(token_embedders) or 'none'}). Export a run trained with the "
            "plugin's embedders (the tune-grid / tune-compare configs use them)."
        )
    embedder_path, outer = embedders[0]
    embedder = (
        outer._matched_embedder if isinstance(outer, TuneTransformerMismatchedEmbedder) else outer
    )
    config = archive.config.as_dict(quiet=True)
    mode = recipe_name(embedder.mode, config.get("trainer"))
    folder = _run_folder(archive_file)
    run = load_run(folder) if folder is not None else None
    return LoadedRun(archive_file, archive, embedder_path, embedder, mode, run)


def write_json(path: Path, data: Dict[str, Any]) -> None:
    """Writes `data` as indented JSON (keys in the given order) with a final newline."""
    with open(path, "w", encoding="utf-8") as file:
        json.dump(data, file, indent=2)
        file.write("\n")
