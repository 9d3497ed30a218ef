"""
The GPU fast path (issue #47) against the plain eager loop, in one process, as one prepared call
on a lent GPU machine (scripts/device/gpu_check.sh, stage `speed`).

Parts, each written to `--out` (one JSON line per measurement) as soon as it is measured, so a
call cut short still returns what it measured:

- `throughput`: for each shape (`minilm`: the real all-MiniLM-L6-v2, 6 x 384; `base`: a
  randomly initialised BERT of BERT-base's shape, 12 x 768, built here from MiniLM's config and
  vocabulary), in rounds that alternate the three sides: the plain transformers loop
  (bench_finetune.baseline, fp32, eager), ours eager (training_config/sick_e_bert_ft.jsonnet as
  shipped) and ours fast (the same config with TUNE_AUTOCAST=bfloat16,
  TUNE_COMPILE=reduce-overhead, TUNE_STATIC_SHAPES=true, TUNE_FUSED_ADAM=true). Ours trains
  `--epochs` epochs and its steady epoch is the median of the epochs between the first (which
  carries compilation and graph capture) and the last (in which synchronising calls are
  counted); the plain loop runs two epochs and its second counts.
  For `minilm` both of ours validate on SICK-E dev each epoch, so the dev accuracy of eager and
  fast comes with the timing. In each of our fast runs: torch's dynamo counters (graph breaks,
  recompilations, cudagraph skips), the distinct batch shapes the step saw, and the synchronising
  CUDA calls of the last epoch (`torch.cuda.set_sync_debug_mode("warn")`), per step, with the
  lines that made them.
- `fe`: training_config/sick_e_bert_fe.jsonnet (frozen MiniLM, cached features), whose epochs
  after the first read the cache: its steady epoch against ours eager ft's.
- `sf`: training_config/sick_e_bert_sf.jsonnet with the fast path (TUNE_FROZEN_EPOCHS=1): how
  often the step was compiled (`captures`: once per set of trainable layer groups is expected).

    python3 bench/bench_gpu.py --model DIR --data DIR --out results.jsonl [--parts throughput fe sf]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from typing import Any, Dict, Optional

import torch
from allennlp.training.callbacks import TrainerCallback

sys.path.insert(0, os.path.dirname(__file__))
from bench_finetune import baseline, sick_pairs  # noqa: E402

FAST = {
    "TUNE_AUTOCAST": "bfloat16",
    "TUNE_COMPILE": "reduce-overhead",
    "TUNE_STATIC_SHAPES": "true",
    "TUNE_FUSED_ADAM": "true",
}
SYNC_MESSAGE = "called a synchronizing CUDA operation"


@TrainerCallback.register("bench_epoch_clock")
class EpochClock(TrainerCallback):
    """
    Times each training epoch (from its start to its last batch, so validation is left out),
    records the batch shapes, and counts synchronising CUDA calls in the last epoch.
    Results land in `EpochClock.last` (one trainer per process at a time).
    """

    last: Dict[str, Any] = {}

    def __init__(self, serialization_dir: str, num_epochs: int = 1) -> None:
        super().__init__(serialization_dir)
        self._num_epochs = num_epochs

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        self._sync()
        EpochClock.last = {"epoch_seconds": [], "shapes": Counter(), "syncs": Counter(), "steps": 0}
        self._epoch_start = time.perf_counter()
        self._last_batch = self._epoch_start
        self._counting = False
        if self._num_epochs == 1:
            self._start_counting()

    def on_batch(self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
                 is_training, is_primary=True, batch_grad_norm=None, **kwargs) -> None:  # fmt: skip
        if not is_training:
            return
        # No synchronisation here: it would keep the host from preparing the next batch while
        # the device runs this one's backward. The trainer's loss.item() waited for the forward,
        # so this clock is behind the device by at most one backward and optimizer step.
        self._last_batch = time.perf_counter()
        for batch in batch_inputs:
            EpochClock.last["shapes"][str(_shape(batch))] += 1
        if self._counting:
            EpochClock.last["steps"] += 1

    def on_epoch(self, trainer, metrics, epoch, is_primary=True, **kwargs) -> None:
        EpochClock.last["epoch_seconds"].append(self._last_batch - self._epoch_start)
        EpochClock.last.setdefault("dev", []).append(
            {k: v for k, v in metrics.items() if k.startswith("validation_") and "loss" not in k}
        )
        EpochClock.last["captures"] = getattr(trainer, "captures", None)
        if epoch == self._num_epochs - 2:
            self._start_counting()
        self._sync()
        self._epoch_start = time.perf_counter()

    def on_end(self, trainer, metrics=None, epoch=None, is_primary=True, **kwargs) -> None:
        if self._counting:
            torch.cuda.set_sync_debug_mode(0)
            warnings.showwarning = self._showwarning
            self._counting = False
        EpochClock.last["captures"] = getattr(trainer, "captures", None)

    def _start_counting(self) -> None:
        if not torch.cuda.is_available():
            return
        self._counting = True
        self._showwarning = warnings.showwarning
        warnings.simplefilter("always")

        def count(message, category, filename, lineno, file=None, line=None):
            if SYNC_MESSAGE not in str(message):
                return self._showwarning(message, category, filename, lineno, file, line)
            frames = [
                f"{os.path.basename(f.filename)}:{f.lineno}({f.name})"
                for f in traceback.extract_stack()[:-2]
                if "warnings" not in f.filename
            ]
            EpochClock.last["syncs"][" <- ".join(reversed(frames[-3:]))] += 1

        warnings.showwarning = count
        torch.cuda.set_sync_debug_mode("warn")

    @staticmethod
    def _sync() -> None:
        if torch.cuda.is_available():
            torch.cuda.synchronize()


def _shape(batch: Any) -> Any:
    """The shapes of a batch's tensors (nested dicts of tensors), as a sorted tuple."""
    shapes = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            shapes.append((prefix, tuple(value.shape)))
        elif isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else key, inner)

    walk("", batch)
    return tuple(sorted(shapes))


