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
"""

import os
from typing import Dict

# name -> what it sets (the README's ext var table is written from the same list).
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
    "TUNE_LORA_R": "lora: rank of the adapters",
    "TUNE_LORA_ALPHA": "lora: scaling numerator (the update is scaled by alpha / r)",
    "TUNE_AUTOCAST": "accelerators: bfloat16 autocast of the forward passes (bfloat16)",
    "TUNE_COMPILE": "accelerators: torch.compile mode (default, reduce-overhead)",
    "TUNE_STATIC_SHAPES": "accelerators: the static_shapes collator (true/false)",
    "TUNE_FUSED_ADAM": "accelerators: fused AdamW, tune_adamw (true/false)",
}


def export_config_defaults(environ=os.environ) -> None:
    """Sets the unset `CONFIG_VARS` to "" (see the module doc)."""
    for name in CONFIG_VARS:
        environ.setdefault(name, "")
