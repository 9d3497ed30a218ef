"""
`allennlp tune-report`: Table 2 from run directories (modes fe, ft, sf, bitfit, lora), with a
cost table under each encoder's scores from the runs' `cost.json`, paired verdicts from their
`dev_predictions.jsonl` and known overlaps from the encoders' model cards. See
`allennlp_tune.results.cli` and `allennlp_tune.results.report`.

Options: `--bootstrap N` replicates of the paired bootstrap (default 2000), `--no-intervals` to
skip it (Δ then keeps the old one-point rule `[ft]` / `[fe]` in every row), `--margin M` (a tie
whose interval lies inside (-M, +M) points reads `equivalent within M`), `--json FILE`,
`--html FILE`, `--png FILE` (`--probe-dir TASK=DIR`, repeatable: an `allennlp probe` output drawn
beside the task's fe mix weights), `--split validation|test` (intervals only for validation: the
predictions are dev predictions).

The paired verdict: for each task row, every mode with predictions against the reference `fe`,
and sf / bitfit / lora against `ft`, by the paired bootstrap of `allennlp_tune.results.paired`
(the same resampled dev examples for both modes, seeds resampled; the task's metric). The score
table gains `Verdict ft vs fe (95% CI)` (`ft +1.2 [+0.3, +2.1]`, or `tie`), a paired table per
encoder lists every pair, and a row without an interval keeps the old rule in its Δ cell.

`--json` keys (besides `split`, `roots`, `superseded`, `others`, `runs_without_costs`,
`runs_without_predictions`):

- `paired_test`: the sentence of `describe_test` (how intervals were made), or null when none
  were computed (`--no-intervals`, `--split test`); `replicates`: the bootstrap's replicates;
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
  - `overlap_unknown`: encoder folders of the row's runs without a model card.
"""

import argparse

from allennlp.commands.subcommand import Subcommand

from allennlp_tune.results.cli import add_report_parser


@Subcommand.register("tune-report")
class TuneReport(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return add_report_parser(parser, self.name)