def ours(
    config: str,
    model: str,
    data: str,
    env: Dict[str, str],
    epochs: int,
    pairs: Optional[int],
    batch_size: int,
    validate: bool,
    device: int,
) -> Dict[str, Any]:
    """One `allennlp train` of `config` in this process, timed by `EpochClock`."""
    from allennlp.commands.train import train_model
    from allennlp.common import Params

    import allennlp_tune  # noqa: F401

    saved = dict(os.environ)
    os.environ.update(
        TUNE_DATA_DIR=data, TUNE_BERT_MODEL=model, TUNE_POOLING="mean", TUNE_EPOCHS=str(epochs),
        TUNE_BATCH_SIZE=str(batch_size), TUNE_CUDA_DEVICE=str(device), **env,
    )  # fmt: skip
    if pairs:
        os.environ["TUNE_MAX_INSTANCES"] = str(pairs)
    try:
        params = Params.from_file(config).as_dict()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    if not validate:
        params.pop("validation_data_path", None)
        params.pop("validation_dataset_reader", None)
    trainer = params["trainer"]
    trainer["callbacks"] = trainer.get("callbacks", []) + [
        {"type": "bench_epoch_clock", "num_epochs": trainer["num_epochs"]}
    ]
    if torch._dynamo is not None:
        torch._dynamo.utils.counters.clear()
    with tempfile.TemporaryDirectory(prefix="bench_gpu_") as out:
        train_model(Params(params), os.path.join(out, "run"))
    result = dict(EpochClock.last)
    seconds = result["epoch_seconds"]
    # The first epoch compiles and captures; the last counts synchronising calls, which slows it.
    steady = seconds[1:-1] or seconds[1:] or seconds
    result["steady_seconds"] = statistics.median(steady)
    result["shapes"] = len(result["shapes"])
    steps = result.pop("steps") or 1
    result["syncs_per_step"] = sum(result["syncs"].values()) / steps
    result["syncs"] = dict(result["syncs"].most_common(8))
    result["dynamo"] = {
        group: dict(values)
        for group, values in torch._dynamo.utils.counters.items()
        if group in ("stats", "graph_break", "recompiles", "inductor", "frames")
    }
    if torch.cuda.is_available():
        result["peak_gpu_mib"] = torch.cuda.max_memory_allocated() / 2**20
        torch.cuda.reset_peak_memory_stats()
    torch.compiler.reset()
    return result


def random_base(minilm: str, into: str) -> str:
    """A randomly initialised BERT of BERT-base's shape (12 x 768) with MiniLM's vocabulary."""
    import shutil

    from transformers import BertConfig, BertModel

    config = BertConfig.from_pretrained(minilm)
    config.update(dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                       intermediate_size=3072))  # fmt: skip
    torch.manual_seed(0)
    BertModel(config).save_pretrained(into)
    for name in os.listdir(minilm):
        if name.startswith(("tokenizer", "vocab", "special_tokens")):
            shutil.copy(os.path.join(minilm, name), into)
    return into


def summarise(path: str) -> None:
    """One short line per measurement of a results file."""
    for line in open(path, encoding="utf-8"):
        row = json.loads(line)
        keep = (
            "part",
            "shape",
            "round",
            "side",
            "steady_seconds",
            "epoch_seconds",
            "ratio",
            "syncs_per_step",
            "captures",
            "shapes",
            "peak_gpu_mib",
            "error",
            "step",
        )
        short = {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}
        short = {k: v for k, v in short.items() if k in keep}
        if "epoch_seconds" in short:
            short["epoch_seconds"] = [round(v, 2) for v in short["epoch_seconds"]]
        dev = [epoch.get("validation_accuracy") for epoch in row.get("dev", [])]
        if any(value is not None for value in dev):
            short["dev_accuracy"] = [round(value, 4) for value in dev if value is not None]
        graph = row.get("dynamo", {}).get("stats", {})
        if graph:
            short["dynamo_stats"] = graph
        print(json.dumps(short)[:600])


