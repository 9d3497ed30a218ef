"""`allennlp tune-report`: Table 2 from run directories. See `allennlp_tune.results.cli`."""

import argparse

from allennlp.commands.subcommand import Subcommand

from allennlp_tune.results.cli import add_report_parser


@Subcommand.register("tune-report")
class TuneReport(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return add_report_parser(parser, self.name)
