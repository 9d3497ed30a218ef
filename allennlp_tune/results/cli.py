"""
Arguments and entry points of `allennlp tune-report`, `tune-grid`, `tune-compare` and
`tune-search`.

The subcommands in `allennlp_tune/commands/` only register these with AllenNLP. Errors a user
can cause end the command with one line naming what was wrong (exit code 2); tune-grid and
tune-compare exit with 1 when a run failed and 130 when interrupted, after saying what will
rerun. Both print the planner's estimate per cell first (`allennlp_tune.results.plan`) and
exit with 2 before any training when a cell's feature cache would not fit its budget;
`--plan-only` stops after the plan, `--no-plan` skips it.
"""

import argparse
import json
import sys
import traceback
from pathlib import Path

from allennlp.common.checks import ConfigurationError


def _fail(command: str, error: Exception) -> None:
    """Ends the command with the error's message in one line and status 2; its traceback first
    when the user asked for it (`-v` / `--verbose`, ALLENNLP_TUNE_VERBOSE=1)."""
    import allennlp_tune_preimport

    if allennlp_tune_preimport.verbose_requested():
        traceback.print_exception(error, file=sys.stderr)
    print(f"allennlp {command}: {error}", file=sys.stderr)
    sys.exit(2)


def _add_output_arguments(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument("--html", metavar="FILE", help="also write the report as HTML")
    subparser.add_argument("--png", metavar="FILE", help="also draw the tables into a PNG")
    subparser.add_argument(
        "--json", metavar="FILE", help="also write the report as data (cells, runs, deltas)"
    )
    subparser.add_argument(
        "--probe-dir",
        action="append",
        type=_probe_dir,
        default=None,
        metavar="TASK=DIR",
        help="the --output-dir of `allennlp probe` for TASK (e.g. mrpc=runs/analysis/mrpc), "
        "drawn beside the fe scalar-mix weights in --html / --png; repeat for more tasks",
    )
    subparser.add_argument(
        "--split",
        choices=("validation", "test"),
        default="validation",
        help="score runs by best_validation_<metric> (default) or test_<metric> in metrics.json",
    )


def _probe_dir(text: str) -> tuple:
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


def _add_keep_checkpoints_argument(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument(
        "--keep-checkpoints",
        action="store_true",
        help="keep each finished run's epoch checkpoints, best.th and feature_cache/, and the "
        "shared feature cache (default: delete them; model.tar.gz has the weights)",
    )


def _seed(text: str) -> int:
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


def _add_run_arguments(subparser: argparse.ArgumentParser) -> None:
    """The options of tune-grid and tune-compare for how every run is trained."""
    subparser.add_argument(
        "--seeds",
        nargs="+",
        type=_seed,
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
    _add_keep_checkpoints_argument(subparser)
    subparser.add_argument(
        "--retrain-changed",
        action="store_true",
        help="move aside and train again the complete runs that were trained with another "
        "config, other data or encoder files, or other package versions than this command "
        "uses now (default: refuse, naming what changed)",
    )
    subparser.add_argument("--no-progress", action="store_true", help="no progress bar")
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


def _train_and_report(command: str, train, args: argparse.Namespace) -> None:
    """Runs `train()` (-> GridResult), then prints what it did and the report of the results."""
    try:
        result = train()
    except ConfigurationError as error:  # a bad task or option, or the results dir is in use
        _fail(command, error)
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
    _print_report([args.results_dir], args)
    if result.failed:
        sys.exit(1)


def _print_report(dirs, args: argparse.Namespace) -> None:
    from allennlp_tune.results.report import (
        render_html,
        render_json,
        render_markdown,
        render_png,
        report_from_dirs,
    )

    # tune-report's --bootstrap / --no-intervals / --margin; tune-grid, tune-compare: defaults.
    options = {"intervals": not getattr(args, "no_intervals", False)}
    if getattr(args, "bootstrap", None) is not None:
        options["replicates"] = args.bootstrap
    if getattr(args, "margin", None) is not None:
        options["margin"] = args.margin
    report = report_from_dirs(dirs, split=args.split, **options)
    print(render_markdown(report), end="")
    probe_dirs = dict(getattr(args, "probe_dir", None) or []) or None
    if args.html:
        Path(args.html).write_text(render_html(report, probe_dirs), encoding="utf-8")
        print(f"\nWrote {args.html}")
    if args.png:
        render_png(report, args.png, probe_dirs)
        print(f"Wrote {args.png}")
    if args.json:
        text = json.dumps(render_json(report), indent=2, allow_nan=False)
        Path(args.json).write_text(text + "\n", encoding="utf-8")
        print(f"Wrote {args.json}")


# tune-report ---------------------------------------------------------------------------------

REPORT_DESCRIPTION = """Render the paper's Table 2 (feature extraction vs fine-tuning per task,
mean ± std over seeds, delta, the paper's numbers; a paired-bootstrap verdict with its 95%
interval where runs left dev_predictions.jsonl; known overlaps from the encoder's model card) from
run directories: every folder under DIRS that holds config.json or tune_run.json. Markdown to
stdout."""


def add_report_parser(parser: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    # argparse %-formats help strings (the list of `allennlp --help`), not descriptions.
    subparser = parser.add_parser(
        name, description=REPORT_DESCRIPTION, help=REPORT_DESCRIPTION.replace("%", "%%")
    )
    subparser.add_argument("dirs", nargs="+", metavar="DIR", help="folders searched for runs")
    _add_output_arguments(subparser)
    subparser.add_argument(
        "--bootstrap",
        type=_positive_int,
        default=None,
        metavar="N",
        help="replicates of the paired bootstrap behind the verdicts (default 2000)",
    )
    subparser.add_argument(
        "--no-intervals",
        action="store_true",
        help="no paired bootstrap: no verdict column, Δ marked by the old one-point rule",
    )
    subparser.add_argument(
        "--margin",
        type=_positive_float,
        default=None,
        metavar="M",
        help="a tie whose 95%% interval lies inside (-M, +M) points reads 'equivalent within M'",
    )
    subparser.set_defaults(func=report_main)
    return subparser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of points, not {text!r}")
    return value


def report_main(args: argparse.Namespace) -> None:
    try:
        _print_report(args.dirs, args)
    except (FileNotFoundError, ConfigurationError) as error:
        _fail("tune-report", error)


# tune-grid -----------------------------------------------------------------------------------

GRID_DESCRIPTION = """Train configs x seeds into RESULTS_DIR/<config_stem>/seed_<k> (allennlp
train in a subprocess, TUNE_SEED and --ext-var set in its environment), skipping runs that
completed, so an interrupted grid resumes; then print the report."""


def add_grid_parser(parser: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    subparser = parser.add_parser(name, description=GRID_DESCRIPTION, help=GRID_DESCRIPTION)
    subparser.add_argument(
        "configs", nargs="+", metavar="CONFIG", help="config files or globs (quote globs)"
    )
    _add_run_arguments(subparser)
    _add_output_arguments(subparser)
    subparser.set_defaults(func=grid_main)
    return subparser


def grid_main(args: argparse.Namespace) -> None:
    from allennlp_tune.config_vars import check_ext_vars
    from allennlp_tune.results.grid import expand_configs, parse_ext_vars, run_grid

    try:
        configs = expand_configs(args.configs)
        ext_vars = parse_ext_vars(args.ext_var)
        check_ext_vars(ext_vars, configs, [args.overrides] if args.overrides else [])
    except ConfigurationError as error:
        _fail("tune-grid", error)
    _train_and_report(
        "tune-grid",
        lambda: run_grid(
            configs,
            args.seeds,
            args.results_dir,
            ext_vars=ext_vars,
            overrides=args.overrides,
            keep_failed=args.keep_failed,
            keep_checkpoints=args.keep_checkpoints,
            progress=not args.no_progress,
            plan=not args.no_plan,
            plan_only=args.plan_only,
            retrain_changed=args.retrain_changed,
        ),
        args,
    )


# tune-compare --------------------------------------------------------------------------------

COMPARE_DESCRIPTION = """Feature extraction vs fine-tuning (vs stack-then-finetune) of one
encoder on one task: a shipped task name (sick_e, sst2, ...) or a task file of your own. Writes
one config per mode into RESULTS_DIR/configs/, trains them x seeds as tune-grid does
(resumable), then prints the report."""


def add_compare_parser(parser: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    subparser = parser.add_parser(name, description=COMPARE_DESCRIPTION, help=COMPARE_DESCRIPTION)
    subparser.add_argument(
        "task",
        metavar="TASK",
        help="a shipped task (conll2003, sst2, mnli, sick_e, sick_r, mrpc, sts_b, cola) or the "
        "path of a task file (.jsonnet / .json; its paths are relative to its folder)",
    )
    subparser.add_argument(
        "--encoder",
        required=True,
        metavar="NAME_OR_FOLDER",
        help="elmo (TUNE_ELMO_OPTIONS / TUNE_ELMO_WEIGHTS), or a transformers model name or "
        "folder (TUNE_BERT_MODEL)",
    )
    subparser.add_argument(
        "--encoder-label",
        default=None,
        help="the encoder's part of run names, [a-z0-9]+ (default: from its name, e.g. "
        "all-MiniLM-L6-v2 -> allminilml6v2; 'bert' or 'elmo' put the paper's numbers beside)",
    )
    subparser.add_argument(
        "--modes",
        nargs="+",
        choices=("fe", "ft", "sf"),
        default=["fe", "ft", "sf"],
        help="fe (feature extraction), ft (fine-tuning), sf (stack-then-finetune)",
    )
    subparser.add_argument(
        "--cuda-device", type=int, default=None, help="GPU of every run (TUNE_CUDA_DEVICE)"
    )
    _add_run_arguments(subparser)
    _add_output_arguments(subparser)
    subparser.set_defaults(func=compare_main)
    return subparser


def compare_main(args: argparse.Namespace) -> None:
    from allennlp_tune.config_vars import check_ext_vars
    from allennlp_tune.results.compare import EXPERIMENT, run_compare, task_source
    from allennlp_tune.results.grid import parse_ext_vars

    try:
        ext_vars = parse_ext_vars(args.ext_var)
        configs = [EXPERIMENT, task_source(args.task)[0]]
        check_ext_vars(ext_vars, configs, [args.overrides] if args.overrides else [])
    except ConfigurationError as error:
        _fail("tune-compare", error)
    _train_and_report(
        "tune-compare",
        lambda: run_compare(
            args.task,
            args.encoder,
            args.modes,
            args.seeds,
            args.results_dir,
            ext_vars=ext_vars,
            overrides=args.overrides,
            encoder_label=args.encoder_label,
            cuda_device=args.cuda_device,
            keep_failed=args.keep_failed,
            keep_checkpoints=args.keep_checkpoints,
            progress=not args.no_progress,
            plan=not args.no_plan,
            plan_only=args.plan_only,
            retrain_changed=args.retrain_changed,
        ),
        args,
    )


# tune-search ---------------------------------------------------------------------------------

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
    _add_keep_checkpoints_argument(subparser)
    subparser.set_defaults(func=search_main)
    return subparser


def search_main(args: argparse.Namespace) -> None:
    try:
        import optuna  # noqa: F401 (here only to say how to install it)
    except ImportError as error:  # not a requirement of the plugin, only of this command
        _fail(
            "tune-search",
            ImportError(
                f"needs Optuna, which is not installed ({error}). Install the plugin's search "
                "extra: pip install 'allennlp-tune[search]' (from a checkout: "
                "pip install -e '.[search]'); it adds optuna. A postgresql:// --storage needs "
                "the PostgreSQL driver too: pip install 'allennlp-tune[search,postgres]'."
            ),
        )

    from allennlp_tune.results.grid import parse_ext_vars
    from allennlp_tune.results.search import SearchParam, describe, parse_settings, run_search

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
        _fail("tune-search", error)
    print(describe(result))
