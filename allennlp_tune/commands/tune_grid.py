"""`allennlp tune-grid`: configs x seeds, resumable; the planner's estimate per cell first
(`--plan-only` stops after it, `--no-plan` skips it), the report at the end."""

import argparse

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from allennlp_tune.commands.results_options import (
    add_output_arguments,
    add_run_arguments,
    checked_ext_vars,
    fail,
    grid_options,
    train_and_report,
)

GRID_DESCRIPTION = """Train configs x seeds into RESULTS_DIR/<config_stem>/seed_<k> (allennlp
train in a subprocess, TUNE_SEED and --ext-var set in its environment), skipping runs that
completed, so an interrupted grid resumes; then print the report."""


def add_grid_parser(parser: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    subparser = parser.add_parser(name, description=GRID_DESCRIPTION, help=GRID_DESCRIPTION)
    subparser.add_argument(
        "configs", nargs="+", metavar="CONFIG", help="config files or globs (quote globs)"
    )
    add_run_arguments(subparser)
    add_output_arguments(subparser)
    subparser.set_defaults(func=grid_main)
    return subparser


def grid_main(args: argparse.Namespace) -> None:
    from allennlp_tune.experiments.configs import expand_configs
    from allennlp_tune.experiments.grid import run_grid

    try:
        configs = expand_configs(args.configs)
    except ConfigurationError as error:
        fail("tune-grid", error)
    ext_vars = checked_ext_vars("tune-grid", args, lambda: configs)
    train_and_report(
        "tune-grid",
        lambda: run_grid(configs, args.seeds, args.results_dir, **grid_options(args, ext_vars)),
        args,
    )


@Subcommand.register("tune-grid")
class TuneGrid(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return add_grid_parser(parser, self.name)
