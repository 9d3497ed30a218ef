"""
The model card (`README.md`) of an export: the task, the mode and what it means for the
encoder's weights, the encoder, the dev score from the run's `metrics.json` and the cost from
its `cost.json` (when the archive sits in its run folder), the files, and how to load them.
Every statement comes from the archive, the run folder or the export itself.
"""

from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from allennlp_tune.export.archive import LoadedRun
from allennlp_tune.export.encoder import EncoderExport
from allennlp_tune.export.head import HEAD_INFO_NAME, HEAD_WEIGHTS_NAME, SCALAR_MIX_NAME
from allennlp_tune.export.lora import AdapterExport
from allennlp_tune.modes import MODES
from allennlp_tune.rundir import METRICS_NAME, OK

CARD_NAME = "README.md"
ENCODER_DIR = "encoder"
ADAPTER_DIR = "adapter"

MODE_MEANINGS = {
    **{name: mode.meaning for name, mode in MODES.items()},
    "gradual unfreezing": "gradual unfreezing: the encoder's layers were unfrozen top down",
}


def _score(loaded: LoadedRun) -> str:
    run = loaded.run
    if run is None:
        return f"not known: the archive has no run folder beside it (no {METRICS_NAME})"
    if run.status != OK or run.value is None:
        return f"not known: {run.detail or run.status}"
    sign = "higher" if run.higher_is_better else "lower"
    return (
        f"{run.metric} = {run.value:.4f} ({sign} is better; best_validation_{run.metric} in "
        f"{METRICS_NAME})"
    )


def _cost(cost: Optional[Dict[str, Any]]) -> Optional[str]:
    """One line from `cost.json` (see `allennlp_tune.training.callbacks.cost`), or `None`."""
    if not isinstance(cost, dict):
        return None
    parts = []

    def number(key: str) -> Optional[Union[int, float]]:
        value = cost.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    trainable, total = number("trainable_params"), number("total_params")
    if trainable is not None and total is not None:
        parts.append(f"{trainable:,} of {total:,} parameters trained")
    encoder_trainable, encoder_total = number("encoder_trainable_params"), number("encoder_params")
    if encoder_trainable is not None and encoder_total is not None:
        parts.append(f"{encoder_trainable:,} of the encoder's {encoder_total:,}")
    seconds, epochs = number("mean_epoch_seconds"), number("epochs")
    if seconds is not None:
        parts.append(
            f"{seconds:.1f} s per epoch" + (f" over {epochs} epochs" if epochs is not None else "")
        )
    if number("peak_rss_mb") is not None:
        parts.append(f"peak RSS {cost['peak_rss_mb']:.0f} MB")
    if number("peak_gpu_mb") is not None:
        parts.append(f"peak GPU memory {cost['peak_gpu_mb']:.0f} MB")
    return "; ".join(parts) or None


def _encoder_state(loaded: LoadedRun, export: Union[EncoderExport, AdapterExport, None]) -> str:
    if isinstance(export, AdapterExport):
        options = export.options
        return (
            f"the pretrained `{export.base_model}` plus a LoRA adapter (r={options['r']}, "
            f"alpha={options['alpha']}, on {', '.join(options['target_modules'])}; "
            f"{export.lora_tensors} matrices) in `{ADAPTER_DIR}/`"
        )
    if isinstance(export, EncoderExport):
        if export.changed == 0 and export.compared == export.tensors:
            return (
                f"the pretrained weights of `{loaded.model_name}`, unchanged (all "
                f"{export.tensors} tensors equal); `{ENCODER_DIR}/` is a copy of them with the "
                "tokenizer"
            )
        return (
            f"trained: {export.changed} of {export.tensors} tensors differ from "
            f"`{loaded.model_name}`'s pretrained weights"
            + (
                f" ({export.tensors - export.compared} not in them)"
                if export.compared < export.tensors
                else ""
            )
        )
    return "not exported (--head-only); it stays in the archive"


def _files(
    export: Union[EncoderExport, AdapterExport, None], mix: Optional[Dict[str, Any]]
) -> List[str]:
    files = []
    if isinstance(export, EncoderExport):
        restored = " (the pretrained pooler put back: the run does not use it)"
        files.append(
            f"- `{ENCODER_DIR}/`: the encoder as a transformers folder (config, safetensors "
            f"weights, tokenizer){restored if export.pooler_restored else ''}."
        )
    if isinstance(export, AdapterExport):
        files.append(
            f"- `{ADAPTER_DIR}/`: the peft LoRA adapter (adapter_config.json, "
            "adapter_model.safetensors) and the tokenizer."
        )
    if mix is not None:
        files.append(
            f"- `{SCALAR_MIX_NAME}`: the scalar mix over layers {mix['layers']} (weights, gamma)."
        )
    files.append(
        f"- `{HEAD_WEIGHTS_NAME}`, `{HEAD_INFO_NAME}`: the task head's weights, and its model "
        "type, config, tensor shapes and label vocabulary."
    )
    return files


