"""`allennlp tune-compare`: fe vs ft (vs sf) of one encoder on one task, shipped or your own.
See `allennlp_tune.results.compare` and `allennlp_tune.results.cli`."""

import argparse

from allennlp.commands.subcommand import Subcommand

from allennlp_tune.results.cli import add_compare_parser


@Subcommand.register("tune-compare")
class TuneCompare(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return add_compare_parser(parser, self.name)
