"""
The paper's Table 2 from your own runs: feature extraction (fe) vs fine-tuning (ft) per task.

One table per encoder, one row per task in the paper's order; each cell is the mean ± sample
standard deviation over seeds of the run's primary validation metric, as a percentage like the
paper (metrics where lower is better, such as loss, are shown as they are), with the number of
seeds; tasks other than the paper's (CoLA, a task of one's own run by `tune-compare`) follow
its seven, by name, with the metric of their configs and "—" for the paper's numbers. Delta =
mean(ft) - mean(fe) in points. The paper's own numbers (Peters,
Ruder & Smith 2019, "To Tune or Not to Tune?", Table 2) stand beside ours, and
stack-then-finetune (sf) is a further column; bitfit (bias-only fine-tuning) and lora (low-rank
adapters) get columns of their own after it in a table where some run used them.

The verdict. Where the runs left `dev_predictions.jsonl`, every pair of a row's modes
is compared by the paired bootstrap of `allennlp_tune.reporting.paired` (the same resampled dev
examples for both modes, seeds resampled too; the task's own metric, with the configs'
`positive_label` for F1 and `label_encoding` for span F1), once per row for all its pairs: each
mode against the reference `fe` (mode_a the mode, mode_b "fe"), sf / bitfit / lora against
`ft`, and `lora` against `bitfit` (the choice between the two parameter-efficient arms). The
score table gains a column `Verdict ft vs fe (95% CI)` (`ft +1.2 [+0.3, +2.1]`, or `tie` when
the interval contains 0) where some row has one, and a paired table per encoder lists every
pair. A row without an interval (no predictions, a metric the bootstrap does not know,
predictions of different dev sets) keeps the old one-point rule in its Delta cell: `[ft]` where
delta > 1, `[fe]` where delta < -1, rounded as displayed (a shown +1.0 is not marked); a row
with an interval shows Delta unmarked. The notes say which test was used, its replicates, the
seeds, and why a row or pair has no interval (naming the files of mismatched predictions).
With a margin (`tune-report --margin M`, points), a tie whose interval lies inside (-M, +M) reads
`equivalent within M` (two one-sided tests on the same interval).

The test split. Runs scored on test after training (`tune-compare --test`, `tune-test`:
`test_<metric>` in metrics.json, `test_predictions.jsonl`) get, in this report of dev scores, a
table per encoder of each mode's test score and each pair's interval on dev beside its
interval on test (`tables.test_table`); `--split test` scores the whole report on test, its
intervals from the test predictions.

The answer first. Above the tables, one sentence per row with paired results (`answer_lines`):
the arm to use (`choose_arm`: of the modes that no pair found worse than another, the cheapest
in compute, encoder passes (a fwd+bwd pass counted as three forward ones) plus the task
network's flops (encoder passes alone where a head's cost is not recorded, mean seconds per
epoch where a mode's runs predate the count), then trainable parameters; with `--margin M`, the
cheapest of the modes whose interval against the best unbeaten mode stays above −M), its 95%
intervals against the modes it was compared with, its cost (s/epoch, trainable parameters,
encoder passes, compute) against theirs, and whether the recipes were searched (every run's
`tune_run.json` records a `search`; otherwise "recipes set by hand (...)", naming the recipe ext
vars the runs were given, or "default recipes"). A mode whose best epoch (`metrics.json`
`best_epoch`) was its last (`epoch`, after two epochs or more) in some run gets a warning: still
improving, under-trained at its config's recipe (not searched for this task) or at one set by
hand. A table whose rows have none of the paper's numbers (tasks or encoders that are not the
paper's) leaves out the paper's columns, and the summary its citation.

Equal budgets. A results folder of `tune-compare --budget K` holds `budget.json`
(`allennlp_tune.experiments.budget`): a table shows per mode its trials (complete / pruned /
failed), the best trial's dev score, the setting its seeds trained with and what the trials cost;
its `search/` folder of trials is not read as runs. A second table shows what the decision spent
against the full protocol (`reporting.budgets.decision_costs`: every trial to the end, every seed
to the cap). The answer says "equal budgets (K trials per mode)" for a row whose runs are all
such seeds (`reporting.budgets.row_budget`), and the share of the full protocol's passes.

Sequential comparisons. A results folder of `tune-compare --sequential` holds `sequential.json`
(`allennlp_tune.experiments.rounds`); the notes show each pair's sequential verdict, the look it
stopped at and the seeds it needed, beside the fixed 95% interval over all the runs.

Known overlap: when a run's encoder folder (a `model_name` of its config that is a folder) has a
model card whose `datasets:` names a dataset the task is built from, the task is marked `†`
(`(†)` where the card only names related data, such as SNLI for SICK-E), and the notes say which
dataset and why (`allennlp_tune.reporting.overlap`).

Under each encoder's table, when runs recorded what they cost (`cost.json`, from the `tune_cost`
trainer callback and tune-grid), a cost table: per task and mode the mean over its scored runs
(a run still training or killed has a partial `cost.json`; it is left out) of the
trainable parameters (the most at any epoch, and their share of all parameters), the parameters
the archive stores, seconds per epoch, peak RSS (and peak GPU memory where any run has it) and
the archive's size, and, where runs recorded their instances per epoch, the encoder passes
(`encoder_passes`: training instances x epochs, forward and backward in epochs whose encoder
trains, forward only in frozen ones, only the first frozen epoch with a feature cache), a unit
every machine shares. A value no run recorded is "n/a"; the notes list the scored runs without
`cost.json` or without `dev_predictions.jsonl`.

Results that prove themselves. A run enters a score or a verdict only once its files are the
ones it wrote when it finished (the digests in its `tune_run.json`, `rundir.digests`) and its
`metrics.json` score equals the one recomputed from its predictions (`verify`); a run that fails
is "damaged", listed with what failed, in no mean and no interval. `sequential.json` and
`budget.json` are held to their shape and to the runs and trials they summarise (`saved`); a
broken one is named and left out. The summary says how many runs were damaged, and the notes
how many scored runs predate digests (their scores alone were checked) or have a score that
their predictions cannot reproduce (a loss, say).

Runs without a score are never dropped: a cell says `failed (1/3)`, `missing metric (1/3)`,
`incomplete (1/3)` (no metrics.json: killed or still training) or `pruned (1/3)`, and the report
lists each such run with its log. A cell whose runs were trained with different settings (their
`config.json` differ in more than the seeds: two learning rates, two data sizes) says `mixed
settings`, and the report lists what differs, so runs from two experiments are never averaged
silently; a cell with two runs of one seed (the same grid reported twice, say) says `repeated
seed` and the report names them. Ablations (config names with a suffix), search trials and runs
whose names follow no convention go to a second table. How runs are found and identified:
`allennlp_tune.rundir`.

Where each part lives, lowest first (each module imports only the ones before it): `labels`
(titles, the paper's numbers, marks, colours), `costs` (cost arithmetic), `cells` (`Summary`,
`Row`), `intervals` (`paired_results`), `tables` (the tables as data), `verify` (scores against
predictions), `saved` (`sequential.json`, `budget.json` checked), this module (`Report`,
its summary lines and notes, `build_report`, `report_from_dirs`), `answer` (the answer first),
`render` (Markdown and JSON), then the page: `panel_data`, `figures`, `panels` and
`html_report` (HTML and PNG).
"""

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from allennlp_tune.modes import ordered_run_modes
from allennlp_tune.reporting.budgets import (
    DecisionCost,
    budget_lines,
    budget_table,
    decision_costs,
    decision_table,
)
from allennlp_tune.reporting.cells import KnownOverlap, Row, Summary
from allennlp_tune.reporting.costs import has_costs
from allennlp_tune.reporting.expected_max import expected_max_table
from allennlp_tune.reporting.intervals import (
    equivalent_verdict,
    has_predictions,
    paired_results,
    predictions_name,
)
from allennlp_tune.reporting.labels import (
    FAVOURS_FEATURE_EXTRACTION,
    FAVOURS_FINE_TUNING,
    OVERLAP_MARK,
    PAPER_TABLE_2,
    PEFT_PAIR,
    REFERENCE,
    RELATED_OVERLAP_MARK,
    SECOND_REFERENCE,
    encoder_title,
    task_title,
)
from allennlp_tune.reporting.layer_signal import LAYER_SIGNAL_NAME, SIGNAL_TITLE, signal_lines
from allennlp_tune.reporting.overlap import (
    DIRECT,
    encoder_folders,
    find_overlaps,
    read_model_card,
)
from allennlp_tune.reporting.paired import DEFAULT_REPLICATES, TIE, describe_test
from allennlp_tune.reporting.saved import BrokenFile, check_saved
from allennlp_tune.reporting.tables import (
    VERDICT_HEADER,
    Table,
    cost_table,
    has_paper_numbers,
    other_table,
    paired_table,
    score_table,
    test_table,
)
from allennlp_tune.reporting.verify import verify_runs
from allennlp_tune.rundir import (
    COST_NAME,
    DAMAGED,
    RUN_MODES,
    TASKS,
    Run,
    load_runs,
    read_json,
)

