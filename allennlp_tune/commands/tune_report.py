"""
`allennlp tune-report`: Table 2 from run directories (modes fe, ft, sf, bitfit, lora), with a
cost table under each encoder's scores from the runs' `cost.json`, paired verdicts from their
`dev_predictions.jsonl` and known overlaps from the encoders' model cards. See
`allennlp_tune.reporting.report`.

Options: `--bootstrap N` replicates of the paired bootstrap (default 2000), `--no-intervals` to
skip it (Δ then keeps the old one-point rule `[ft]` / `[fe]` in every row), `--margin M` (a tie
whose interval lies inside (-M, +M) points reads `equivalent within M`), `--json FILE`,
`--html FILE`, `--png FILE` (`--probe-dir TASK=DIR`, repeatable: an `allennlp probe` output drawn
beside the task's fe mix weights), `--split validation|test` (test: the runs' `test_<metric>` and
intervals from their `test_predictions.jsonl`, which `--test` of tune-compare / tune-grid and
`tune-test` write after training; a report of dev scores shows them in a table of its own).

The paired verdict: for each task row, every mode with predictions against the reference `fe`,
and sf / bitfit / lora against `ft`, by the paired bootstrap of `allennlp_tune.reporting.paired`
(the same resampled dev examples for both modes, seeds resampled; the task's metric). The score
table gains `Verdict ft vs fe (95% CI)` (`ft +1.2 [+0.3, +2.1]`, or `tie`), a paired table per
encoder lists every pair, and a row without an interval keeps the old rule in its Δ cell.

`--json` keys (besides `split`, `roots`, `superseded`, `others`, `runs_without_costs`,
`runs_without_predictions`):

- `paired_test`: the sentence of `describe_test` (how intervals were made), or null when none
  were computed (`--no-intervals`); `replicates`: the bootstrap's replicates;
  `margin`: `--margin` (null without it).
- `rows`: one per encoder and task, with `encoder`, `task`, `metric`, `delta` (ft − fe of the
  means), `delta_favours` ("ft", "fe" or null by the OLD one-point rule, kept for every row),
  `paper`, `paper_delta`, `cells` (per mode: `metric`, `mean`, `std`, `n`, `as_percent`,
  `text`, `mixed_settings`, `repeated_seeds`, `cost`, `runs`), and:
  - `verdict`: the verdict of ft vs fe ("ft", "fe", "tie" or "equivalent within M"), null
    without an interval;
  - `paired`: a list of `PairedResult.as_dict()`, each with `metric`, `mode_a`, `mode_b`,
    `score_a`, `score_b` (means over seeds on the full dev set, points), `difference`
    (score_a − score_b), `low`, `high` (the interval), `verdict` (mode_a, mode_b or "tie"),
    `examples`, `seeds_a`, `seeds_b`, `replicates`, `confidence`, `resample_seeds`,
    `std_error`. The reference pairs come first and have `mode_a` the compared mode and
    `mode_b` "fe" (a forest plot of each mode against fe takes those); then pairs with `mode_b`
    "ft" (`mode_a` sf, bitfit or lora). [] where no interval was computed;
  - `paired_seeds`: per compared mode, the seeds of the runs whose predictions were used;
  - `paired_notes`: why a pair or the row has no interval (mismatched predictions name both
    files), runs left out;
  - `overlap`: reasons, one per dataset of an encoder's model card that the task overlaps
    (`direct: the encoder's model card lists multi_nli (MultiNLI)`, `related: ...`); [] if none;
  - `overlap_kind`: "direct", "related" or null (the row's mark `†` / `(†)` / none);
  - `overlap_details`: per overlap `kind`, `dataset`, `reason`, `text`, `card` (README.md path);
  - `overlap_unknown`: encoder folders of the row's runs without a model card;
  - `test` (a report of dev scores; null without runs scored on test, and with `--split test`):
    `cells` (per mode `mean`, `std`, `n`, `text` of the test scores), `paired`, `paired_seeds`
    and `paired_notes` as above, from the runs' `test_predictions.jsonl`.
  Each run of `cells` also has `test_predictions` (whether it has current ones) and
  `test_value` (its `test_<metric>`, null without).
"""

import argparse

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from allennlp_tune.commands.results_options import (
    add_output_arguments,
    fail,
    positive_float,
    positive_int,
    print_report,
)

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
    add_output_arguments(subparser)
    subparser.add_argument(
        "--bootstrap",
        type=positive_int,
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
        type=positive_float,
        default=None,
        metavar="M",
        help="a tie whose 95%% interval lies inside (-M, +M) points reads 'equivalent within "
        "M', and the answer names the cheapest arm not worse than the best by more than M "
        "points (e.g. a block of layers within M of full fine-tuning)",
    )
    subparser.set_defaults(func=report_main)
    return subparser


def report_main(args: argparse.Namespace) -> None:
    try:
        print_report(args.dirs, args)
    except (FileNotFoundError, ConfigurationError) as error:
        fail("tune-report", error)


@Subcommand.register("tune-report")
class TuneReport(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return add_report_parser(parser, self.name)