def main() -> None:
    if sys.argv[1:2] == ["--summarise"]:
        return summarise(sys.argv[2])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="the all-MiniLM-L6-v2 folder")
    parser.add_argument("--data", required=True, help="the data folder (sick/SICK.txt)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--parts", nargs="+", default=["throughput", "fe", "sf"])
    parser.add_argument("--shapes", nargs="+", default=["minilm", "base"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=None, help="default: all SICK-E train")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--deadline", type=float, default=1e9,
                        help="seconds after which no new step starts")  # fmt: skip
    args = parser.parse_args()
    device = f"cuda:{args.device}" if args.device >= 0 else "cpu"
    # On a CPU (a smoke run of this script) the same without compilation, which is slow there.
    fast = FAST if args.device >= 0 else {"TUNE_AUTOCAST": "bfloat16", "TUNE_STATIC_SHAPES": "true"}
    pairs = sick_pairs(args.data, args.pairs or 10**9)
    ft = "training_config/sick_e_bert_ft.jsonnet"

    def record(**fields: Any) -> None:
        fields["device"] = torch.cuda.get_device_name() if args.device >= 0 else "cpu"
        with open(args.out, "a", encoding="utf-8") as out:
            out.write(json.dumps(fields, default=str) + "\n")
        print(json.dumps(fields, default=str)[:1500], flush=True)

    state: Dict[str, Any] = {"ft_steady": None}
    began = time.perf_counter()

    def throughput(shape: str, round_: int) -> None:
        plain = [baseline(models[shape], pairs, args.batch_size, device) for _ in range(2)]
        record(part="throughput", shape=shape, round=round_, side="plain_eager",
               epoch_seconds=plain, steady_seconds=plain[-1], pairs=len(pairs))  # fmt: skip
        for side, env in (("ours_eager", {}), ("ours_fast", fast)):
            try:
                result = ours(ft, models[shape], args.data, env, args.epochs, args.pairs,
                              args.batch_size, shape == "minilm", args.device)  # fmt: skip
            except Exception as error:  # a failure is a result too
                record(part="throughput", shape=shape, round=round_, side=side,
                       error=f"{type(error).__name__}: {error}"[:2000])  # fmt: skip
                continue
            if side == "ours_eager" and shape == "minilm":
                state["ft_steady"] = result["steady_seconds"]
            record(part="throughput", shape=shape, round=round_, side=side, pairs=len(pairs),
                   **result)  # fmt: skip

    def fe(cache: bool = True) -> None:
        config = "training_config/sick_e_bert_fe.jsonnet"
        # Validated: its schedule (reduce_on_plateau) needs the dev metric.
        env = {} if cache else {"TUNE_FEATURE_CACHE": "false"}
        result = ours(config, args.model, args.data, env, args.epochs, args.pairs,
                      args.batch_size, True, args.device)  # fmt: skip
        ft_steady = state["ft_steady"]
        record(part="fe", side="fe_cached" if cache else "fe_uncached", ft_steady_seconds=ft_steady,
               ratio=(result["steady_seconds"] / ft_steady) if ft_steady else None,
               **result)  # fmt: skip

    def sf() -> None:
        # sf trains TUNE_FROZEN_EPOCHS + 3 epochs, whatever TUNE_EPOCHS says.
        env = dict(fast, TUNE_FROZEN_EPOCHS="1")
        result = ours("training_config/sick_e_bert_sf.jsonnet", args.model, args.data, env,
                      args.epochs, 1024, args.batch_size, True, args.device)  # fmt: skip
        record(part="sf", side="sf_fast", **result)

    # The first round of every shape, then fe and sf, then the later rounds: a call cut short by
    # the deadline has one of everything.
    steps = [(throughput, (shape, 0)) for shape in args.shapes if "throughput" in args.parts]
    steps += [(fe, (cache,)) for cache in (True, False) if "fe" in args.parts]
    steps += [(sf, ()) for _ in ["sf"] if "sf" in args.parts]
    steps += [
        (throughput, (shape, round_))
        for round_ in range(1, args.rounds)
        for shape in args.shapes
        if "throughput" in args.parts
    ]
    with tempfile.TemporaryDirectory(prefix="bench_gpu_base_") as base_dir:
        models = {"minilm": args.model}
        if "base" in args.shapes and "throughput" in args.parts:
            models["base"] = random_base(args.model, base_dir)
        for step, step_args in steps:
            if time.perf_counter() - began > args.deadline:
                record(part="skipped", step=step.__name__, args=step_args, after=args.deadline)
                continue
            step(*step_args)


if __name__ == "__main__":
    main()
