"""`allennlp tune-compare`: fe vs ft (vs sf, bitfit, lora) of one encoder on one task, shipped or
your own. See `allennlp_tune.experiments.compare`."""

import argparse

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from allennlp_tune.commands.results_options import (
    add_output_arguments,
    add_run_arguments,
    fail,
    positive_float,
    positive_int,
    train_and_report,
)
from allennlp_tune.experiments.compare import MODES_EXPECTED
from allennlp_tune.modes import DEFAULT_MODES, is_run_mode

MODES_HELP = (
    "fe (feature extraction), ft (fine-tuning), sf (stack-then-finetune), bitfit (only the "
    "encoder's bias terms train), lora (low-rank adapters train; transformer encoders only), "
    "topK / bottomK (only the K highest / lowest layer groups fine-tune, e.g. top2); "
    f"default: {' '.join(DEFAULT_MODES)}"
)

COMPARE_DESCRIPTION = """Feature extraction vs fine-tuning (vs stack-then-finetune) of one
encoder on one task: a shipped task name (sick_e, sst2, ...) or a task file of your own. Writes
one config per mode into RESULTS_DIR/configs/, trains them x seeds as tune-grid does
(resumable), then prints the report."""


def run_mode(text: str) -> str:
    """`--modes`' type: a run mode (`COMPARE_MODES`) or a block mode, else argparse's error."""
    if not is_run_mode(text):
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {MODES_EXPECTED})")
    return text


