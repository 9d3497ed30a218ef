"""
The ext vars that the configs read (`training_config/`, `allennlp_tune/configs/`).

AllenNLP passes the environment to Jsonnet as ext vars, and `std.extVar` fails on a variable
that is not set: Jsonnet cannot test whether one exists. So importing the plugin sets every
variable below that the user did not set to the empty string, and the configs read them with
`allennlp_tune/configs/vars.libsonnet`'s `get(name, default)`, which treats "" as "use the
config's default".
A variable the user sets always wins; the real-run defaults live in the configs themselves.

The encoder's width is no variable: the task networks read it off the embedder of the model
they are built with (`allennlp_tune/models/input_size.py`), so pointing a config at another
encoder is one variable, `TUNE_BERT_MODEL` or `TUNE_ELMO_OPTIONS` / `TUNE_ELMO_WEIGHTS`.

`check_ext_vars` refuses an `--ext-var` of tune-grid or tune-compare that nothing reads (a
misspelt `TUNE_LRR` would otherwise be ignored and the run train with the default): the known
names are `CONFIG_VARS`, `RUNTIME_VARS` and every variable that the configs being run, or the
Jsonnet files they import, read (`ext_vars_read_by`).
"""

import difflib
import os
import re
from pathlib import Path
from typing import Dict, Iterable, Mapping, Sequence, Set

# name -> what it sets (the ext var table of docs/GRID.md is written from the same list).
CONFIG_VARS: Dict[str, str] = {
    "TUNE_DATA_DIR": "the data folder (default ../shared/data beside the repository)",
    "TUNE_BERT_MODEL": "transformers model name or folder (bert-base-uncased; -cased for NER)",
    "TUNE_ELMO_OPTIONS": "ELMo options file, path or URL (the original 5.5B-word ELMo)",
    "TUNE_ELMO_WEIGHTS": "ELMo weight file, path or URL",
    "TUNE_EPOCHS": "number of epochs",
    "TUNE_BATCH_SIZE": "batch size",
    "TUNE_MAX_INSTANCES": "read at most this many instances per file (default all)",
    "TUNE_CUDA_DEVICE": "GPU index, -1 for the CPU",
    "TUNE_CUDA_DEVICES": "distributed variant: JSON list of devices per node, e.g. [0,1]",
    "TUNE_NUM_NODES": "distributed variant: number of machines",
    "TUNE_PRIMARY_ADDRESS": "distributed variant: address of the node with --node-rank 0",
    "TUNE_PRIMARY_PORT": "distributed variant: its port (needed with several nodes)",
    "TUNE_SEED": "random_seed, numpy_seed and pytorch_seed",
    "TUNE_LR": "learning rate (the encoder's top group when fine-tuning)",
    "TUNE_HEAD_LR": "learning rate of the task head when fine-tuning",
    "TUNE_DROPOUT": "dropout of the task network or head",
    "TUNE_WEIGHT_DECAY": "decoupled weight decay (AdamW)",
    "TUNE_POOLING": "BERT fine-tuning head: cls (paper) or mean (sentence-embedding models)",
    "TUNE_FEATURE_CACHE": "feature extraction: cache the frozen features on disk (true/false)",
    "TUNE_FROZEN_EPOCHS": "stack-then-finetune: most epochs of the frozen phase",
    "TUNE_MAX_GAP": "stack-then-finetune: end the frozen phase when train - dev exceeds this",
    "TUNE_PATIENCE": "feature extraction: stop after this many epochs without improvement",
    "TUNE_FE_HEAD": "feature extraction: the frozen network, paper (BCN/ESIM/CRF), linear or mlp",
    "TUNE_LORA_R": "lora: rank of the adapters",
    "TUNE_LORA_ALPHA": "lora: scaling numerator (the update is scaled by alpha / r)",
    "TUNE_AUTOCAST": "accelerators: bfloat16 autocast of the forward passes (bfloat16)",
    "TUNE_COMPILE": "accelerators: torch.compile mode (default, reduce-overhead)",
    "TUNE_STATIC_SHAPES": "accelerators: the static_shapes collator (true/false)",
    "TUNE_FUSED_ADAM": "accelerators: fused AdamW, tune_adamw (true/false)",
}


# The variables of a training recipe: a run given any of them (`--ext-var`) trained at a recipe
# set by hand, not at its config's (the report's answer says which).
RECIPE_VARS = (
    "TUNE_LR",
    "TUNE_HEAD_LR",
    "TUNE_EPOCHS",
    "TUNE_BATCH_SIZE",
    "TUNE_DROPOUT",
    "TUNE_WEIGHT_DECAY",
    "TUNE_PATIENCE",
    "TUNE_FE_HEAD",
    "TUNE_FROZEN_EPOCHS",
    "TUNE_LORA_R",
    "TUNE_LORA_ALPHA",
)


