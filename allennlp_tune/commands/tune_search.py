"""`allennlp tune-search`: Optuna search over ext-var hyperparameters (see
`allennlp_tune.experiments.search`)."""

import argparse
import sys
from pathlib import Path

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from allennlp_tune.commands.results_options import (
    add_keep_checkpoints_argument,
    fail,
)

SEARCH_DESCRIPTION = """Optuna search over a config's ext-var hyperparameters, trials trained in
this process with per-epoch pruning; SQLite storage by default, any Optuna RDB URL to share one
study between workers. Writes RESULTS_DIR/<study>/best_params.json and best_params.env."""


def add_search_parser(parser: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    subparser = parser.add_parser(name, description=SEARCH_DESCRIPTION, help=SEARCH_DESCRIPTION)
    subparser.add_argument("config", type=Path, metavar="CONFIG", help="the config to tune")
    subparser.add_argument(
        "--param",
        action="append",
        required=True,
        metavar="NAME=SPEC",
        help="a searched ext var (repeatable): NAME=low:high, NAME=low:high:log (float; "
        "integer when both bounds are integers) or NAME=choice1,choice2",
    )
    subparser.add_argument("--trials", type=int, required=True, help="trials for this worker")
    subparser.add_argument("--study-name", required=True, help="the study (shared by workers)")
    subparser.add_argument(
        "--storage",
        default=None,
        help="Optuna storage URL (default sqlite:///RESULTS_DIR/optuna.db), e.g. "
        "postgresql://user@host:5432/db to share the study between machines",
    )
    subparser.add_argument("--results-dir", required=True, type=Path, help="where trials go")
    subparser.add_argument(
        "--pruning", action="store_true", help="stop trials worse than the median at an epoch"
    )
    subparser.add_argument("--seed", type=int, default=1, help="TUNE_SEED of every trial")
    subparser.add_argument(
        "--ext-var", action="append", default=[], metavar="KEY=VALUE", help="a fixed ext var"
    )
    subparser.add_argument("--overrides", "-o", default=None, help="JSON overrides")
    subparser.add_argument(
        "--sampler-seed",
        type=int,
        default=None,
        help="seed of TPE (plus the study's trials so far, so that a resumed search draws anew)",
    )
    subparser.add_argument(
        "--enqueue",
        action="append",
        default=[],
        metavar="'NAME=VALUE ...'",
        help="settings to try first (repeatable; a value for every --param, e.g. "
        "--enqueue 'TUNE_LR=1e-4 TUNE_EPOCHS=5' for the config's own recipe); they count among "
        "--trials and are skipped when the study already has them",
    )
    add_keep_checkpoints_argument(subparser)
    subparser.set_defaults(func=search_main)
    return subparser


def search_main(args: argparse.Namespace) -> None:
    try:
        import optuna  # noqa: F401 (here only to say how to install it)
    except ImportError as error:  # not a requirement of the plugin, only of this command
        fail(
            "tune-search",
            ImportError(
                f"needs Optuna, which is not installed ({error}). Install the plugin's search "
                "extra: pip install 'allennlp-tune[search]' (from a checkout: "
                "pip install -e '.[search]'); it adds optuna. A postgresql:// --storage needs "
                "the PostgreSQL driver too: pip install 'allennlp-tune[search,postgres]'."
            ),
        )

    from allennlp_tune.experiments.configs import parse_ext_vars
    from allennlp_tune.experiments.search import SearchParam, describe, parse_settings, run_search

    try:
        params = [SearchParam.parse(spec) for spec in args.param]
        ext_vars = parse_ext_vars(args.ext_var)
        enqueue = [parse_settings(text, params) for text in args.enqueue]
        if args.trials < 1:
            raise ConfigurationError(f"--trials {args.trials}: give at least 1.")
        result = run_search(
            args.config,
            params,
            trials=args.trials,
            study_name=args.study_name,
            results_dir=args.results_dir,
            storage=args.storage,
            pruning=args.pruning,
            ext_vars=ext_vars,
            seed=args.seed,
            overrides=args.overrides,
            sampler_seed=args.sampler_seed,
            keep_checkpoints=args.keep_checkpoints,
            enqueue=enqueue,
        )
    except ConfigurationError as error:
        fail("tune-search", error)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (`process.SigtermAsInterrupt`)
        print(
            "\nallennlp tune-search: interrupted. The study keeps its finished trials (the one in "
            "training is marked interrupted); --trials N runs N more, so give the number still "
            "wanted when you run it again.",
            file=sys.stderr,
        )
        sys.exit(130)
    print(describe(result))


@Subcommand.register("tune-search")
class TuneSearch(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return add_search_parser(parser, self.name)
