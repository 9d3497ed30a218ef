"""`allennlp tune-grid`: configs x seeds, resumable. See `allennlp_tune.results.cli`."""

import argparse

from allennlp.commands.subcommand import Subcommand

from allennlp_tune.results.cli import add_grid_parser


@Subcommand.register("tune-grid")
class TuneGrid(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return add_grid_parser(parser, self.name)