def export_config_defaults(environ=os.environ) -> None:
    """Sets the unset `CONFIG_VARS` to "" (see the module doc)."""
    for name in CONFIG_VARS:
        environ.setdefault(name, "")


# Read from a run's environment by the plugin's own code rather than by a config.
RUNTIME_VARS: Dict[str, str] = {
    "TUNE_FEATURE_CACHE_DIR": "feature extraction: the folder of the frozen features' cache",
}

# `import "file"` (not `importstr` / `importbin`: they read text and bytes, never a variable).
_IMPORT = re.compile(r"\bimport\s+(?P<quote>[\"'])(?P<path>[^\"']+)(?P=quote)")
# `std.extVar("X")`, and a name passed to any function: `vars.get("X", ...)`, `env("X")`.
_EXT_VAR = re.compile(r"\bextVar\s*\(\s*(?P<quote>[\"'])(?P<name>[^\"']+)(?P=quote)")
_CALLED_WITH = re.compile(r"[\w.]\s*\(\s*(?P<quote>[\"'])(?P<name>[A-Za-z_]\w*)(?P=quote)")
# An upper-case string anywhere, for a config that passes names around before reading them.
_UPPER_CASE = re.compile(r"(?P<quote>[\"'])(?P<name>[A-Z][A-Z0-9_]*)(?P=quote)")
_ENVIRONMENT_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


def jsonnet_texts(paths: Iterable[Path]) -> Dict[Path, str]:
    """The text of each Jsonnet file of `paths` and of every file it imports, recursively."""
    texts: Dict[Path, str] = {}
    pending = [Path(path).resolve() for path in paths]
    while pending:
        path = pending.pop()
        if path in texts or not path.is_file():
            continue
        texts[path] = path.read_text(encoding="utf-8", errors="replace")
        pending.extend(
            (path.parent / match["path"]).resolve() for match in _IMPORT.finditer(texts[path])
        )
    return texts


def _matches(pattern: "re.Pattern[str]", texts: Iterable[str]) -> Set[str]:
    return {match["name"] for text in texts for match in pattern.finditer(text)}


def ext_vars_read_by(texts: Iterable[str]) -> Set[str]:
    """
    The variables that Jsonnet `texts` read by name: `std.extVar("X")`, and an upper-case name
    passed to a function (`vars.get("TUNE_LR", 1e-3)`, `env("TUNE_SEED")`).
    """
    texts = list(texts)
    called = _matches(_CALLED_WITH, texts)
    return _matches(_EXT_VAR, texts) | {name for name in called if _ENVIRONMENT_NAME.match(name)}


def ext_vars_perhaps_read_by(texts: Iterable[str]) -> Set[str]:
    """
    Every name that Jsonnet `texts` could read as a variable: `ext_vars_read_by`'s, any string
    passed to a function and any upper-case string. A superset: no variable a config reads, even
    through a name built elsewhere, is refused.
    """
    texts = list(texts)
    return ext_vars_read_by(texts) | _matches(_CALLED_WITH, texts) | _matches(_UPPER_CASE, texts)


def check_ext_vars(
    ext_vars: Mapping[str, str],
    configs: Sequence[Path],
    snippets: Iterable[str] = (),
    option: str = "--ext-var",
) -> None:
    """
    Refuses a variable in `ext_vars` that neither the plugin (`CONFIG_VARS`, `RUNTIME_VARS`)
    nor the `configs`, the files they import, or the Jsonnet `snippets` (`--overrides`) read,
    naming the nearest known one.
    """
    from allennlp.common.checks import ConfigurationError

    plugin = set(CONFIG_VARS) | set(RUNTIME_VARS)
    unknown = [name for name in ext_vars if name not in plugin]
    if not unknown:
        return
    texts = [*jsonnet_texts(configs).values(), *snippets]
    accepted = plugin | ext_vars_perhaps_read_by(texts)
    known = sorted(plugin | ext_vars_read_by(texts))
    for name in unknown:
        if name in accepted:
            continue
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]}?" if close else "."
        raise ConfigurationError(
            f"{option} {name}={ext_vars[name]}: neither the plugin nor {_describe(configs)} "
            f"reads {name}{hint} Known: {', '.join(known)}."
        )


def _describe(configs: Sequence[Path], most: int = 3) -> str:
    names = [str(config) for config in configs[:most]]
    more = f" and {len(configs) - most} more" if len(configs) > most else ""
    return ("the config " if len(configs) == 1 else "the configs ") + ", ".join(names) + more
