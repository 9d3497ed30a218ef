"""
What proving a run's results costs (issue #70): the report of a results folder of 50 runs and a
rerun of a complete grid, timed in this process, for comparison with the same script run against
an older checkout (`PYTHONPATH=<checkout>`).

It builds, in a temporary folder, a grid of `--runs` runs (two configs, fe and ft, of
`--runs / 2` seeds each) through the checkout's own `run_grid` with its seams: a fake `allennlp
train` that writes `config.json`, `metrics.json` and a `model.tar.gz` of `--archive-mb` MB, and a
fake prediction that writes `dev_predictions.jsonl` of `--examples` examples whose accuracy is
the score in `metrics.json` (as a real run's is). A checkout with digests records them as the
runs finish, so each checkout is timed on the folder it would have written. Then `--repeat`
times each, the median wall seconds of:

- report: `report_from_dirs([folder])` and its Markdown (the paired bootstrap included, at
  `--replicates`), as `tune-report` does after its imports;
- rerun: `run_grid` of the same configs and seeds over the complete folder (it trains nothing:
  the fake training raises if called), as `tune-grid` or `tune-compare` does after its imports.

    .venv/bin/python bench/bench_digests.py [--runs 50] [--examples 872] [--archive-mb 20]
        [--repeat 5] [--replicates 2000]
    PYTHONPATH=/path/to/abacd86 .venv/bin/python bench/bench_digests.py   # the baseline

The target: each median at most 1.10 x the baseline's, on an idle machine (seconds on a shared
one vary too much to compare). The archive is hashed once, when a run finishes; a rerun and a
report only stat it (`rundir.digests`), so `--archive-mb` should not move either median.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

CONFIG = """{
  random_seed: std.parseInt(std.extVar("TUNE_SEED")),
  trainer: {validation_metric: "+accuracy"},
}"""
MODES = {"fe": 0.80, "ft": 0.90}


def _right(mode: str, seed: int, examples: int) -> int:
    """How many dev examples a run gets right: its mode's accuracy, shifted by the seed."""
    return min(examples, int(examples * MODES[mode]) + seed % 7 - 3)


def _mode_seed(run_dir: Path):
    return run_dir.parent.name.rsplit("_", 1)[1], int(run_dir.name.split("_")[1])


def fake_training(examples: int, archive_bytes: int) -> Callable:
    """An `allennlp train` stand-in that writes what the grid reads of a finished run."""

    def train(command: List[str], environment: Dict[str, str], log_path: Path) -> int:
        run_dir = Path(command[command.index("-s") + 1])
        mode, seed = _mode_seed(run_dir)
        log_path.write_text("training\n")
        run_dir.mkdir(parents=True)
        config = {"random_seed": seed, "trainer": {"validation_metric": "+accuracy"}}
        (run_dir / "config.json").write_text(json.dumps(config))
        accuracy = _right(mode, seed, examples) / examples
        metrics = {"best_epoch": 1, "epoch": 2, "best_validation_accuracy": accuracy}
        (run_dir / "metrics.json").write_text(json.dumps(metrics))
        with open(run_dir / "model.tar.gz", "wb") as archive:
            block = bytes(range(256)) * 4096  # 1 MiB
            for _ in range(archive_bytes // len(block)):
                archive.write(block)
        return 0

    return train


def fake_predict(examples: int) -> Callable:
    """A prediction stand-in: dev predictions that give the run its score."""

    def predict(run_dir: Path, environment: Dict[str, str], log_path: Path):
        mode, seed = _mode_seed(run_dir)
        right = _right(mode, seed, examples)
        with open(run_dir / "dev_predictions.jsonl", "w", encoding="utf-8") as handle:
            for index in range(examples):
                gold = "positive" if index % 2 else "negative"
                wrong = "negative" if index % 2 else "positive"
                line = {
                    "index": index,
                    "gold": gold,
                    "prediction": gold if index < right else wrong,
                }
                handle.write(json.dumps(line) + "\n")
        return None

    return predict


def never(command, environment, log_path) -> int:
    raise AssertionError(f"the rerun of a complete grid trained {command}")


def median_seconds(work: Callable[[], object], repeat: int) -> List[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="runs in the folder (default 50)")
    parser.add_argument("--examples", type=int, default=872, help="dev examples (SST-2's 872)")
    parser.add_argument("--archive-mb", type=int, default=20, help="each archive's size in MB")
    parser.add_argument("--repeat", type=int, default=5, help="timed repeats (default 5)")
    parser.add_argument("--replicates", type=int, default=2000, help="the report's bootstrap")
    args = parser.parse_args()

    import allennlp_tune
    from allennlp_tune.experiments.grid import run_grid
    from allennlp_tune.reporting.render import render_markdown
    from allennlp_tune.reporting.report import report_from_dirs

    seeds = list(range(1, args.runs // 2 + 1))
    with tempfile.TemporaryDirectory(prefix="bench_digests_") as folder:
        folder = Path(folder)
        (folder / "configs").mkdir()
        configs = []
        for mode in MODES:
            config = folder / "configs" / f"sst2_bench_{mode}.jsonnet"
            config.write_text(CONFIG)
            configs.append(config)
        results = folder / "results"
        options = dict(plan=False, progress=False, predict=fake_predict(args.examples))
        training = fake_training(args.examples, args.archive_mb * 2**20)
        run_grid(configs, seeds, results, runner=training, **options)

        def report() -> str:
            return render_markdown(report_from_dirs([results], replicates=args.replicates))

        def rerun() -> object:
            return run_grid(configs, seeds, results, runner=never, **options)

        text = report()
        assert f"{len(seeds) * 2} runs found" in text, text[:400]
        print(f"checkout: {Path(allennlp_tune.__file__).parent.parent}")
        print(
            f"{len(seeds) * 2} runs, {args.examples} dev examples, archives of {args.archive_mb} "
            f"MB, {args.replicates} replicates, {args.repeat} repeats"
        )
        for name, work in (("report", report), ("rerun", rerun)):
            times = median_seconds(work, args.repeat)
            spread = ", ".join(f"{t:.3f}" for t in times)
            print(f"{name}: median {statistics.median(times):.3f} s ({spread})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
