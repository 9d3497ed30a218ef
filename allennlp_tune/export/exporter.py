"""
`export_archive`: one archive of the plugin into one folder that needs no AllenNLP to use.

```
DIR/
  README.md          the model card (card.py)
  encoder/           transformers folder + tokenizer (fe, ft, sf, bitfit; encoder.py)
  adapter/           peft LoRA adapter + tokenizer (lora; lora.py)
  scalar_mix.json    when the embedder mixes layers (head.py)
  head.safetensors   the task head's weights (head.py)
  head.json          its model type, config, tensor shapes and label vocabulary
```

Everything is written into a hidden folder beside `DIR` first and moved into place at the end,
so a failed export leaves no half-written `DIR` behind.
"""

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Union

from allennlp.common.checks import ConfigurationError

from allennlp_tune.export.archive import check_output_dir, load_plugin_archive
from allennlp_tune.export.card import ADAPTER_DIR, ENCODER_DIR, write_card
from allennlp_tune.export.encoder import EncoderExport, export_encoder
from allennlp_tune.export.head import export_head, export_scalar_mix
from allennlp_tune.export.lora import AdapterExport, export_adapter
from allennlp_tune.modes import LORA
from allennlp_tune.rundir.folders import make_folder_problem

logger = logging.getLogger(__name__)


@dataclass
class ExportResult:
    """
    What `export_archive` wrote into `directory`.

    # Parameters

    directory : `Path`
    mode : `str`
        The run's recipe (`fe`, `ft`, `sf`, `bitfit`, `lora`, ...).
    encoder : `Union[EncoderExport, AdapterExport, None]`
        The encoder export; `None` with `head_only`.
    scalar_mix : `Optional[Dict[str, Any]]`
        `scalar_mix.json`, `None` when the embedder selects one layer.
    head : `Dict[str, Any]`
        `head.json`.
    """

    directory: Path
    mode: str
    encoder: Union[EncoderExport, AdapterExport, None]
    scalar_mix: Optional[Dict[str, Any]]
    head: Dict[str, Any]


def export_archive(
    archive_file: Union[str, Path], output_dir: Union[str, Path], head_only: bool = False
) -> ExportResult:
    """
    Exports the plugin archive `archive_file` into the new or empty folder `output_dir`.

    # Parameters

    archive_file : `Union[str, Path]`
        A `model.tar.gz` of a run with a `tune_transformer`, `tune_transformer_mismatched` or
        `tune_elmo` embedder, or the serialization folder holding it.
    output_dir : `Union[str, Path]`
        Created; an existing folder must be empty (nothing is overwritten).
    head_only : `bool`, optional (default = `False`)
        Export the head, the scalar mix and the card without the encoder (the only export of
        an ELMo run: ELMo has no transformers format).
    """
    archive_file, output_dir = Path(archive_file), Path(output_dir)
    check_output_dir(output_dir)
    loaded = load_plugin_archive(archive_file)
    if loaded.is_elmo and not head_only:
        raise ConfigurationError(
            f"ARCHIVE {archive_file} is an ELMo run (tune_elmo), which has no transformers or "
            "peft format to export the encoder to; add --head-only to export the head, the "
            "scalar-mix weights and the model card (the ELMo weights stay in the archive)."
        )
    staging = output_dir.parent / f".{output_dir.name}.tune-export-{os.getpid()}"
    if staging.exists():
        raise ConfigurationError(
            f"{staging} exists (left by an interrupted tune-export?); remove it and run again."
        )
    try:
        staging.mkdir(parents=True)
    except OSError as error:  # the checks above passed, yet the filesystem refuses
        problem = make_folder_problem(staging, error)
        raise ConfigurationError(f"DIR {output_dir} {problem}") from error
    try:
        encoder: Union[EncoderExport, AdapterExport, None] = None
        if not head_only:
            if loaded.embedder.mode == LORA:
                encoder = export_adapter(loaded.embedder, staging / ADAPTER_DIR)
            else:
                encoder = export_encoder(loaded.embedder, staging / ENCODER_DIR)
        mix = export_scalar_mix(loaded, staging)
        head = export_head(loaded, staging)
        write_card(loaded, staging, encoder, mix)
        check_output_dir(output_dir)
        if output_dir.is_dir():
            output_dir.rmdir()  # empty (checked just above)
        os.replace(staging, output_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    logger.info("tune-export: %s -> %s (%s)", archive_file, output_dir, loaded.mode)
    return ExportResult(output_dir, loaded.mode, encoder, mix, head)