def add_compare_parser(parser: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    subparser = parser.add_parser(name, description=COMPARE_DESCRIPTION, help=COMPARE_DESCRIPTION)
    subparser.add_argument(
        "task",
        metavar="TASK",
        help="a shipped task (conll2003, sst2, mnli, sick_e, sick_r, mrpc, sts_b, cola) or the "
        "path of a task file (.jsonnet / .json; its paths are relative to its folder)",
    )
    subparser.add_argument(
        "--encoder",
        required=True,
        metavar="NAME_OR_FOLDER",
        help="elmo (TUNE_ELMO_OPTIONS / TUNE_ELMO_WEIGHTS), or a transformers model name or "
        "folder (TUNE_BERT_MODEL)",
    )
    subparser.add_argument(
        "--encoder-label",
        default=None,
        help="the encoder's part of run names, [a-z0-9]+ (default: from its name, e.g. "
        "all-MiniLM-L6-v2 -> allminilml6v2; 'bert' or 'elmo' put the paper's numbers beside)",
    )
    subparser.add_argument(
        "--modes",
        nargs="+",
        type=run_mode,
        metavar="MODE",
        help=MODES_HELP,
    )
    # The default through set_defaults: MODES_HELP names it already, and AllenNLP's parser would
    # append "(default = [...])" to the help of an argument given one.
    subparser.set_defaults(modes=list(DEFAULT_MODES))
    subparser.add_argument(
        "--cuda-device", type=int, default=None, help="GPU of every run (TUNE_CUDA_DEVICE)"
    )
    add_run_arguments(subparser)
    # --seeds not given: 1 2 3, or 1 up to the last look with --sequential (`Comparison`).
    subparser.set_defaults(seeds=None)
    add_sequential_arguments(subparser)
    add_budget_arguments(subparser)
    add_output_arguments(subparser)
    subparser.set_defaults(func=compare_main)
    return subparser


def add_sequential_arguments(subparser: argparse.ArgumentParser) -> None:
    """--sequential, --looks, --futility and --margin; --seeds then gives the order seeds are
    added in."""
    subparser.add_argument(
        "--sequential",
        action="store_true",
        help="add seeds in rounds and stop when the answer is known: train the first look's "
        "seeds of every mode, then after each round compare each pair the report compares "
        "(each mode vs fe, the others vs ft, lora vs bitfit) with a group-sequential interval "
        "(alpha spending keeps the error rate at 5%% over all looks); a mode gets no more seeds "
        "once all its pairs have a verdict. Seeds are 1, 2, ... up to the last look unless "
        "--seeds lists them (at least that many). Resumable: rerun the same command. Writes "
        "RESULTS_DIR/sequential.json, which the report shows",
    )
    subparser.add_argument(
        "--looks",
        nargs="+",
        type=positive_int,
        default=None,
        metavar="SEEDS",
        help="with --sequential: seeds per mode at each look, increasing, from 2; the last is "
        "the seed cap (default 3 5 7)",
    )
    subparser.add_argument(
        "--futility",
        type=float,
        default=None,
        metavar="CHANCE",
        help="with --sequential: a pair still undecided before the cap stops as 'undecided, "
        "futile' when the chance that the seed cap would decide it (at the difference seen so "
        "far) is under CHANCE (default 0.1; 0 runs every undecided pair to the cap). It never "
        "makes a wrong 'better' verdict likelier; it can miss a small real difference",
    )
    subparser.add_argument(
        "--margin",
        type=positive_float,
        default=None,
        metavar="POINTS",
        help="equivalence margin in points: a pair whose interval lies inside (-M, +M) reads "
        "'equivalent within M' (with --sequential it stops there), and the answer names the "
        "cheapest arm not worse than the best by more than M",
    )


def add_budget_arguments(subparser: argparse.ArgumentParser) -> None:
    """--budget K and --space MODE=SPACE: equal search budgets before the seeds."""
    subparser.add_argument(
        "--budget",
        type=positive_int,
        default=None,
        metavar="K",
        help="search each mode's recipe first, K Optuna trials per mode over its own space "
        "(fe: rate, dropout, patience; ft, sf, bitfit, lora, topK: rate, epochs), the config's "
        "own recipe first, the median pruner stopping a trial that falls behind the finished "
        "ones at the same epoch; "
        "then train the seeds of each mode's best setting. Trials go to RESULTS_DIR/search "
        "(resumable: a rerun runs only the trials a study lacks), the searches to "
        "RESULTS_DIR/budget.json, which the report shows. With --coordinator, workers given the "
        "same command share the trials (each mode still gets exactly K) and then the seeds",
    )
    subparser.add_argument(
        "--budget-unit",
        choices=("trials", "compute"),
        default="trials",
        help="with --budget: what K counts. trials (the default): every mode gets K trials. "
        "compute: every mode's trials may spend what K trials of the costliest mode spend, in "
        "encoder forward passes with the task network's work added, so a cheap frozen arm (a "
        "light head on cached features) gets more trials, at least K and at most 10 K; the "
        "report says which unit and how many trials each mode got. Not with --coordinator",
    )
    subparser.add_argument(
        "--pruner",
        choices=("median", "halving"),
        default="median",
        help="with --budget: what stops a search trial early. median (the default): behind the "
        "median of the finished trials at the same epoch, from epoch 2. halving: successive "
        "halving over epochs (multi-fidelity): at epochs 2, 4 and 10 a trial goes on only in "
        "the best third of the trials that got there (with fewer than three there, only as the "
        "best, and the first always), so of 3 trials it stops at most two and most trials only "
        "from a budget of about 9; with --budget-unit compute what they did not train buys more "
        "trials",
    )
    subparser.add_argument(
        "--space",
        action="append",
        default=[],
        metavar="MODE=SPACE",
        help="with --budget: a mode's search space instead of the default, as tune-search's "
        "--param values, e.g. --space ft='TUNE_LR=1e-5:1e-4:log TUNE_EPOCHS=2:4' (repeatable)",
    )


def compare_main(args: argparse.Namespace) -> None:
    """Builds the `Comparison` the command line gives (checked once, --ext-var against the
    configs first: an option that cannot work ends the command before anything is written),
    then trains and reports it."""
    from allennlp_tune.experiments.comparison import Comparison
    from allennlp_tune.experiments.configs import parse_ext_vars

    try:
        comparison = Comparison.from_args(args, parse_ext_vars(args.ext_var))
    except ConfigurationError as error:
        fail("tune-compare", error)
    train_and_report("tune-compare", comparison.train, args)


@Subcommand.register("tune-compare")
class TuneCompare(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return add_compare_parser(parser, self.name)
