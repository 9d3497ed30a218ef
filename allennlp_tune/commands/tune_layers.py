"""
`allennlp tune-layers`: which layer groups to fine-tune, predicted before the sweep from the
relative gradient norm (RGN) of each group at the pretrained weights
(`allennlp_tune.analysis.layer_signal`).

```
allennlp tune-layers sst2 --encoder bert-base-uncased --results-dir runs/sst2 [--steps 20]
```

TASK, `--encoder`, `--encoder-label` and `--ext-var` are tune-compare's: the command writes (or
checks, when it is there already) tune-compare's ft config of the task,
`RESULTS_DIR/configs/<task>_<label>_ft.jsonnet`, renders it, and measures the RGN of every
layer group of its model on the first `--max-instances` training instances over `--steps`
forward and backward passes without weight updates. It prints one line per group and, per
block size K, the block tune-compare can run (`topK` or `bottomK`) whose groups have the larger
mean RGN. With `--results-dir` it keeps the signal in `RESULTS_DIR/layer_signal.json` (an
earlier signal of the same task and encoder is replaced), and when the folder holds block-mode
runs (`tune-compare --modes top1 bottom1 ...`) it says whether each prediction matches the
sweep's best block, as the report's notes do.
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from allennlp_tune.analysis.layer_signal import DEFAULT_MAX_INSTANCES, DEFAULT_STEPS
from allennlp_tune.commands.results_options import checked_ext_vars, fail, positive_int

DESCRIPTION = """Predict which layer groups to fine-tune before the sweep: the relative gradient
norm ||g|| / ||w|| of each layer group of the encoder (Auto-RGN, Lee et al. 2023), measured on
tune-compare's ft config of TASK at the pretrained weights, and per size K the block (topK or
bottomK) with the larger mean RGN."""


@Subcommand.register("tune-layers")
class TuneLayers(Subcommand):
    """Registered as a `Subcommand` with name "tune-layers"; `allennlp tune-layers --help`."""

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = parser.add_parser(self.name, description=DESCRIPTION, help=DESCRIPTION)
        subparser.add_argument(
            "task",
            metavar="TASK",
            help="a shipped task or the path of a task file, as tune-compare takes it",
        )
        subparser.add_argument(
            "--encoder",
            required=True,
            metavar="NAME_OR_FOLDER",
            help="elmo, or a transformers model name or folder, as tune-compare takes it",
        )
        subparser.add_argument(
            "--encoder-label", default=None, help="the encoder's part of run names (tune-compare's)"
        )
        subparser.add_argument(
            "--ext-var",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="an ext var of the config (repeatable), as tune-compare takes it",
        )
        subparser.add_argument(
            "--results-dir",
            type=Path,
            default=None,
            help="tune-compare's results folder: the ft config goes to its configs/, the signal "
            "to its layer_signal.json, and its block-mode runs are checked against the signal",
        )
        subparser.add_argument(
            "--steps",
            type=positive_int,
            default=DEFAULT_STEPS,
            help="forward and backward passes the RGN is averaged over",
        )
        subparser.add_argument(
            "--max-instances",
            type=positive_int,
            default=DEFAULT_MAX_INSTANCES,
            help="the first N training instances the batches are drawn from",
        )
        subparser.add_argument(
            "--batch-size",
            type=positive_int,
            default=None,
            help="instances per pass (default: the config's data loader's)",
        )
        subparser.add_argument(
            "--cuda-device", type=int, default=-1, help="GPU to run on (-1: the CPU)"
        )
        subparser.add_argument("--seed", type=int, default=0, help="seed of batches and dropout")
        subparser.add_argument(
            "--json", metavar="FILE", default=None, help="also write the signal as JSON to FILE"
        )
        subparser.set_defaults(func=layers_main, overrides=None)
        return subparser


def layers_main(args: argparse.Namespace) -> Dict[str, Any]:
    """Measures, prints and saves the signal; ends the command on a `ConfigurationError`."""
    from allennlp_tune.experiments.compare import EXPERIMENT, task_source

    ext_vars = checked_ext_vars(
        "tune-layers", args, lambda: [EXPERIMENT, task_source(args.task)[0]]
    )
    try:
        entry = measure(args, ext_vars)
    except ConfigurationError as error:
        fail("tune-layers", error)
    print(signal_text(entry))
    if args.results_dir is not None:
        save_and_check(args.results_dir, entry)
    if args.json:
        Path(args.json).write_text(json.dumps(entry, indent=2) + "\n", encoding="utf-8")
        print(f"Wrote {args.json}")
    return entry


def measure(args: argparse.Namespace, ext_vars: Dict[str, str]) -> Dict[str, Any]:
    """The signal of tune-compare's ft config of the task and encoder, with what it measured."""
    from allennlp.common import Params

    from allennlp_tune.analysis.layer_signal import layer_signal
    from allennlp_tune.experiments.compare import (
        checkpoint_pooling,
        load_task,
        resolve_encoder,
        write_configs,
    )
    from allennlp_tune.experiments.configs import check_results_dir

    ext_vars = dict(ext_vars)
    encoder = resolve_encoder(args.encoder, args.encoder_label, ext_vars)
    ext_vars.update(encoder.ext_vars)
    ext_vars.update(checkpoint_pooling(encoder, ext_vars))
    task = load_task(args.task, ext_vars)
    with tempfile.TemporaryDirectory(prefix="tune-layers-") as scratch:
        folder = Path(scratch)
        if args.results_dir is not None:
            check_results_dir(args.results_dir)
            folder = args.results_dir
        (config_path,) = write_configs(task, encoder, ["ft"], folder, ext_vars)
        config = Params.from_file(str(config_path), ext_vars=ext_vars).as_dict(quiet=True)
    signal = layer_signal(
        config,
        steps=args.steps,
        max_instances=args.max_instances,
        batch_size=args.batch_size,
        cuda_device=args.cuda_device,
        seed=args.seed,
    )
    return {
        "command": "tune-layers",
        "task": task.name,
        "encoder": encoder.label,
        "encoder_name": encoder.name,
        "config": str(config_path) if args.results_dir is not None else None,
        **signal,
    }


