"""
`allennlp tune-data`: the task data for the configs.

- `allennlp tune-data list [--data-dir DIR]`: each task, its source URL, size, and whether its
  files are present in the data folder.
- `allennlp tune-data fetch TASK... [--data-dir DIR]`: download the public datasets (`sick`,
  `sst-2`, `mrpc`, `sts-b`, `mnli`, `cola`; `all`; task names such as `sick-e` work too) into
  the `TUNE_DATA_DIR` layout, with sha256 checks, progress bars, resumed partial downloads and
  atomic renames. `conll2003` has no free download: it says where to get the files and where
  to put them. `TUNE_DATA_MIRROR` (a base URL or a folder) replaces the canonical URLs.

The data folder is `--data-dir`, else `TUNE_DATA_DIR`, else `../shared/data` beside the
repository if it exists, else `./data` (where the configs look when `TUNE_DATA_DIR` is unset).
See `allennlp_tune.data.fetch`.
"""

import argparse
import sys
from pathlib import Path

from allennlp.commands.subcommand import Subcommand

from allennlp_tune.data import fetch


def _data_dir(args: argparse.Namespace) -> Path:
    return Path(args.data_dir) if args.data_dir else fetch.default_data_dir()


def list_main(args: argparse.Namespace) -> None:
    print(fetch.listing(_data_dir(args), fetch.mirror_base()))


def fetch_main(args: argparse.Namespace) -> None:
    data_dir = _data_dir(args)
    try:
        names = fetch.resolve_tasks(args.tasks)
    except fetch.FetchError as error:
        print(f"tune-data fetch: {error}", file=sys.stderr)
        sys.exit(2)
    failed = []
    for name in names:
        try:
            fetch.fetch_dataset(
                fetch.DATASETS[name],
                data_dir,
                mirror=fetch.mirror_base(),
                force=args.force,
                keep_downloads=args.keep_downloads,
                retries=args.retries,
                timeout=args.timeout,
                progress=not args.no_progress,
            )
        except fetch.FetchError as error:
            print(f"tune-data fetch {name}: {error}", file=sys.stderr)
            failed.append(name)
        except OSError as error:
            print(f"tune-data fetch {name}: {error}", file=sys.stderr)
            failed.append(name)
    if failed:
        print(f"tune-data fetch: not fetched: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


@Subcommand.register("tune-data")
class TuneData(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = "List or download the task data into the TUNE_DATA_DIR layout."
        subparser = parser.add_parser(self.name, description=description, help=description)
        subparser.set_defaults(func=lambda args: subparser.print_help())
        commands = subparser.add_subparsers(title="commands")

        data_dir_help = (
            "the data folder (default: TUNE_DATA_DIR, else ../shared/data beside the "
            "repository if it exists, else ./data)"
        )
        listing = commands.add_parser(
            "list", help="each task, its source, size and whether it is present"
        )
        listing.add_argument("--data-dir", help=data_dir_help)
        listing.set_defaults(func=list_main)

        getter = commands.add_parser(
            "fetch",
            help="download tasks' public data (sha256-checked, resumable)",
            description=(
                "Download the public datasets into the data folder. TUNE_DATA_MIRROR (a base "
                "URL or a folder holding the files under their names) replaces the canonical "
                "URLs."
            ),
        )
        getter.add_argument(
            "tasks",
            nargs="+",
            metavar="TASK",
            help=f"{', '.join(fetch.DATASETS)}, all (or task names: sick-e, sst2, sts_b, ...)",
        )
        getter.add_argument("--data-dir", help=data_dir_help)
        getter.add_argument(
            "--force", action="store_true", help="download and install again files present"
        )
        getter.add_argument(
            "--keep-downloads",
            action="store_true",
            help="keep the downloaded archives in <data dir>/.downloads",
        )
        getter.add_argument(
            "--retries", type=int, default=3, help="attempts per download (default 3)"
        )
        getter.add_argument(
            "--timeout", type=float, default=30.0, help="seconds per network read (default 30)"
        )
        getter.add_argument("--no-progress", action="store_true", help="no progress bars")
        getter.set_defaults(func=fetch_main)
        return subparser