def _usage(
    loaded: LoadedRun, export: Union[EncoderExport, AdapterExport, None], mix: Optional[Dict]
) -> List[str]:
    imports = ["from safetensors.torch import load_file"]
    code: List[str] = []
    if isinstance(export, EncoderExport):
        imports.append("from transformers import AutoModel, AutoTokenizer")
        code += [
            f'tokenizer = AutoTokenizer.from_pretrained("{ENCODER_DIR}")',
            f'encoder = AutoModel.from_pretrained("{ENCODER_DIR}").eval()',
        ]
    elif isinstance(export, AdapterExport):
        imports = ["from peft import PeftModel", *imports]
        imports.append("from transformers import AutoModel, AutoTokenizer")
        code += [
            f'tokenizer = AutoTokenizer.from_pretrained("{ADAPTER_DIR}")',
            f'base = AutoModel.from_pretrained("{export.base_model}")',
            f'encoder = PeftModel.from_pretrained(base, "{ADAPTER_DIR}").eval()',
        ]
    if export is not None:
        code += [
            'inputs = tokenizer("an example sentence", return_tensors="pt")',
            "hidden_states = encoder(**inputs, output_hidden_states=True).hidden_states",
        ]
        if mix is not None:
            code += [
                f'mix = json.load(open("{SCALAR_MIX_NAME}"))',
                "features = mix['gamma'] * sum(",
                "    weight * hidden_states[layer]",
                "    for weight, layer in zip(mix['weights'], mix['layers'])",
                ")",
            ]
        else:
            code.append(f"features = hidden_states[{loaded.embedder._layers[0]}]")
    code += [
        f'head = load_file("{HEAD_WEIGHTS_NAME}")  # the model\'s weights outside the embedder',
        f'labels = json.load(open("{HEAD_INFO_NAME}"))["labels"]',
    ]
    lines = ["```python", "import json", "", *imports, "", *code, "```"]
    if mix is not None and mix["do_layer_norm"]:
        lines += ["", "The mix normalises each layer first (`do_layer_norm`), as `ScalarMix` does."]
    return lines


def write_card(
    loaded: LoadedRun,
    directory: Path,
    export: Union[EncoderExport, AdapterExport, None],
    mix: Optional[Dict[str, Any]],
) -> str:
    """
    Writes `README.md` into `directory` and returns its text.

    # Parameters

    loaded : `LoadedRun`
        The loaded archive and run folder.
    directory : `Path`
        The export folder.
    export : `Union[EncoderExport, AdapterExport, None]`
        What the encoder export wrote; `None` with `--head-only`.
    mix : `Optional[Dict[str, Any]]`
        `scalar_mix.json`'s content, `None` without a mix.
    """
    encoder = loaded.model_name or "ELMo (the archive's options and weight files)"
    label = loaded.run.name.encoder if loaded.run and loaded.run.name else None
    meaning = MODE_MEANINGS.get(loaded.mode.split(" (")[0], loaded.mode)
    rows = [
        ("Task", f"`{loaded.task}`"),
        ("Mode", f"`{loaded.mode}`, {meaning}"),
        ("Encoder", f"`{encoder}`" + (f" (`{label}`)" if label else "")),
        ("Encoder weights", _encoder_state(loaded, export)),
        ("Dev score", _score(loaded)),
    ]
    cost = _cost(loaded.run.cost if loaded.run else None)
    if cost is not None:
        rows.append(("Cost (cost.json)", cost))
    archive = loaded.archive_file
    source = f"{archive.parent.name}/{archive.name}" if archive.is_file() else archive.name
    lines = [
        f"# {loaded.task}: {label or Path(encoder).name}, {loaded.mode}",
        "",
        f"Exported by `allennlp tune-export` from `{source}` (allennlp-tune).",
        "",
        "| | |",
        "|---|---|",
        *[f"| {name} | {value} |" for name, value in rows],
        "",
        "## Files",
        "",
        *_files(export, mix),
        "",
        "## Use",
        "",
        *_usage(loaded, export, mix),
        "",
    ]
    text = "\n".join(lines)
    (directory / CARD_NAME).write_text(text, encoding="utf-8")
    return text
