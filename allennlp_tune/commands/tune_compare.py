"""`allennlp tune-compare`: fe vs ft (vs sf, bitfit, lora) of one encoder on one task, shipped or
your own. See `allennlp_tune.results.compare` and `allennlp_tune.results.cli`."""

import argparse

from allennlp.commands.subcommand import Subcommand

from allennlp_tune.results.cli import add_compare_parser
from allennlp_tune.results.compare import COMPARE_MODES, DEFAULT_MODES

MODES_HELP = (
    "fe (feature extraction), ft (fine-tuning), sf (stack-then-finetune), bitfit (only the "
    "encoder's bias terms train), lora (low-rank adapters train; transformer encoders only); "
    f"default: {' '.join(DEFAULT_MODES)}"
)


def accept_all_modes(subparser: argparse.ArgumentParser) -> None:
    """`--modes` takes every mode of `COMPARE_MODES`, with the paper's three as its default."""
    (action,) = [action for action in subparser._actions if action.dest == "modes"]
    action.choices = COMPARE_MODES
    action.default = list(DEFAULT_MODES)
    action.help = MODES_HELP


@Subcommand.register("tune-compare")
class TuneCompare(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = add_compare_parser(parser, self.name)
        accept_all_modes(subparser)
        return subparser
