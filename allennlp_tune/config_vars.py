"""
The ext vars that `training_config/` reads, and their defaults.

AllenNLP passes the environment to Jsonnet as ext vars, and `std.extVar` fails on a variable
that is not set: Jsonnet cannot test whether one exists. So importing the plugin sets every
variable below that the user did not set to the empty string, and the configs read them with
`common/vars.libsonnet`'s `get(name, default)`, which treats "" as "use the config's default".
A variable the user sets always wins; the real-run defaults live in the configs themselves.

Two defaults are read off the model files when those are local, so that pointing a config at
another encoder is one variable: `TUNE_BERT_DIM` from `TUNE_BERT_MODEL/config.json`
(`hidden_size`) and `TUNE_ELMO_DIM` from `TUNE_ELMO_OPTIONS` (2 x `lstm.projection_dim`).
"""

import json
import os
from pathlib import Path
from typing import Dict, Optional

# name -> what it sets (the README's ext var table is written from the same list).
CONFIG_VARS: Dict[str, str] = {
    "TUNE_DATA_DIR": "the data folder (default ../shared/data beside the repository)",
    "TUNE_BERT_MODEL": "transformers model name or folder (bert-base-uncased; -cased for NER)",
    "TUNE_BERT_DIM": "its hidden size (read from a local model folder, else 768)",
    "TUNE_ELMO_OPTIONS": "ELMo options file, path or URL (the original 5.5B-word ELMo)",
    "TUNE_ELMO_WEIGHTS": "ELMo weight file, path or URL",
    "TUNE_ELMO_DIM": "ELMo output size (read from a local options file, else 1024)",
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
}


def _bert_hidden_size(model: str) -> Optional[int]:
    config = Path(model) / "config.json"
    try:
        return int(json.loads(config.read_text(encoding="utf-8"))["hidden_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _elmo_output_size(options_file: str) -> Optional[int]:
    try:
        options = json.loads(Path(options_file).read_text(encoding="utf-8"))
        return 2 * int(options["lstm"]["projection_dim"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def export_config_defaults(environ=os.environ) -> None:
    """Sets the unset `CONFIG_VARS` to "" and derives the encoder sizes (see the module doc)."""
    if not environ.get("TUNE_BERT_DIM") and environ.get("TUNE_BERT_MODEL"):
        size = _bert_hidden_size(environ["TUNE_BERT_MODEL"])
        if size is not None:
            environ["TUNE_BERT_DIM"] = str(size)
    if not environ.get("TUNE_ELMO_DIM") and environ.get("TUNE_ELMO_OPTIONS"):
        size = _elmo_output_size(environ["TUNE_ELMO_OPTIONS"])
        if size is not None:
            environ["TUNE_ELMO_DIM"] = str(size)
    for name in CONFIG_VARS:
        environ.setdefault(name, "")
