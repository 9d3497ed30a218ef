"""
What tune-report, tune-grid, tune-compare, tune-search and tune-test share: their output options
(--html, --png, --json, --probe-dir, --split), how every run is trained (--seeds, --results-dir,
..., --test: the finished runs scored on test afterwards, `score_on_test`),
printing the report, and ending a command on an error a user can cause with one line naming what
was wrong (exit code 2). tune-grid and tune-compare exit with 1 when a run failed and 130 when
interrupted, after saying what will rerun.
"""

import argparse
import json
import sys
import traceback
from pathlib import Path
from typing import Any, Dict

from allennlp.common.checks import ConfigurationError


def fail(command: str, error: Exception) -> None:
    """Ends the command with the error's message in one line and status 2; its traceback first
    when the user asked for it (`-v` / `--verbose`, ALLENNLP_TUNE_VERBOSE=1)."""
    from allennlp_tune_preimport.cli import verbose_requested

    if verbose_requested():
        traceback.print_exception(error, file=sys.stderr)
    print(f"allennlp {command}: {error}", file=sys.stderr)
    sys.exit(2)


def add_output_arguments(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument("--html", metavar="FILE", help="also write the report as HTML")
    subparser.add_argument("--png", metavar="FILE", help="also draw the tables into a PNG")
    subparser.add_argument(
        "--json", metavar="FILE", help="also write the report as data (cells, runs, deltas)"
    )
    subparser.add_argument(
        "--probe-dir",
        action="append",
        type=probe_dir,
        default=None,
        metavar="TASK=DIR",
        help="the --output-dir of `allennlp probe` for TASK (e.g. mrpc=runs/analysis/mrpc), "
        "drawn beside the fe scalar-mix weights in --html / --png; repeat for more tasks",
    )
    subparser.add_argument(
        "--split",
        choices=("validation", "test"),
        default="validation",
        help="score runs by best_validation_<metric> (default) or test_<metric> in metrics.json "
        "(test: paired intervals from test_predictions.jsonl, which --test writes)",
    )


def probe_dir(text: str) -> tuple:
    task, sep, path = text.partition("=")
    if not sep or not task or not path:
        raise argparse.ArgumentTypeError(
            f"expected TASK=DIR (a task name as the report shows it, e.g. mrpc or sick_e_bert, "
            f"and the --output-dir of `allennlp probe`), not {text!r}"
        )
    location = Path(path)
    if not (location.is_file() or (location / "probe.json").is_file()):
        raise argparse.ArgumentTypeError(
            f"{path}: no probe.json there; give the --output-dir of `allennlp probe` for {task} "
            "(or its probe.json)"
        )
    return task, location


def add_keep_checkpoints_argument(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument(
        "--keep-checkpoints",
        action="store_true",
        help="keep each finished run's epoch checkpoints, best.th and feature_cache/, and the "
        "shared feature cache (default: delete them; model.tar.gz has the weights)",
    )


def add_test_argument(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument(
        "--test",
        action="store_true",
        help="after training, score every finished run on the task's test split once (its "
        "metrics as test_<metric> in metrics.json, test_predictions.jsonl); the report then "
        "shows test scores and paired intervals on test beside the dev ones (tune-report "
        "--split test for the test table alone). Runs scored before are not scored again",
    )


def score_on_test(command: str, dirs) -> bool:
    """
    `--test`: scores the finished runs under `dirs` on test (`experiments.test_split`) and says
    what it did, or why it could not, in a line or a few (stderr). Whether it went without an
    error a user must fix.
    """
    from allennlp_tune.experiments.test_split import score_test_split

    try:
        scoring = score_test_split([Path(d) for d in dirs])
    except (FileNotFoundError, ConfigurationError) as error:
        print(f"allennlp {command}: {error}", file=sys.stderr)
        return False
    for note in scoring.notes:
        print(f"{command}: {note}", file=sys.stderr)
    print(scoring.summary(command) + "\n", file=sys.stderr)
    return not scoring.failed


def seed(text: str) -> int:
    """A seed as numpy and torch take it: a whole number from 0 to 2**32 - 1."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 0 to {2**32 - 1} (numpy's seed range), not {text!r}"
        )
    return value


def add_run_arguments(subparser: argparse.ArgumentParser) -> None:
    """The options of tune-grid and tune-compare for how every run is trained."""
    subparser.add_argument(
        "--seeds",
        nargs="+",
        type=seed,
        default=[1, 2, 3],
        help="seeds (TUNE_SEED), default 1 2 3",
    )
    subparser.add_argument("--results-dir", required=True, type=Path, help="where runs go")
    subparser.add_argument(
        "--ext-var",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an ext var for every run (repeatable), e.g. --ext-var TUNE_EPOCHS=3",
    )
    subparser.add_argument("--overrides", "-o", default=None, help="JSON overrides for every run")
    subparser.add_argument(
        "--keep-failed",
        action="store_true",
        help="do not retry runs that failed before (default: retry them)",
    )
    add_keep_checkpoints_argument(subparser)
    subparser.add_argument(
        "--retrain-changed",
        action="store_true",
        help="move aside and train again the complete runs that were trained with another "
        "config, other data or encoder files, or other package versions than this command "
        "uses now (default: refuse, naming what changed)",
    )
    subparser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_test_argument(subparser)
    planning = subparser.add_mutually_exclusive_group()
    planning.add_argument(
        "--no-plan",
        action="store_true",
        help="skip the planner (by default each cell's instances, wordpieces, feature cache "
        "size, peak RAM and time per epoch are printed first, and a cell whose cache would not "
        "fit its disk budget stops the command before any training)",
    )
    planning.add_argument(
        "--plan-only",
        action="store_true",
        help="print the planner's estimate per cell and exit without training",
    )
    subparser.add_argument(
        "--no-calibrate",
        action="store_true",
        help="take the plan's time per epoch from the built-in cost model instead of timing a "
        "few training batches of each cell on this machine first (a few seconds per cell; "
        "TUNE_PLAN_CALIBRATE=0 does the same)",
    )
    add_worker_arguments(subparser)


def add_worker_arguments(subparser: argparse.ArgumentParser) -> None:
    """--coordinator, --heartbeat and --grace: this process as one worker of a shared grid
    (`allennlp_tune.experiments.workers`)."""
    subparser.add_argument(
        "--coordinator",
        metavar="URL",
        default=None,
        help="share the grid with other workers (processes on this machine or others, same "
        "command, same --results-dir on a shared filesystem) through this Optuna storage: "
        "sqlite:///path/to/workers.db on one machine, postgresql://user:password@host/db on "
        "many; each worker trains the next run nobody holds. Give each worker its own GPU with "
        "--ext-var TUNE_CUDA_DEVICE=N",
    )
    subparser.add_argument(
        "--heartbeat",
        type=positive_int,
        default=None,
        metavar="SECONDS",
        help="with --coordinator: seconds between a worker's heartbeats (default 60)",
    )
    subparser.add_argument(
        "--grace",
        type=positive_int,
        default=None,
        metavar="SECONDS",
        help="with --coordinator: seconds without a heartbeat after which a worker counts as "
        "dead and another trains its run from scratch (default twice --heartbeat)",
    )


def coordinator_option(args: argparse.Namespace):
    """The `workers.Coordinator` of --coordinator (`None` without it); raises a
    `ConfigurationError` for --heartbeat or --grace without --coordinator."""
    from allennlp_tune.experiments.workers import coordinator_of

    return coordinator_of(
        getattr(args, "coordinator", None),
        getattr(args, "heartbeat", None),
        getattr(args, "grace", None),
    )


def grid_options(args: argparse.Namespace, ext_vars: Dict[str, str]) -> Dict[str, Any]:
    """`run_grid`'s options from the arguments of `add_run_arguments` (tune-grid, tune-compare)
    and the checked `ext_vars`."""
    return {
        "ext_vars": ext_vars,
        "overrides": args.overrides,
        "keep_failed": args.keep_failed,
        "keep_checkpoints": args.keep_checkpoints,
        "progress": not args.no_progress,
        "plan": not args.no_plan,
        "plan_only": args.plan_only,
        "calibrate": not getattr(args, "no_calibrate", False),
        "retrain_changed": args.retrain_changed,
        "coordinator": coordinator_option(args),
    }


def checked_ext_vars(command: str, args: argparse.Namespace, configs) -> Dict[str, str]:
    """`--ext-var` as a dict, checked against what the configs (`configs()`, called after the
    ext vars are parsed) and `--overrides` read; ends the command on an error."""
    from allennlp_tune.config_vars import check_ext_vars
    from allennlp_tune.experiments.configs import parse_ext_vars

    try:
        ext_vars = parse_ext_vars(args.ext_var)
        check_ext_vars(ext_vars, configs(), [args.overrides] if args.overrides else [])
    except ConfigurationError as error:
        fail(command, error)
    return ext_vars


def train_and_report(command: str, train, args: argparse.Namespace) -> None:
    """Runs `train()` (-> GridResult), then prints what it did and the report of the results."""
    try:
        result = train()
    except ConfigurationError as error:  # a bad task or option, or the results dir is in use
        fail(command, error)
    except KeyboardInterrupt:
        print(
            f"\nallennlp {command}: interrupted. Completed runs are kept; run the same command "
            "again to rerun only the unfinished ones.",
            file=sys.stderr,
        )
        sys.exit(130)
    if getattr(args, "plan_only", False):
        return
    retrained = f" ({len(result.retrained)} of them after a change)" if result.retrained else ""
    print(
        f"{command}: {len(result.trained)} trained{retrained}, {len(result.skipped)} already "
        f"complete, {len(result.failed)} failed.\n",
        file=sys.stderr,
    )
    tested = score_on_test(command, [args.results_dir]) if getattr(args, "test", False) else True
    print_report([args.results_dir], args)
    if result.failed:
        sys.exit(1)
    if not tested:
        sys.exit(2)


def print_report(dirs, args: argparse.Namespace) -> None:
    from allennlp_tune.reporting.render import render_json, render_markdown
    from allennlp_tune.reporting.report import report_from_dirs

    # tune-report's --bootstrap / --no-intervals / --margin; tune-grid, tune-compare: defaults.
    options = {"intervals": not getattr(args, "no_intervals", False)}
    if getattr(args, "bootstrap", None) is not None:
        options["replicates"] = args.bootstrap
    if getattr(args, "margin", None) is not None:
        options["margin"] = args.margin
    report = report_from_dirs(dirs, split=args.split, **options)
    print(render_markdown(report), end="")
    probe_dirs = dict(getattr(args, "probe_dir", None) or []) or None
    if args.html or args.png:
        from allennlp_tune.reporting.html_report import render_report_html, render_report_png
    if args.html:
        Path(args.html).write_text(render_report_html(report, probe_dirs), encoding="utf-8")
        print(f"\nWrote {args.html}")
    if args.png:
        render_report_png(report, args.png, probe_dirs)
        print(f"Wrote {args.png}")
    if args.json:
        text = json.dumps(render_json(report), indent=2, allow_nan=False)
        Path(args.json).write_text(text + "\n", encoding="utf-8")
        print(f"Wrote {args.json}")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of points, not {text!r}")
    return value