CHECKS_TITLE = "Results that failed their checks"
# How many differing config keys the report names per mixed cell.
MAX_MIXED_KEYS = 8


@dataclass
class Report:
    """Everything a renderer needs; build it with `build_report`."""

    encoder_rows: Dict[str, List[Row]]
    others: List[Tuple[str, Summary]]
    runs: List[Run]
    roots: List[str]
    superseded: int = 0
    split: str = "validation"
    # Whether paired intervals were asked for (`--no-intervals` turns them off), and how many
    # bootstrap replicates they used.
    intervals: bool = True
    replicates: int = DEFAULT_REPLICATES
    # `--margin M`: a tie whose interval lies inside (-M, +M) reads "equivalent within M".
    margin: Optional[float] = None
    # The `sequential.json` of each results folder that has one (`tune-compare --sequential`).
    sequential: List[Dict[str, Any]] = field(default_factory=list)
    # The `layer_signal.json` of each results folder that has one (`tune-layers`).
    layer_signals: List[Dict[str, Any]] = field(default_factory=list)
    # The `budget.json` of each results folder that has one (`tune-compare --budget`).
    budgets: List[Dict[str, Any]] = field(default_factory=list)
    # The `sequential.json` and `budget.json` left out, with what failed (`saved`).
    broken: List[BrokenFile] = field(default_factory=list)

    @cached_property
    def spent(self) -> List[DecisionCost]:
        """What each `--budget` decision spent against the full protocol
        (`budgets.decision_costs`), worked out once for its table and the answer's line."""
        return decision_costs(self.budgets, self.encoder_rows, self.sequential)

    @property
    def problems(self) -> List[Run]:
        """The runs without a score (failed, incomplete, missing metric, pruned)."""
        return [run for run in self.runs if not run.scored]

    def tables(self) -> List[Table]:
        """
        Per encoder its score table, then its paired differences and its costs where it has
        them; then the other runs. Every renderer shows these tables.
        """
        tables = []
        for encoder, rows in self.encoder_rows.items():
            title = encoder_title(encoder)
            tables.append(score_table(title, rows))
            tested = test_table(title, rows) if self.split == "validation" else None
            paired = paired_table(title, rows, self.split)
            tables += [
                table for table in (paired, tested, cost_table(title, rows)) if table is not None
            ]
        searched = budget_table(self.budgets)
        if searched is not None:
            tables.append(searched)
            expected = expected_max_table(self.budgets)
            if expected is not None:
                tables.append(expected)
            spent = decision_table(self.spent)
            if spent is not None:
                tables.append(spent)
        if self.others:
            tables.append(other_table(self.others))
        return tables

    def summary_lines(self) -> List[str]:
        """The lines above the tables: what was found where, and how to read the scores."""
        lines = [
            f"{len(self.runs)} runs found in {', '.join(self.roots)}"
            + (
                f" (ignored: {self.superseded} superseded attempt(s) moved aside by tune-grid)"
                if self.superseded
                else ""
            )
            + ".",
            "Scores: "
            + ("best-epoch validation" if self.split == "validation" else "test")
            + " score of each run's primary metric (the trainer's validation_metric), ×100, "
            "mean ± sample std over seeds, n = seeds with a score.",
            (
                f"Δ = ft − fe in points. {VERDICT_HEADER}: ft − fe from the runs' "
                f"{'dev' if self.split == 'validation' else self.split} predictions with its "
                "paired-bootstrap 95% interval, and the mode it favours, or "
                "tie when the interval contains 0 (see the notes). Rows without an interval keep "
                f"the old rule in Δ: {FAVOURS_FINE_TUNING} where Δ > 1, "
                f"{FAVOURS_FEATURE_EXTRACTION} where Δ < −1 (no test)."
                if any(row.compared for row in self.rows())
                else f"Δ = ft − fe in points, marked by the old one-point rule (no test; no "
                f"paired intervals, see the notes): {FAVOURS_FINE_TUNING} favours fine-tuning "
                f"(Δ > 1), {FAVOURS_FEATURE_EXTRACTION} favours feature extraction (Δ < −1)."
            )
            + (
                " Paper: Peters, Ruder & Smith (2019), Table 2."
                if any(has_paper_numbers(rows) for rows in self.encoder_rows.values())
                else ""
            )
            + " sf = stack-then-finetune.",
        ]
        damaged = [run for run in self.runs if run.status == DAMAGED]
        if damaged or self.broken:
            lines.append(
                f"Damaged: {len(damaged)} run(s) whose files are not what they left (in no score "
                f"or verdict), {len(self.broken)} broken summary file(s) left out; see "
                f"{CHECKS_TITLE!r}."
            )
        if self.split == "validation" and any(row.tested for row in self.rows()):
            lines.append(
                "Test: the runs scored on the test split after training (tune-compare --test) "
                "have a table of their test scores, each pair's interval on dev beside its "
                "interval on test; the choice stays the one made on dev."
            )
        if any(row.overlaps for row in self.rows()):
            lines.append(
                f"{OVERLAP_MARK}: the encoder's model card lists a dataset the task is built "
                f"from; {RELATED_OVERLAP_MARK}: only related data (see Known overlap)."
            )
        return lines

    def rows(self) -> List[Row]:
        return [row for rows in self.encoder_rows.values() for row in rows]

    def labelled_rows(self) -> List[Tuple[str, Row]]:
        """(`BERT SICK-E`, row) for every Table 2 row."""
        return [
            (f"{encoder_title(encoder)} {task_title(row.task)}", row)
            for encoder, rows in self.encoder_rows.items()
            for row in rows
        ]

    def paired_lines(self) -> List[str]:
        """How the intervals were made, the seeds behind them, and the rows without them."""
        labelled = self.labelled_rows()
        if not labelled:
            return []
        old_rule = f"Δ keeps the old rule ({FAVOURS_FINE_TUNING}/{FAVOURS_FEATURE_EXTRACTION})"
        if not self.intervals:
            return [f"Paired intervals not computed (--no-intervals): {old_rule} in every row."]
        name = predictions_name(self.split)
        examples = "dev" if self.split == "validation" else self.split
        lines = []
        if any(row.paired for _, row in labelled):
            lines.append(
                describe_test(self.replicates)
                + " Differences are in points (×100) of each task's metric, computed from the "
                f"runs' {name} (the archived best model on the {examples} set), so they can "
                "differ slightly from Δ, which averages the scores of metrics.json. "
                f"Each mode is compared with the reference {REFERENCE} (mode − {REFERENCE}) and "
                f"the others also with {SECOND_REFERENCE}; {PEFT_PAIR[0]} also with "
                f"{PEFT_PAIR[1]}. The verdict replaces the old one-point "
                f"rule ({FAVOURS_FINE_TUNING}/{FAVOURS_FEATURE_EXTRACTION} where |Δ| > 1, no "
                "test), which Δ keeps only in rows without an interval."
            )
            if self.margin is not None:
                lines.append(
                    f"--margin {self.margin:g}: a {TIE} whose interval lies inside "
                    f"(−{self.margin:g}, +{self.margin:g}) points reads "
                    f'"{equivalent_verdict(self.margin)}" (equivalence by two one-sided tests '
                    "on the same 95% interval, each at 2.5%); a win inside the margin stays a "
                    "win. The answer names the cheapest arm not worse than the best by more "
                    f"than {self.margin:g} (the lower end of its interval against the best "
                    f"above −{self.margin:g})."
                )
        for label, row in labelled:
            if row.paired:
                first = row.paired[0]
                seeds = "; ".join(
                    f"{mode} {_seed_list(seeds)}" for mode, seeds in row.paired_seeds.items()
                )
                lines.append(
                    f"{label} ({first.metric}): {first.examples} {examples} examples, "
                    f"{self.replicates} replicates; seeds {seeds}."
                )
            elif not row.paired_notes:
                reason = _no_interval_reason(row, self.split)
                lines.append(f"{label}: no interval ({reason}); {old_rule}.")
            for note in row.paired_notes:
                lines.append(f"{label}: {note}")
            if row.paired_notes and row.verdict is None:
                kept = old_rule if row.delta is not None else "no Δ either (a cell is mixed)"
                lines.append(f"{label}: no interval of ft vs fe; {kept}.")
            for note in row.test_paired_notes:
                lines.append(f"{label}, on test: {note}")
        return lines

    def sequential_lines(self) -> List[str]:
        """
        Per pair of a `tune-compare --sequential` folder: the sequential verdict, the look it
        stopped at and the seeds it needed, beside the fixed 95% interval over all the runs.
        """
        lines: List[str] = []
        for saved in self.sequential:
            plan = saved.get("plan") or {}
            if plan.get("description") and plan["description"] not in lines:
                lines.append(plan["description"])
            encoder, task = str(saved.get("encoder")), str(saved.get("task"))
            label = f"{encoder_title(encoder)} {task_title(task)}"
            row = next((r for r in self.encoder_rows.get(encoder, []) if r.task == task), None)
            looks = len(plan.get("looks") or [])
            for pair in saved.get("pairs") or []:
                mode_a, mode_b = pair.get("mode_a"), pair.get("mode_b")
                taken = len(pair.get("looks") or [])
                where = (
                    f"stopped at look {taken} of {looks}, after {pair.get('seeds')} seeds each"
                    if pair.get("stopped")
                    else f"open after look {taken} of {looks} (rerun the command to go on)"
                )
                fixed = row.pair(mode_a, mode_b) if row is not None else None
                beside = f"; fixed 95% interval over all runs: {fixed.text()}" if fixed else ""
                said = pair.get("text") or "no look yet"
                lines.append(f"{label} {mode_a} − {mode_b}: {said}; {where}{beside}.")
            trained = saved.get("seeds_trained") or {}
            if trained:
                runs = sum(trained.values())
                lines.append(
                    f"{label}: seeds trained per mode "
                    + ", ".join(f"{mode} {count}" for mode, count in trained.items())
                    + f" ({runs} runs; {saved.get('runs_at_cap')} at the seed cap)."
                )
            if saved.get("problem"):
                lines.append(f"{label}: stopped early: {saved['problem']}.")
        return lines

    def overlap_lines(self) -> List[str]:
        """Which rows overlap the encoder's training data, which dataset, and why it matters."""
        lines = []
        for label, row in self.labelled_rows():
            for known in row.overlaps:
                kind = known.overlap.kind
                mark = OVERLAP_MARK if kind == DIRECT else RELATED_OVERLAP_MARK
                consequence = (
                    "the encoder was trained on this task's data (maybe on its dev examples), so "
                    "its scores, and fe against ft, are not those of an encoder that never saw it"
                    if kind == DIRECT
                    else "related data, not the task's own: the encoder has seen this kind of "
                    "task, which may favour its frozen features"
                )
                lines.append(
                    f"{mark} {label}: {known.card} lists {known.overlap.dataset} "
                    f"({known.overlap.reason}; {kind}): {consequence}."
                )
            for problem in row.overlap_problems:
                lines.append(f"{label}: {problem}")
        return lines

    def cells(self) -> List[Tuple[str, Summary]]:
        """Every non-empty cell with a label, Table 2 cells first, then the other runs."""
        labelled = [
            (f"{encoder_title(encoder)} {task_title(row.task)} {mode}", summary)
            for encoder, rows in self.encoder_rows.items()
            for row in rows
            for mode, summary in row.cells.items()
            if summary.runs
        ]
        return labelled + list(self.others)

    def mixed_lines(self) -> List[str]:
        """One line per cell that averages runs of different settings, naming what differs."""
        lines = []
        for label, summary in self.cells():
            mixed = summary.mixed_settings()
            if not mixed:
                continue
            shown = [
                f"{key} = " + ", ".join(f"{value} ({count})" for value, count in counts.items())
                for key, counts in list(mixed.items())[:MAX_MIXED_KEYS]
            ]
            more = len(mixed) - len(shown)
            lines.append(
                f"{label} ({len(summary.runs)} runs): "
                + "; ".join(shown)
                + (f"; and {more} more key(s)" if more > 0 else "")
            )
        return lines

    def repeated_lines(self) -> List[str]:
        """One line per cell with a seed that several runs used, naming those runs."""
        lines = []
        for label, summary in self.cells():
            for seed, runs in summary.repeated_seeds().items():
                paths = ", ".join(_display_path(run.path) for run in runs)
                lines.append(f"{label}: seed {seed} in {len(runs)} runs: {paths}")
        return lines

    def notes(self) -> List[Tuple[str, List[str]]]:
        """The sections under the tables, as (title, lines), each only when it has lines."""
        sections = [
            ("Paired comparisons (verdicts)", self.paired_lines()),
            ("Sequential comparison (seeds in rounds)", self.sequential_lines()),
            ("Equal budgets (tune-compare --budget)", budget_lines(self.budgets)),
            (SIGNAL_TITLE, signal_lines(self.layer_signals, self.encoder_rows)),
            ("Known overlap with the encoder's training data (model card)", self.overlap_lines()),
            ("Cells that mix settings (config.json differs beyond the seed)", self.mixed_lines()),
            ("Cells with a repeated seed (each run counts in n)", self.repeated_lines()),
            (CHECKS_TITLE, self.check_lines()),
            ("Runs without a score", self.problem_lines()),
            ("Scored runs without costs or dev predictions", self.missing_output_lines()),
        ]
        return [(title, lines) for title, lines in sections if lines]

    def without_costs(self) -> List[Run]:
        """Scored runs whose costs were not recorded (no `cost.json` from `tune_cost`)."""
        return [run for run in self.runs if run.scored and not has_costs(run)]

    def without_predictions(self) -> List[Run]:
        """Scored runs without predictions of the split (no paired intervals from them)."""
        return [run for run in self.runs if run.scored and not has_predictions(run, self.split)]

    def missing_output_lines(self) -> List[str]:
        """Which scored runs lack costs or dev predictions: one line if all do, else per run."""
        scored = [run for run in self.runs if run.scored]
        no_costs, no_predictions = self.without_costs(), self.without_predictions()
        name = predictions_name(self.split)
        all_no_costs = bool(scored) and len(no_costs) == len(scored)
        all_no_predictions = bool(scored) and len(no_predictions) == len(scored)
        lines = []
        if all_no_costs:
            lines.append(
                f"None of the {len(scored)} scored runs recorded its costs ({COST_NAME} from the "
                "tune_cost trainer callback; runs trained before it have none): costs are n/a."
            )
        if all_no_predictions:
            lines.append(
                f"None of the {len(scored)} scored runs has {name} ("
                + (
                    "tune-grid and tune-search write it after training; older runs have none)."
                    if self.split == "validation"
                    else "tune-compare --test and tune-grid --test write it)."
                )
            )
        for run in scored:
            missing = []
            if not all_no_costs and any(run is other for other in no_costs):
                missing.append(f"no costs ({COST_NAME})")
            if not all_no_predictions and any(run is other for other in no_predictions):
                missing.append(f"no {name}")
            if missing:
                lines.append(f"{_display_path(run.path)}: {', '.join(missing)}")
        return lines

    def check_lines(self) -> List[str]:
        """
        The results that failed their checks (damaged runs, broken summary files, each with what
        failed) and how many scored runs were checked less (no digests, or a score that their
        predictions cannot reproduce), with why.
        """
        lines = [
            f"damaged: {_display_path(run.path)}: {run.detail}"
            for run in self.runs
            if run.status == DAMAGED
        ]
        lines += [broken.line() for broken in self.broken]
        scored = [run for run in self.runs if run.scored]
        undigested = [run for run in scored if not run.digested]
        if undigested and (len(undigested) < len(scored) or lines):
            lines.append(
                f"{len(undigested)} of {len(scored)} scored runs have no digests of their outputs "
                "in tune_run.json (trained before them, or outside tune-grid): only their "
                "scores were checked against their predictions."
            )
        reasons: Dict[str, int] = {}
        for run in scored:
            if run.unchecked and run.predictions:
                reasons[run.unchecked] = reasons.get(run.unchecked, 0) + 1
        for reason, count in reasons.items():
            lines.append(f"{count} scored run(s): score not recomputed: {reason}.")
        return lines

    def problem_lines(self) -> List[str]:
        """One line per run without a score: its status, folder, detail and log (a damaged
        run's line is under `CHECKS_TITLE`)."""
        lines = []
        for run in self.problems:
            if run.status == DAMAGED:
                continue
            line = f"{run.status}: {run.path}"
            extras = [
                extra for extra in (run.detail, f"log: {run.log}" if run.log else None) if extra
            ]
            if extras:
                line += " (" + "; ".join(extras) + ")"
            lines.append(line)
        return lines


