"""
`allennlp tune-report`: Table 2 from run directories (modes fe, ft, sf, bitfit, lora), with a
cost table under each encoder's scores from the runs' `cost.json`. See
`allennlp_tune.results.cli` and `allennlp_tune.results.report`.
"""

import argparse

from allennlp.commands.subcommand import Subcommand

from allennlp_tune.results.cli import add_report_parser


@Subcommand.register("tune-report")
class TuneReport(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return add_report_parser(parser, self.name)
