"""`allennlp tune-search`: Optuna search over ext-var hyperparameters (`allennlp_tune.results`)."""

import argparse

from allennlp.commands.subcommand import Subcommand

from allennlp_tune.results.cli import add_search_parser


@Subcommand.register("tune-search")
class TuneSearch(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return add_search_parser(parser, self.name)
