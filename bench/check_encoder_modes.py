"""
A real encoder folder through `TuneTransformerEmbedder` in every mode, without training: for each
mode its layer groups (which must hold every encoder parameter once), the group that holds
MPNet's relative position bias, the trainable parameters, and one forward pass (with a backward
pass where anything trains) on two real sentences; in fe, a second pass read from the feature
cache must equal the first. sf is fe, then `unfreeze()` of the top group, then of all of them.

    .venv/bin/python bench/check_encoder_modes.py FOLDER
    # e.g. FOLDER=$(allennlp tune-data fetch mpnet): all-mpnet-base-v2, 12 x 768

LoRA needs peft (the lora extra). It prints one line per mode; bench/README.md ("MPNet
(12 x 768)") has its output for all-mpnet-base-v2.
"""

import argparse
import tempfile
import time
from typing import Any, Dict, List, Tuple

import torch
from transformers import AutoTokenizer

import allennlp_tune  # noqa: F401  (registers the components)
from allennlp_tune.modules.token_embedders import TuneTransformerEmbedder

SENTENCES = ["A man is playing a guitar.", "Nobody is playing an instrument here at all."]


def trainable(embedder: torch.nn.Module) -> int:
    return sum(p.numel() for p in embedder.parameters() if p.requires_grad)


def check(folder: str, label: str, options: Dict[str, Any], inputs: Tuple[torch.Tensor, ...]):
    ids, mask = inputs
    start = time.time()
    embedder = TuneTransformerEmbedder(folder, **options)
    groups = embedder.layer_groups()
    grouped = [name for _, parameters in groups for name, _ in parameters]
    encoder = [n for n, _ in embedder.named_parameters() if n.startswith("transformer_model.")]
    assert sorted(grouped) == sorted(encoder) and len(set(grouped)) == len(grouped), label
    bias = [group for group, ps in groups if any("relative_attention_bias" in n for n, _ in ps)]
    weights = sum(
        p.numel() for n, p in embedder.named_parameters() if n in encoder and "lora_" not in n
    )
    embedder.train()
    output = embedder(ids, mask)  # (batch, wordpieces, hidden)
    if trainable(embedder):
        output.pow(2).mean().backward()
    line = (
        f"{label:14s} groups {len(groups)} ({groups[0][0]}..{groups[-1][0]}), position bias in "
        f"{bias or 'none'}, encoder {weights / 1e6:.2f} M, trainable {trainable(embedder):,}, "
        f"output {tuple(output.shape)} finite {bool(torch.isfinite(output).all())}"
    )
    if options.get("feature_cache") is not None:
        embedder.eval()
        with torch.no_grad():
            first, second = embedder(ids, mask), embedder(ids, mask)
        line += f", cached pass max |diff| {float((first - second).abs().max()):.1e}"
    print(f"{line}, {time.time() - start:.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="a transformers encoder folder")
    args = parser.parse_args()
    batch = AutoTokenizer.from_pretrained(args.folder)(SENTENCES, padding=True, return_tensors="pt")
    inputs = (batch["input_ids"], batch["attention_mask"].bool())
    torch.manual_seed(0)
    cases: List[Tuple[str, Dict[str, Any]]] = [
        ("fe (+cache)", {"feature_cache": {"directory": tempfile.mkdtemp()}}),
        ("ft", {"mode": "fine_tuning"}),
        ("bitfit", {"mode": "bitfit"}),
        ("lora", {"mode": "lora", "lora": {"r": 8}}),
        ("lora q,k,v,o", {"mode": "lora", "lora": {"r": 8, "target_modules": list("qkvo")}}),
        ("top:2 (ft)", {"mode": "fine_tuning", "tuned_groups": "top:2"}),
        ("bottom:2 (ft)", {"mode": "fine_tuning", "tuned_groups": "bottom:2"}),
    ]
    for label, options in cases:
        check(args.folder, label, options, inputs)
    embedder = TuneTransformerEmbedder(args.folder)
    counts = [trainable(embedder)]
    embedder.unfreeze(1)
    counts.append(trainable(embedder))
    embedder.unfreeze(len(embedder.layer_groups()))
    counts.append(trainable(embedder))
    embedder.train()
    embedder(*inputs).pow(2).mean().backward()
    print(f"{'sf':14s} trainable frozen {counts[0]:,}, top group {counts[1]:,}, all {counts[2]:,}")


if __name__ == "__main__":
    main()