def signal_text(entry: Dict[str, Any]) -> str:
    """The printed table (group, RGN) and one prediction line per block size."""
    groups = entry["groups"]
    width = max(len("group"), *(len(group["name"]) for group in groups))
    lines: List[str] = [
        f"Relative gradient norm per layer group, {entry['task']} with {entry['encoder']}: "
        f"{entry['method']}.",
        f"{'#':>2}  {'group':<{width}}  {'RGN':>10}",
    ]
    lines += [
        f"{group['index']:>2}  {group['name']:<{width}}  {group['rgn']:>10.4g}" for group in groups
    ]
    for block in entry["blocks"]:
        k = block["k"]
        plural = "group" if k == 1 else "groups"
        best = block["best_contiguous"]
        lines.append(
            f"predicted: {block['predicted']} (RGN top {k} {plural} {block['top']:.4g} vs "
            f"bottom {k} {block['bottom']:.4g}); best contiguous {k}: groups {best['groups']} "
            f"({', '.join(best['names'])}) {best['rgn']:.4g}"
        )
    return "\n".join(lines)


def save_and_check(results_dir: Path, entry: Dict[str, Any]) -> None:
    """Keeps the signal in `RESULTS_DIR/layer_signal.json` and prints its match against the
    block-mode runs of the folder, if any."""
    from allennlp_tune.reporting.layer_signal import LAYER_SIGNAL_NAME, signal_lines, with_signal
    from allennlp_tune.reporting.report import report_from_dirs
    from allennlp_tune.rundir.jsonio import read_json, write_json

    path = Path(results_dir) / LAYER_SIGNAL_NAME
    write_json(path, with_signal(read_json(path), entry))
    print(f"Wrote {path}")
    report = report_from_dirs([results_dir], intervals=False)
    lines = signal_lines(report.layer_signals, report.encoder_rows)
    if lines:
        print("Against the sweep in " + str(results_dir) + ":", *lines, sep="\n", file=sys.stdout)
