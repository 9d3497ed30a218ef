"""`allennlp tune-test`: score the finished runs of results folders on their test split, once,
after the decision on dev, then print the report (test scores and paired intervals on test
beside the dev ones). What `--test` of tune-compare and tune-grid does after training; see
`allennlp_tune.experiments.test_split`."""

import argparse
import sys
from pathlib import Path

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from allennlp_tune.commands.results_options import (
    add_output_arguments,
    fail,
    print_report,
    score_on_test,
)

TEST_DESCRIPTION = """Score every finished run under DIRS whose config has a test_data_path on
that test data, once (AllenNLP's evaluate: test_<metric> into metrics.json; the archived model's
test_predictions.jsonl), skipping runs scored before; then print the report. Exit code 2 when
no run has a test split or a run could not be scored."""


def add_test_parser(parser: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    subparser = parser.add_parser(name, description=TEST_DESCRIPTION, help=TEST_DESCRIPTION)
    subparser.add_argument("dirs", nargs="+", metavar="DIR", help="results folders")
    add_output_arguments(subparser)
    subparser.set_defaults(func=tune_test_main)
    return subparser


def tune_test_main(args: argparse.Namespace) -> None:
    for folder in args.dirs:
        if not Path(folder).is_dir():
            fail("tune-test", FileNotFoundError(f"{folder}: no such directory (a results folder)"))
    tested = score_on_test("tune-test", args.dirs)
    try:
        print_report(args.dirs, args)
    except (FileNotFoundError, ConfigurationError) as error:
        fail("tune-test", error)
    if not tested:
        sys.exit(2)


@Subcommand.register("tune-test")
class TuneTest(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return add_test_parser(parser, self.name)