def _display_path(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _seed_list(seeds: Sequence[Optional[int]]) -> str:
    known = sorted(seed for seed in seeds if seed is not None)
    unknown = len(seeds) - len(known)
    text = ", ".join(str(seed) for seed in known)
    if unknown:
        text += (", " if text else "") + f"{unknown} without a seed"
    return f"({text})" if len(seeds) > 1 else text


def _no_interval_reason(row: "Row", split: str = "validation") -> str:
    name = predictions_name(split)
    scored = [run for cell in row.cells.values() for run in cell.scored_runs]
    if not any(has_predictions(run, split) for run in scored):
        return f"no scored run has {name}"
    with_predictions = [
        mode
        for mode in row.used_modes()
        if any(has_predictions(run, split) for run in row.cells[mode].scored_runs)
    ]
    return f"only {', '.join(with_predictions)} has {name}, nothing to compare with"


def find_known_overlaps(row: Row, cards: Optional[Dict[str, Any]] = None) -> None:
    """
    Fills `row.overlaps`, `row.overlap_unknown` and `row.overlap_problems` from the model cards
    of the encoder folders its runs name (`model_name`). `cards` caches cards by folder.
    """
    cards = {} if cards is None else cards
    seen = set()
    for run in (run for cell in row.cells.values() for run in cell.runs):
        for folder in encoder_folders(run.settings or {}):
            if folder in seen:
                continue
            seen.add(folder)
            if folder not in cards:
                try:
                    cards[folder] = read_model_card(folder)
                except (ValueError, OSError) as error:
                    cards[folder] = error
            card = cards[folder]
            if isinstance(card, Exception):
                row.overlap_problems.append(f"overlap not checked: {card}")
            elif card is None:
                row.overlap_unknown.append(folder)
            else:
                for overlap in find_overlaps(row.task, card.datasets):
                    row.overlaps.append(KnownOverlap(folder, str(card.path), overlap))


def _encoder_order(encoder: str) -> Tuple[int, str]:
    return (list(PAPER_TABLE_2).index(encoder) if encoder in PAPER_TABLE_2 else 99, encoder)


def build_report(
    runs: Sequence[Run],
    roots: Sequence[str] = (),
    superseded: int = 0,
    split: str = "validation",
    intervals: bool = True,
    replicates: int = DEFAULT_REPLICATES,
    margin: Optional[float] = None,
) -> Report:
    """
    Groups runs into Table 2 cells (or the other-runs table) and pairs them with the paper; with
    `intervals` the paired bootstrap of each row's modes on the `split`'s predictions, and in a
    report of dev scores also on the test predictions of runs scored on test, with
    `replicates` replicates (ties inside +-`margin` points read "equivalent within margin");
    the known overlaps from the encoders' model cards.
    """
    cells: Dict[Tuple[str, str, str], Summary] = {}
    others: Dict[str, Summary] = {}
    for run in runs:
        name = run.name
        if name is not None and not name.variant:
            cells.setdefault((name.encoder, name.task, name.mode), Summary()).runs.append(run)
        else:
            if name is None:
                label = _display_path(run.path)
            else:
                label = f"{name.task}_{name.encoder}_{name.mode}_{name.variant}"
            others.setdefault(label, Summary()).runs.append(run)

    # The paper's tasks in its order, then any other task (tune-compare's own) by name.
    tasks = list(TASKS) + sorted({task for _, task, _ in cells} - set(TASKS))
    encoder_rows: Dict[str, List[Row]] = {}
    for encoder in sorted({encoder for encoder, _, _ in cells}, key=_encoder_order):
        rows = []
        for task in tasks:
            # Every row of an encoder has the same modes: a block mode one task ran and
            # another did not is an empty cell there (the score table has one header).
            modes = ordered_run_modes([*RUN_MODES, *(m for e, _, m in cells if e == encoder)])
            if not any((encoder, task, mode) in cells for mode in modes):
                continue
            paper = PAPER_TABLE_2.get(encoder, {})
            rows.append(
                Row(
                    task=task,
                    cells={mode: cells.get((encoder, task, mode), Summary()) for mode in modes},
                    paper={mode: paper.get(mode, {}).get(task) for mode in ("fe", "ft")},
                )
            )
        encoder_rows[encoder] = rows

    cards: Dict[str, Any] = {}
    for rows in encoder_rows.values():
        for row in rows:
            if intervals:
                row.paired, row.paired_seeds, row.paired_notes = paired_results(
                    row, replicates, margin=margin, split=split
                )
            if intervals and split == "validation" and row.tested:
                row.test_paired, row.test_paired_seeds, row.test_paired_notes = paired_results(
                    row, replicates, margin=margin, split="test"
                )
            find_known_overlaps(row, cards)

    def other_order(item: Tuple[str, Summary]) -> Tuple[int, str]:
        name = item[1].runs[0].name
        known = name is not None and name.task in TASKS
        return (TASKS.index(name.task) if known else len(TASKS), item[0])

    return Report(
        encoder_rows=encoder_rows,
        others=sorted(others.items(), key=other_order),
        runs=list(runs),
        roots=[str(root) for root in roots],
        superseded=superseded,
        split=split,
        intervals=intervals,
        replicates=replicates,
        margin=margin,
    )


def report_from_dirs(
    dirs: Sequence[Union[str, Path]],
    split: str = "validation",
    intervals: bool = True,
    replicates: int = DEFAULT_REPLICATES,
    margin: Optional[float] = None,
) -> Report:
    """
    The report of the runs under `dirs` (see `build_report`), each checked against its
    predictions (`verify`), with each folder's `sequential.json` (`tune-compare --sequential`)
    and `budget.json` (`tune-compare --budget`) where they pass their checks (`saved`).
    """
    runs, superseded = load_runs([Path(d) for d in dirs], split)
    verify_runs(runs)
    roots = [str(d) for d in dirs]
    report = build_report(runs, roots, superseded, split, intervals, replicates, margin)
    report.sequential, report.budgets, report.broken = check_saved([Path(d) for d in dirs], runs)
    report.layer_signals = [
        saved
        for saved in (read_json(Path(d) / LAYER_SIGNAL_NAME) for d in dirs)
        if saved is not None
    ]
    return report
