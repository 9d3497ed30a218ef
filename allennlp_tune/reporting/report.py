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

The verdict (issue 16). Where the runs left `dev_predictions.jsonl`, every pair of a row's modes
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

The answer first. Above the tables, one sentence per row with paired results (`answer_lines`):
the arm to use (`choose_arm`: of the modes that no pair found worse than another, the cheapest by
mean seconds per epoch, then trainable parameters), its 95% intervals against the modes it was
compared with, its cost (s/epoch, trainable parameters) against theirs, and whether the recipes
were searched (every run's `tune_run.json` records a `search`; none does yet, so today it says
"default recipes"). A mode whose best epoch (`metrics.json` `best_epoch`) was its last (`epoch`,
after two epochs or more) in some run gets a warning: still improving, under-trained at a recipe
nobody searched. A table whose rows have none of the paper's numbers (tasks or encoders that are
not the paper's) leaves out the paper's columns, and the summary its citation.

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

Runs without a score are never dropped: a cell says `failed (1/3)`, `missing metric (1/3)`,
`incomplete (1/3)` (no metrics.json: killed or still training) or `pruned (1/3)`, and the report
lists each such run with its log. A cell whose runs were trained with different settings (their
`config.json` differ in more than the seeds: two learning rates, two data sizes) says `mixed
settings`, and the report lists what differs, so runs from two experiments are never averaged
silently; a cell with two runs of one seed (the same grid reported twice, say) says `repeated
seed` and the report names them. Ablations (config names with a suffix), search trials and runs
whose names follow no convention go to a second table. How runs are found and identified:
`allennlp_tune.rundir`.
"""

import dataclasses
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from allennlp_tune.reporting.overlap import (
    DIRECT,
    Overlap,
    encoder_folders,
    find_overlaps,
    read_model_card,
)
from allennlp_tune.reporting.paired import (
    DEFAULT_REPLICATES,
    TIE,
    PairedResult,
    Predictions,
    PredictionsMismatch,
    compare_modes,
    describe_test,
    metric_kind,
    read_predictions,
)
from allennlp_tune.rundir import (
    COST_NAME,
    METRICS_NAME,
    OK,
    PREDICTIONS_NAME,
    RUN_MODES,
    STATUSES,
    TASKS,
    Run,
    load_runs,
    read_json,
)

# What `tune-compare --sequential` writes into its results folder (`results.rounds`).
SEQUENTIAL_NAME = "sequential.json"

# Table 2 of the paper: GLUE/SICK/CoNLL scores, first row of each pair feature extraction.
PAPER_TABLE_2: Dict[str, Dict[str, Dict[str, float]]] = {
    "elmo": {
        "fe": {"conll2003": 91.7, "sst2": 91.8, "mnli": 79.6, "sick_e": 86.3, "sick_r": 86.1,
               "mrpc": 76.0, "sts_b": 75.9},
        "ft": {"conll2003": 91.9, "sst2": 91.2, "mnli": 76.4, "sick_e": 83.3, "sick_r": 83.3,
               "mrpc": 74.7, "sts_b": 75.5},
    },
    "bert": {
        "fe": {"conll2003": 92.2, "sst2": 93.0, "mnli": 84.6, "sick_e": 84.8, "sick_r": 86.4,
               "mrpc": 78.1, "sts_b": 82.9},
        "ft": {"conll2003": 92.4, "sst2": 93.5, "mnli": 84.6, "sick_e": 85.8, "sick_r": 88.7,
               "mrpc": 84.8, "sts_b": 87.1},
    },
}  # fmt: skip
PAPER_METRICS = {
    "conll2003": "span F1",
    "sst2": "accuracy",
    "mnli": "matched acc.",
    "sick_e": "accuracy",
    "sick_r": "Pearson",
    "mrpc": "accuracy",
    "sts_b": "Pearson",
}
# AllenNLP's metric names, as the Metric column prints them; any other name is printed as is.
METRIC_TITLES = {
    "f1-measure-overall": "span F1",
    "accuracy": "accuracy",
    "pearson": "Pearson",
    "spearman": "Spearman",
    "mcc": "MCC",
    "loss": "loss",
}
TASK_TITLES = {
    "conll2003": "CoNLL 2003",
    "sst2": "SST-2",
    "mnli": "MNLI",
    "sick_e": "SICK-E",
    "sick_r": "SICK-R",
    "mrpc": "MRPC",
    "sts_b": "STS-B",
    "cola": "CoLA",
}
ENCODER_TITLES = {"elmo": "ELMo", "bert": "BERT"}
MODE_TITLES = {
    "fe": "feature extraction",
    "ft": "fine-tuning",
    "sf": "stack-then-finetune",
    "bitfit": "bias-only fine-tuning",
    "lora": "low-rank adapters",
}
# Modes with a column in every encoder table; the others (bitfit, lora) only where some run used
# them.
ALWAYS_SHOWN_MODES = ("fe", "ft", "sf")
NOT_AVAILABLE = "n/a"
FAVOURS_FINE_TUNING = "[ft]"
FAVOURS_FEATURE_EXTRACTION = "[fe]"
# The paired comparisons: every mode against the reference fe, the other modes against ft, and
# the two parameter-efficient arms against each other (lora − bitfit).
REFERENCE = "fe"
SECOND_REFERENCE = "ft"
PEFT_PAIR = ("lora", "bitfit")
VERDICT_HEADER = "Verdict ft vs fe (95% CI)"
# Task marks for a known overlap with the encoder's training data (its model card).
OVERLAP_MARK = "†"
RELATED_OVERLAP_MARK = "(†)"
NONE = "—"
MIXED = "mixed settings"
REPEATED = "repeated seed"
ABSENT = "(absent)"
# How many differing config keys the report names per mixed cell.
MAX_MIXED_KEYS = 8
HEADER = ["Task", "Metric", "fe (ours)", "fe (paper)", "ft (ours)", "ft (paper)", "Δ ft−fe (ours)",
          "Δ (paper)", "sf (ours)"]  # fmt: skip
# The paper's own numbers: left out of a table where no row has them.
PAPER_COLUMNS = ("fe (paper)", "ft (paper)", "Δ (paper)")
OTHER_HEADER = ["Run", "Metric", "Score"]
# The cost table: (title, cost.json key, how a mean is shown); GPU MB only where some run has it.
COST_COLUMNS = [
    ("Trainable params", "trainable_params", "params"),
    ("Stored params", "stored_params", "params"),
    ("s/epoch", "mean_epoch_seconds", "seconds"),
    ("Peak RSS MB", "peak_rss_mb", "mb"),
    ("Peak GPU MB", "peak_gpu_mb", "mb"),
    ("Archive MB", "archive_bytes", "bytes"),
]
GPU_KEY = "peak_gpu_mb"
PASSES_HEADER = "Encoder passes"
# A run "has costs" when its cost.json has what the tune_cost callback writes.
COST_MARKER = "trainable_params"


def delta_mark(delta: float) -> Optional[str]:
    """ "ft" where the rounded delta favours fine-tuning (> 1), "fe" where < -1, else `None`."""
    shown = round(delta, 1)
    if shown > 1.0:
        return "ft"
    if shown < -1.0:
        return "fe"
    return None


def format_delta(delta: Optional[float]) -> Tuple[str, Optional[str]]:
    if delta is None:
        return NONE, None
    mark = delta_mark(delta)
    marker = {"ft": FAVOURS_FINE_TUNING, "fe": FAVOURS_FEATURE_EXTRACTION}.get(mark or "")
    text = f"{delta:+.1f}".replace("-0.0", "+0.0")
    return (f"{text} {marker}" if marker else text), mark


@dataclass
class Summary:
    """The runs of one cell (same task, encoder, mode and variant) and their statistics."""

    runs: List[Run] = field(default_factory=list)

    @property
    def scored_runs(self) -> List[Run]:
        """The runs that finished with their metric (`Run.scored`)."""
        return [run for run in self.runs if run.scored]

    @property
    def scores(self) -> List[float]:
        """Scores of the runs that have one: percentages where higher is better."""
        return [
            run.value * 100.0 if run.higher_is_better else run.value
            for run in self.scored_runs
            if run.value is not None
        ]

    @property
    def as_percent(self) -> bool:
        return all(run.higher_is_better for run in self.scored_runs)

    @property
    def mean(self) -> Optional[float]:
        scores = self.scores
        return statistics.fmean(scores) if scores else None

    @property
    def std(self) -> Optional[float]:
        scores = self.scores
        return statistics.stdev(scores) if len(scores) > 1 else None

    @property
    def metrics(self) -> str:
        names = sorted(
            {METRIC_TITLES.get(run.metric, run.metric) for run in self.runs if run.metric}
        )
        return " / ".join(names) if names else "?"

    def mixed_settings(self) -> Dict[str, Dict[str, int]]:
        """Config keys whose values differ between this cell's runs: key -> {value: runs}."""
        configured = [run.settings for run in self.runs if run.settings is not None]
        if len(configured) < 2:
            return {}
        keys = sorted(set().union(*configured))
        mixed: Dict[str, Dict[str, int]] = {}
        for key in keys:
            counts = Counter(settings.get(key, ABSENT) for settings in configured)
            if len(counts) > 1:
                mixed[key] = dict(counts)
        return mixed

    def repeated_seeds(self) -> Dict[int, List[Run]]:
        """Seeds that more than one of this cell's runs used: seed -> those runs."""
        by_seed: Dict[int, List[Run]] = {}
        for run in self.runs:
            if run.seed is not None:
                by_seed.setdefault(run.seed, []).append(run)
        return {seed: runs for seed, runs in sorted(by_seed.items()) if len(runs) > 1}

    def cost_mean(self, key: str) -> Optional[float]:
        """
        The mean of `key` in the `cost.json` of the scored runs that recorded it; `None` if none
        did. A run still training (or killed) has a partial `cost.json`: it is left out.
        """
        values = [
            float(run.cost[key])
            for run in self.scored_runs
            if run.cost is not None and _is_number(run.cost.get(key))
        ]
        return statistics.fmean(values) if values else None

    def runs_with_costs(self) -> List[Run]:
        """The scored runs whose `cost.json` the `tune_cost` callback wrote (`has_costs`)."""
        return [run for run in self.scored_runs if has_costs(run)]

    def cost_json(self) -> Dict[str, Any]:
        means: Dict[str, Any] = {key: self.cost_mean(key) for _, key, _ in COST_COLUMNS}
        means["total_params"] = self.cost_mean("total_params")
        means["runs_with_costs"] = len(self.runs_with_costs())
        passes = mean_encoder_passes(self)
        means["encoder_passes"] = (
            None if passes is None else {"forward_backward": passes[0], "forward": passes[1]}
        )
        return means

    def status_counts(self) -> Dict[str, int]:
        counts = {status: 0 for status in STATUSES}
        for run in self.runs:
            counts[run.status] = counts.get(run.status, 0) + 1
        return counts

    def text(self) -> str:
        """`91.8 ± 0.4 (n=3)`, `91.8 (n=1), failed (1/2)`, `missing metric (3/3)` or `—`."""
        if not self.runs:
            return NONE
        total = len(self.runs)
        parts = []
        scores = self.scores
        if scores:
            digits = 1 if self.as_percent else 3
            score = f"{self.mean:.{digits}f}"
            if self.std is not None:
                score += f" ± {self.std:.{digits}f}"
            parts.append(f"{score} (n={len(scores)})")
        for status, count in self.status_counts().items():
            if status != OK and count:
                parts.append(f"{status} ({count}/{total})")
        if self.mixed_settings():
            parts.append(MIXED)
        if self.repeated_seeds():
            parts.append(REPEATED)
        return ", ".join(parts)


@dataclass
class KnownOverlap:
    """An overlap of a row's task with the `datasets:` of the model card of an encoder folder."""

    folder: str
    card: str
    overlap: Overlap

    def as_dict(self) -> Dict[str, str]:
        return {
            "kind": self.overlap.kind,
            "dataset": self.overlap.dataset,
            "reason": self.overlap.reason,
            "text": self.overlap.text(),
            "card": self.card,
        }


@dataclass
class Row:
    task: str
    cells: Dict[str, Summary]
    paper: Dict[str, Optional[float]]
    # The paired comparisons (`compute_paired`): reference pairs (mode_b "fe") first.
    paired: List[PairedResult] = field(default_factory=list)
    # Why a pair or the row has no interval, and which runs were left out of the intervals.
    paired_notes: List[str] = field(default_factory=list)
    # The seeds whose predictions went into the intervals, per mode.
    paired_seeds: Dict[str, List[Optional[int]]] = field(default_factory=dict)
    overlaps: List[KnownOverlap] = field(default_factory=list)
    # Encoder folders of this row's runs without a model card (overlap unknown), and card errors.
    overlap_unknown: List[str] = field(default_factory=list)
    overlap_problems: List[str] = field(default_factory=list)

    def pair(self, mode_a: str, mode_b: str) -> Optional[PairedResult]:
        for result in self.paired:
            if (result.mode_a, result.mode_b) == (mode_a, mode_b):
                return result
        return None

    @property
    def compared(self) -> bool:
        """Whether paired intervals were computed or attempted (predictions of two modes)."""
        return bool(self.paired or self.paired_notes)

    @property
    def verdict(self) -> Optional[PairedResult]:
        """ft vs fe (ft - fe), when both have predictions."""
        return self.pair(SECOND_REFERENCE, REFERENCE)

    @property
    def overlap_kind(self) -> Optional[str]:
        """ "direct", "related" or `None` (no known overlap)."""
        kinds = {known.overlap.kind for known in self.overlaps}
        if not kinds:
            return None
        return DIRECT if DIRECT in kinds else kinds.pop()

    @property
    def overlap_mark(self) -> str:
        kind = self.overlap_kind
        if kind is None:
            return ""
        return OVERLAP_MARK if kind == DIRECT else RELATED_OVERLAP_MARK

    @property
    def title(self) -> str:
        """The task's title with its overlap mark: `MNLI †`."""
        mark = self.overlap_mark
        return f"{_task_title(self.task)} {mark}" if mark else _task_title(self.task)

    @property
    def delta(self) -> Optional[float]:
        """ft − fe; `None` where either cell averages runs trained differently (mixed)."""
        if any(self.cells[mode].mixed_settings() for mode in ("fe", "ft")):
            return None
        fe, ft = self.cells["fe"].mean, self.cells["ft"].mean
        return None if fe is None or ft is None else ft - fe

    @property
    def paper_delta(self) -> Optional[float]:
        fe, ft = self.paper["fe"], self.paper["ft"]
        return None if fe is None or ft is None else ft - fe

    def used_modes(self) -> List[str]:
        """The modes of this row that have runs, in `RUN_MODES` order."""
        return [mode for mode in RUN_MODES if mode in self.cells and self.cells[mode].runs]

    @property
    def metric(self) -> str:
        ours = Summary([run for cell in self.cells.values() for run in cell.runs]).metrics
        return ours if ours != "?" else PAPER_METRICS.get(self.task, ours)


# A rendered cell: its text and, for delta cells, which mode it favours ("ft", "fe" or None).
Cell = Tuple[str, Optional[str]]


@dataclass
class Table:
    title: str
    header: List[str]
    rows: List[List[Cell]]


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

    @property
    def problems(self) -> List[Run]:
        return [run for run in self.runs if not run.scored]

    def tables(self) -> List[Table]:
        tables = []
        for encoder, rows in self.encoder_rows.items():
            extra_modes = shown_modes(rows)[len(ALWAYS_SHOWN_MODES) :]
            # The verdict column only where some row has predictions to compare; old run
            # folders (no predictions) keep the table as it was, with the old rule in Delta.
            verdicts = any(row.compared for row in rows)
            # The paper's columns only where some row has the paper's numbers (its tasks and
            # encoders); a table of one's own tasks or encoders has none.
            paper = has_paper_numbers(rows)
            body = []
            for row in rows:
                delta, delta_mark_ = format_delta(row.delta)
                if row.verdict is not None and row.delta is not None:
                    delta, delta_mark_ = _signed(row.delta), None  # the verdict replaces it
                paper_delta, paper_mark = format_delta(row.paper_delta)
                cells = [
                    (row.title, None),
                    (row.metric, None),
                    (row.cells["fe"].text(), None),
                    (_paper(row.paper["fe"]), None),
                    (row.cells["ft"].text(), None),
                    (_paper(row.paper["ft"]), None),
                    (delta, delta_mark_),
                ]
                if verdicts:
                    cells.append(verdict_cell(row.verdict))
                cells += [(paper_delta, paper_mark), (row.cells["sf"].text(), None)]
                cells += [(row.cells[mode].text(), None) for mode in extra_modes]
                body.append(cells)
            header = list(HEADER)
            if verdicts:
                header.insert(header.index("Δ (paper)"), VERDICT_HEADER)
            header += [f"{mode} (ours)" for mode in extra_modes]
            if not paper:
                keep = [i for i, name in enumerate(header) if name not in PAPER_COLUMNS]
                header = [header[i] for i in keep]
                body = [[cells[i] for i in keep] for cells in body]
            tables.append(Table(ENCODER_TITLES.get(encoder, encoder), header, body))
            compared = paired_table(ENCODER_TITLES.get(encoder, encoder), rows)
            if compared is not None:
                tables.append(compared)
            costs = cost_table(ENCODER_TITLES.get(encoder, encoder), rows)
            if costs is not None:
                tables.append(costs)
        if self.others:
            body = [
                [(label, None), (s.metrics, None), (s.text(), None)] for label, s in self.others
            ]
            tables.append(
                Table(
                    "Other runs (ablations, search trials, unrecognised names)", OTHER_HEADER, body
                )
            )
        return tables

    def summary_lines(self) -> List[str]:
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
                f"Δ = ft − fe in points. {VERDICT_HEADER}: ft − fe from the runs' dev "
                "predictions with its paired-bootstrap 95% interval, and the mode it favours, or "
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
            (f"{ENCODER_TITLES.get(encoder, encoder)} {_task_title(row.task)}", row)
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
        if self.split != "validation":
            return [
                f"No paired intervals with --split {self.split}: {PREDICTIONS_NAME} holds dev "
                f"predictions, not {self.split} ones; {old_rule} in every row."
            ]
        lines = []
        if any(row.paired for _, row in labelled):
            lines.append(
                describe_test(self.replicates)
                + " Differences are in points (×100) of each task's metric, computed from the "
                f"runs' {PREDICTIONS_NAME} (the archived best model on the dev set), so they can "
                "differ slightly from Δ, which averages the best-epoch scores of metrics.json. "
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
                    "win."
                )
        for label, row in labelled:
            if row.paired:
                first = row.paired[0]
                seeds = "; ".join(
                    f"{mode} {_seed_list(seeds)}" for mode, seeds in row.paired_seeds.items()
                )
                lines.append(
                    f"{label} ({first.metric}): {first.examples} dev examples, "
                    f"{self.replicates} replicates; seeds {seeds}."
                )
            elif not row.paired_notes:
                lines.append(f"{label}: no interval ({_no_interval_reason(row)}); {old_rule}.")
            for note in row.paired_notes:
                lines.append(f"{label}: {note}")
            if row.paired_notes and row.verdict is None:
                kept = old_rule if row.delta is not None else "no Δ either (a cell is mixed)"
                lines.append(f"{label}: no interval of ft vs fe; {kept}.")
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
            label = f"{ENCODER_TITLES.get(encoder, encoder)} {_task_title(task)}"
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
            (f"{ENCODER_TITLES.get(encoder, encoder)} {_task_title(row.task)} {mode}", summary)
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
            ("Known overlap with the encoder's training data (model card)", self.overlap_lines()),
            ("Cells that mix settings (config.json differs beyond the seed)", self.mixed_lines()),
            ("Cells with a repeated seed (each run counts in n)", self.repeated_lines()),
            ("Runs without a score", self.problem_lines()),
            ("Scored runs without costs or dev predictions", self.missing_output_lines()),
        ]
        return [(title, lines) for title, lines in sections if lines]

    def without_costs(self) -> List[Run]:
        """Scored runs whose costs were not recorded (no `cost.json` from `tune_cost`)."""
        return [run for run in self.runs if run.scored and not has_costs(run)]

    def without_predictions(self) -> List[Run]:
        return [run for run in self.runs if run.scored and not run.predictions]

    def missing_output_lines(self) -> List[str]:
        """Which scored runs lack costs or dev predictions: one line if all do, else per run."""
        scored = [run for run in self.runs if run.scored]
        no_costs, no_predictions = self.without_costs(), self.without_predictions()
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
                f"None of the {len(scored)} scored runs has {PREDICTIONS_NAME} (tune-grid and "
                "tune-search write it after training; older runs have none)."
            )
        for run in scored:
            missing = []
            if not all_no_costs and any(run is other for other in no_costs):
                missing.append(f"no costs ({COST_NAME})")
            if not all_no_predictions and any(run is other for other in no_predictions):
                missing.append(f"no {PREDICTIONS_NAME}")
            if missing:
                lines.append(f"{_display_path(run.path)}: {', '.join(missing)}")
        return lines

    def problem_lines(self) -> List[str]:
        lines = []
        for run in self.problems:
            line = f"{run.status}: {run.path}"
            extras = [
                extra for extra in (run.detail, f"log: {run.log}" if run.log else None) if extra
            ]
            if extras:
                line += " (" + "; ".join(extras) + ")"
            lines.append(line)
        return lines


def _task_title(task: str) -> str:
    return TASK_TITLES.get(task, task)


def _display_path(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _signed(value: float, digits: int = 1) -> str:
    return f"{value:+.{digits}f}".replace(f"-{0:.{digits}f}", f"+{0:.{digits}f}")


def _seed_list(seeds: Sequence[Optional[int]]) -> str:
    known = sorted(seed for seed in seeds if seed is not None)
    unknown = len(seeds) - len(known)
    text = ", ".join(str(seed) for seed in known)
    if unknown:
        text += (", " if text else "") + f"{unknown} without a seed"
    return f"({text})" if len(seeds) > 1 else text


def _no_interval_reason(row: "Row") -> str:
    scored = [run for cell in row.cells.values() for run in cell.scored_runs]
    if not any(run.predictions for run in scored):
        return f"no scored run has {PREDICTIONS_NAME}"
    with_predictions = [
        mode
        for mode in row.used_modes()
        if any(run.predictions for run in row.cells[mode].scored_runs)
    ]
    return f"only {', '.join(with_predictions)} has {PREDICTIONS_NAME}, nothing to compare with"


def equivalent_verdict(margin: float) -> str:
    """A tie's verdict when its interval lies inside (-margin, +margin): `equivalent within 0.5`."""
    return f"equivalent within {margin:g}"


def within_margin(result: PairedResult, margin: Optional[float]) -> PairedResult:
    """
    `result` with the verdict `equivalent within M` where it is a tie and its interval lies
    inside (-M, +M) (TOST on the same interval: each one-sided test at (1 - confidence) / 2);
    unchanged otherwise, or without a margin. A mode's win stays a win even inside the margin.
    """
    if margin is None or result.verdict != TIE or not -margin < result.low <= result.high < margin:
        return result
    return dataclasses.replace(result, verdict=equivalent_verdict(margin))


def verdict_cell(result: Optional[PairedResult]) -> Tuple[str, Optional[str]]:
    """`ft +1.2 [+0.3, +2.1]`, `tie -0.4 [-1.5, +0.6]`, or `—`; marked with the winner."""
    if result is None:
        return NONE, None
    interval = f"[{_signed(result.low)}, {_signed(result.high)}]"
    mark = result.verdict if result.verdict in MARK_COLOURS else None
    return f"{result.verdict} {_signed(result.difference)} {interval}", mark


def _paper(value: Optional[float]) -> str:
    return NONE if value is None else f"{value:.1f}"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def has_costs(run: Run) -> bool:
    """
    Whether the run's `cost.json` has what the `tune_cost` callback records. A run still
    training (or killed) has one too, with the epochs so far: the cost table counts only scored
    runs (`Summary.runs_with_costs`).
    """
    return run.cost is not None and _is_number(run.cost.get(COST_MARKER))


def has_paper_numbers(rows: Sequence[Row]) -> bool:
    """Whether some row has the paper's Table 2 numbers (one of its tasks with its encoder)."""
    return any(value is not None for row in rows for value in row.paper.values())


def shown_modes(rows: Sequence[Row]) -> List[str]:
    """fe, ft and sf, then bitfit and lora where some row has runs of them."""
    used = {mode for row in rows for mode in row.used_modes()}
    return list(ALWAYS_SHOWN_MODES) + [
        mode for mode in RUN_MODES if mode not in ALWAYS_SHOWN_MODES and mode in used
    ]


def format_params(count: float) -> str:
    """`110.1M`, `592.4k`, `13`."""
    if count >= 1e6:
        return f"{count / 1e6:.2f}M"
    if count >= 1e3:
        return f"{count / 1e3:.1f}k"
    return f"{count:.0f}"


def _cost_text(summary: Summary, key: str, kind: str) -> str:
    mean = summary.cost_mean(key)
    if mean is None:
        return NOT_AVAILABLE
    if kind == "params":
        text = format_params(mean)
        total = summary.cost_mean("total_params")
        if key == "trainable_params" and total:
            text += f" ({_share(mean, total)})"
        return text
    if kind == "seconds":
        return f"{mean:.1f}" if mean >= 1 else f"{mean:.2f}"
    if kind == "bytes":
        mean /= 2**20
    return f"{mean:.1f}" if mean >= 0.1 else f"{mean:.2f}"


def _share(part: float, total: float) -> str:
    """`1.45%`, `42.0%`, `100%`; `>99.9%` for a frozen encoder that is a sliver of the model."""
    if part >= total:
        return "100%"
    share = 100.0 * part / total
    if share > 99.9:
        return ">99.9%"
    return f"{share:.2f}%" if share < 10 else f"{share:.1f}%"


def uses_feature_cache(run: Run) -> bool:
    """Whether the run's encoder had a feature cache (`feature_cache` set in its config)."""
    return any(
        key.split(".")[-1] == "feature_cache" or ".feature_cache." in key
        for key, value in (run.settings or {}).items()
        if value not in ("null", "false")
    )


def encoder_passes(run: Run) -> Optional[Tuple[int, int]]:
    """
    (forward+backward, forward-only) encoder passes over training instances, from `cost.json`'s
    `epoch_instances` and `epoch_encoder_trained`: an epoch whose encoder trains counts its
    instances forward and backward, a frozen epoch forward only, and with a feature cache only
    the first frozen epoch (the later ones read the cache and run no encoder). Validation passes
    are not counted. `None` for a run that did not record them.
    """
    cost = run.cost or {}
    instances, trained = cost.get("epoch_instances"), cost.get("epoch_encoder_trained")
    if not isinstance(instances, list) or not isinstance(trained, list) or not instances:
        return None
    cached = uses_feature_cache(run)
    both = forward = 0
    frozen_epochs = 0
    for count, encoder_trained in zip(instances, trained):
        if encoder_trained:
            both += int(count)
            continue
        if not cached or frozen_epochs == 0:
            forward += int(count)
        frozen_epochs += 1
    return both, forward


def mean_encoder_passes(summary: Summary) -> Optional[Tuple[float, float]]:
    """The mean of `encoder_passes` over the scored runs that recorded it."""
    counted = [p for p in map(encoder_passes, summary.scored_runs) if p is not None]
    if not counted:
        return None
    return (
        statistics.fmean(both for both, _ in counted),
        statistics.fmean(forward for _, forward in counted),
    )


def passes_text(passes: Optional[Tuple[float, float]]) -> str:
    """`12.0k fwd+bwd, 4.0k fwd`, `n/a`."""
    if passes is None:
        return NOT_AVAILABLE
    both, forward = passes
    return f"{format_params(both)} fwd+bwd, {format_params(forward)} fwd"


def cost_table(title: str, rows: Sequence[Row]) -> Optional[Table]:
    """
    The cost table under an encoder's scores: one row per task and mode with runs, each value
    the mean over the runs that recorded it. `None` when no run of these rows has a `cost.json`.
    """
    cells = [(row.task, mode, row.cells[mode]) for row in rows for mode in row.used_modes()]
    if not any(run.cost is not None for _, _, summary in cells for run in summary.runs):
        return None
    gpu = any(summary.cost_mean(GPU_KEY) is not None for _, _, summary in cells)
    columns = [column for column in COST_COLUMNS if gpu or column[1] != GPU_KEY]
    # Encoder passes (the unit every machine shares) where some run recorded them.
    passes = any(mean_encoder_passes(summary) is not None for _, _, summary in cells)
    body = []
    for task, mode, summary in cells:
        body.append(
            # One "Cell" column ("SICK-E lora"), so rows never start like the score table's.
            [(f"{_task_title(task)} {mode}", None)]
            + [(_cost_text(summary, key, kind), None) for _, key, kind in columns]
            + ([(passes_text(mean_encoder_passes(summary)), None)] if passes else [])
            + [(f"{len(summary.runs_with_costs())}/{len(summary.runs)}", None)]
        )
    header = ["Cell"] + [name for name, _, _ in columns]
    header += [PASSES_HEADER] if passes else []
    header += ["Runs with costs"]
    return Table(f"{title}: costs (mean over runs)", header, body)


def row_pairs(modes: Sequence[str]) -> List[Tuple[str, str]]:
    """
    Each mode against fe (mode_a the mode, mode_b "fe"), then sf / bitfit / lora against ft, then
    lora against bitfit, each pair where both of its modes are in `modes`.
    """
    pairs = [(mode, REFERENCE) for mode in modes if mode != REFERENCE and REFERENCE in modes]
    pairs += [
        (mode, SECOND_REFERENCE)
        for mode in modes
        if mode not in (REFERENCE, SECOND_REFERENCE) and SECOND_REFERENCE in modes
    ]
    if all(mode in modes for mode in PEFT_PAIR):
        pairs.append(PEFT_PAIR)
    return pairs


def paired_table(title: str, rows: Sequence[Row]) -> Optional[Table]:
    """
    Every pair of the encoder's rows: one column per pair (`ft − fe`, `sf − fe`, ..., `sf − ft`)
    with `difference [low, high] verdict`; rows of tasks with at least one pair. `None` if none.
    """
    compared = [row for row in rows if row.paired]
    if not compared:
        return None
    order = row_pairs(RUN_MODES)
    present = {(r.mode_a, r.mode_b) for row in compared for r in row.paired}
    pairs = [pair for pair in order if pair in present]
    body = []
    for row in compared:
        # One "Task (metric)" column, so its rows never start like the score table's.
        cells: List[Cell] = [(f"{row.title} ({row.metric})", None)]
        for mode_a, mode_b in pairs:
            result = row.pair(mode_a, mode_b)
            if result is None:
                cells.append((NONE, None))
            else:
                mark = result.verdict if result.verdict in MARK_COLOURS else None
                cells.append((result.text(), mark))
        seeds = ", ".join(f"{mode} {len(seeds)}" for mode, seeds in row.paired_seeds.items())
        cells += [(str(row.paired[0].examples), None), (seeds, None)]
        body.append(cells)
    header = ["Task (metric)"] + [f"{a} − {b}" for a, b in pairs] + ["Dev examples", "Seeds"]
    return Table(f"{title}: paired differences (points, 95% CI, verdict)", header, body)


def _setting(runs: Sequence[Run], name: str) -> Optional[str]:
    """The value of config key `name` (at any depth, e.g. `model.positive_label`) in the runs."""
    import json

    for run in runs:
        for key, value in (run.settings or {}).items():
            if key.split(".")[-1] == name:
                try:
                    loaded = json.loads(value)
                except ValueError:
                    continue
                if isinstance(loaded, str):
                    return loaded
    return None


def bootstrap_options(runs: Sequence[Run], kind: str) -> Dict[str, Optional[str]]:
    """
    What the paired bootstrap needs besides the predictions, read from the runs' configs: the
    `positive_label` of an F1 metric and the `label_encoding` of span F1 (`kind` is
    `paired.metric_kind` of the runs' metric).
    """
    return {
        "positive_label": _setting(runs, "positive_label") if kind == "f1" else None,
        "tag_encoding": _setting(runs, "label_encoding") if kind == "span_f1" else None,
    }


def compute_paired(
    row: Row, replicates: int = DEFAULT_REPLICATES, seed: int = 0, margin: Optional[float] = None
) -> None:
    """
    Fills `row.paired`, `row.paired_seeds` and `row.paired_notes`: the paired bootstrap of every
    pair of `row_pairs` over the scored runs with predictions, in one `compare_modes` call (the
    same resamples for every pair). Problems (a broken or mismatched predictions file, a metric
    the bootstrap does not know) become notes, never errors. With a `margin` (points), a tie
    whose interval lies inside (-margin, +margin) gets the verdict `equivalent_verdict(margin)`.
    """
    by_mode: Dict[str, List[Predictions]] = {}
    used: Dict[str, List[Run]] = {}
    notes: List[str] = []
    without: List[str] = []  # modes with scores but no predictions
    for mode in row.used_modes():
        scored = row.cells[mode].scored_runs
        mixed = row.cells[mode].mixed_settings()
        if mixed:
            named = ", ".join(list(mixed)[:3]) + (", ..." if len(mixed) > 3 else "")
            notes.append(
                f"{mode}: no verdict: its runs were trained differently ({named}); put runs "
                "of one setting in a cell (see the cells that mix settings)"
            )
            continue
        loaded = []
        for run in scored:
            if not run.predictions:
                continue
            try:
                loaded.append((run, read_predictions(run.path / PREDICTIONS_NAME)))
            except (PredictionsMismatch, OSError, UnicodeDecodeError) as error:
                notes.append(f"{mode}: left out of the intervals: {error}")
        if not loaded:
            if scored:
                without.append(mode)
            continue
        if len(loaded) < len(scored):
            notes.append(
                f"{mode}: the intervals use {len(loaded)} of its {len(scored)} scored runs (the "
                f"others have no usable {PREDICTIONS_NAME})"
            )
        by_mode[mode] = [predictions for _, predictions in loaded]
        used[mode] = [run for run, _ in loaded]
    if by_mode and without:
        notes.append(f"not compared: {', '.join(without)} (no scored run has {PREDICTIONS_NAME})")
    pairs = row_pairs(list(by_mode))
    if not pairs:
        row.paired_notes = notes
        return
    runs = [run for mode_runs in used.values() for run in mode_runs]
    metrics = sorted({str(run.metric) for run in runs})
    if len(metrics) > 1:
        row.paired_notes = notes + [
            f"no intervals: the runs' metrics differ ({', '.join(metrics)})"
        ]
        return
    metric = metrics[0]
    try:
        kind = metric_kind(metric)
    except ValueError as error:
        row.paired_notes = notes + [f"no intervals: {error}"]
        return
    options = dict(replicates=replicates, seed=seed, **bootstrap_options(runs, kind))
    try:
        results = compare_modes(by_mode, metric, pairs=pairs, **options)
    except PredictionsMismatch:
        # Some modes (or seeds) were scored on another dev set: compare pair by pair, so the
        # pairs that do match still get their interval, and name the files of the others.
        results = []
        for mode_a, mode_b in pairs:
            two = {mode_a: by_mode[mode_a], mode_b: by_mode[mode_b]}
            try:
                results += compare_modes(two, metric, pairs=[(mode_a, mode_b)], **options)
            except (PredictionsMismatch, ValueError) as error:
                notes.append(f"no interval for {mode_a} vs {mode_b}: {error}")
    except ValueError as error:  # e.g. a positive_label that is no label of the predictions
        results = []
        notes.append(f"no intervals: {error}")
    row.paired = [within_margin(result, margin) for result in results]
    compared = {mode for result in results for mode in (result.mode_a, result.mode_b)}
    row.paired_seeds = {
        mode: [run.seed for run in used[mode]] for mode in by_mode if mode in compared
    }
    row.paired_notes = notes


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
    `intervals` (and the validation split) the paired bootstrap of each row's modes, with
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
            if not any((encoder, task, mode) in cells for mode in RUN_MODES):
                continue
            paper = PAPER_TABLE_2.get(encoder, {})
            rows.append(
                Row(
                    task=task,
                    cells={mode: cells.get((encoder, task, mode), Summary()) for mode in RUN_MODES},
                    paper={mode: paper.get(mode, {}).get(task) for mode in ("fe", "ft")},
                )
            )
        encoder_rows[encoder] = rows

    cards: Dict[str, Any] = {}
    for rows in encoder_rows.values():
        for row in rows:
            if intervals and split == "validation":
                compute_paired(row, replicates, margin=margin)
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
    runs, superseded = load_runs([Path(d) for d in dirs], split)
    roots = [str(d) for d in dirs]
    report = build_report(runs, roots, superseded, split, intervals, replicates, margin)
    report.sequential = [
        saved for saved in (read_json(Path(d) / SEQUENTIAL_NAME) for d in dirs) if saved is not None
    ]
    return report


# The answer first -------------------------------------------------------------------------------

ANSWER_TITLE = "The answer"
DEFAULT_RECIPES = (
    "default recipes (each mode at its config's recipe, none searched), so the verdict "
    "compares recipes as much as ways of adapting the encoder"
)
SEARCHED_RECIPES = "searched recipes (every run records the search it came from)"


def last_epoch_best(run: Run) -> Optional[Tuple[bool, int]]:
    """
    (whether the run's best epoch was its last, epochs trained) from its `metrics.json`
    (`best_epoch`, `epoch`: 0-based); `None` without both, or after a single epoch (nothing to
    tell a rising curve from).
    """
    metrics = read_json(run.path / METRICS_NAME) or {}
    best, last = metrics.get("best_epoch"), metrics.get("epoch")
    if not (_is_number(best) and _is_number(last)) or last < 1:
        return None
    return best >= last, int(last) + 1


def under_trained(row: Row) -> Dict[str, Tuple[int, int, int]]:
    """Per mode whose best epoch was the last in some scored run: (such runs, runs that tell,
    most epochs trained)."""
    found: Dict[str, Tuple[int, int, int]] = {}
    for mode in row.used_modes():
        told = [t for t in map(last_epoch_best, row.cells[mode].scored_runs) if t is not None]
        rising = sum(1 for last, _ in told if last)
        if rising:
            found[mode] = (rising, len(told), max(epochs for _, epochs in told))
    return found


def _against(result: PairedResult, mode: str) -> Tuple[str, float, float, float]:
    """(the other mode, difference, low, high) of a pair, as `mode` − the other."""
    if result.mode_a == mode:
        return result.mode_b, result.difference, result.low, result.high
    return result.mode_a, -result.difference, -result.high, -result.low


def _cost_key(row: Row, mode: str) -> Tuple[float, float, int]:
    """Cheapest first: mean seconds per epoch, then trainable parameters, then `RUN_MODES` order."""
    cell = row.cells[mode]
    seconds = cell.cost_mean("mean_epoch_seconds")
    params = cell.cost_mean("trainable_params")
    return (
        seconds if seconds is not None else float("inf"),
        params if params is not None else float("inf"),
        RUN_MODES.index(mode),
    )


def choose_arm(row: Row) -> Optional[str]:
    """
    The arm to use: of the compared modes that no pair found worse than another (a tie or a
    win in each of their pairs), the cheapest (`_cost_key`); `None` without paired results.
    """
    compared = {mode for result in row.paired for mode in (result.mode_a, result.mode_b)}
    beaten = {
        result.mode_b if result.verdict == result.mode_a else result.mode_a
        for result in row.paired
        if result.verdict in (result.mode_a, result.mode_b)
    }
    unbeaten = [mode for mode in RUN_MODES if mode in compared and mode not in beaten]
    return min(unbeaten, key=lambda mode: _cost_key(row, mode)) if unbeaten else None


def _cost_words(row: Row, mode: str) -> str:
    """`12.3 s/epoch, 22.57M trainable, encoder passes 15.0k fwd+bwd, 0 fwd` (what of it the
    runs recorded; `no costs recorded`)."""
    cell = row.cells[mode]
    seconds = cell.cost_mean("mean_epoch_seconds")
    params = cell.cost_mean("trainable_params")
    parts = [f"{seconds:.1f} s/epoch"] if seconds is not None else []
    parts += [f"{format_params(params)} trainable"] if params is not None else []
    passes = mean_encoder_passes(cell)
    parts += [f"encoder passes {passes_text(passes)}"] if passes is not None else []
    return ", ".join(parts) if parts else "no costs recorded"


def answer_sentence(label: str, row: Row) -> Optional[str]:
    """One sentence: which arm, by how much (95% intervals), at what cost, how fair."""
    arm = choose_arm(row)
    if arm is None:
        return None
    said = []
    for result in row.paired:
        if arm not in (result.mode_a, result.mode_b):
            continue
        other, difference, low, high = _against(result, arm)
        interval = f"{_signed(difference)} [{_signed(low)}, {_signed(high)}]"
        if result.verdict == arm:
            said.append(f"beats {other} by {interval}")
        elif result.verdict == TIE:
            said.append(f"ties {other} ({interval})")
        else:  # equivalent within the margin
            said.append(f"is {result.verdict} of {other} ({interval})")
    # A tie (or equivalence) with another arm: both are unbeaten, and the cheaper was chosen.
    tied = any(not text.startswith("beats") for text in said)
    why = " (the cheapest per epoch of the arms that no other beats)" if tied else ""
    others = [mode for mode in row.used_modes() if mode != arm and row.cells[mode].scored_runs]
    cost = f"costs {_cost_words(row, arm)}" + (
        " against " + "; ".join(f"{mode} {_cost_words(row, mode)}" for mode in others)
        if others
        else ""
    )
    searched = all(
        run.info.get("search") for cell in row.cells.values() for run in cell.scored_runs
    )
    fair = SEARCHED_RECIPES if searched else DEFAULT_RECIPES
    first = row.paired[0]
    return (
        f"{label} ({first.metric}, points, 95% intervals): use {arm} "
        f"({MODE_TITLES.get(arm, arm)}){why}: it {', '.join(said)}; it {cost}; {fair}."
    )


def answer_lines(report: "Report") -> List[str]:
    """The answer sentence of every row with paired results, each with its under-training
    warnings (a mode whose best epoch was its last: still improving when it stopped)."""
    lines = []
    for label, row in report.labelled_rows():
        sentence = answer_sentence(label, row)
        if sentence is not None:
            lines.append(sentence)
        for mode, (rising, told, epochs) in under_trained(row).items():
            lines.append(
                f"Warning: {label} {mode}: its best epoch was its last in {rising} of {told} "
                f"runs ({epochs} epochs): still improving when training stopped, so "
                "under-trained at a recipe nobody searched; more epochs (TUNE_EPOCHS) or "
                "another rate may change its verdict."
            )
    return lines


def _markdown_escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(report: Report) -> str:
    lines = ["# Feature extraction vs fine-tuning", ""]
    lines += [line + "  " for line in report.summary_lines()]
    answer = answer_lines(report)
    if answer:
        lines += ["", f"## {ANSWER_TITLE}", ""]
        lines += [f"- {_markdown_escape(line)}" for line in answer]
    if not report.runs:
        lines += ["", "No runs found (a run directory holds config.json or tune_run.json)."]
    for table in report.tables():
        lines += ["", f"## {table.title}", ""]
        lines.append("| " + " | ".join(table.header) + " |")
        lines.append("|" + "|".join("---" for _ in table.header) + "|")
        for row in table.rows:
            lines.append("| " + " | ".join(_markdown_escape(text) for text, _ in row) + " |")
    for title, notes in report.notes():
        lines += ["", f"## {title}", ""]
        lines += [f"- {_markdown_escape(line)}" for line in notes]
    return "\n".join(lines) + "\n"


def _summary_json(summary: Summary) -> Dict[str, Any]:
    return {
        "metric": summary.metrics,
        "mean": summary.mean,
        "std": summary.std,
        "n": len(summary.scores),
        "as_percent": summary.as_percent,
        "text": summary.text(),
        "mixed_settings": summary.mixed_settings(),
        "repeated_seeds": sorted(summary.repeated_seeds()),
        "cost": summary.cost_json(),
        "runs": [
            {
                "path": str(run.path),
                "seed": run.seed,
                "status": run.status,
                "metric": run.metric,
                "value": run.value,
                "detail": run.detail,
                "log": run.log,
                "cost": run.cost,
                "predictions": run.predictions,
            }
            for run in summary.runs
        ],
    }


def render_json(report: Report) -> Dict[str, Any]:
    """The report as data (`--json`): every Table 2 row with its cells, then the other runs."""
    rows = []
    for encoder, encoder_rows in report.encoder_rows.items():
        for row in encoder_rows:
            rows.append(
                {
                    "encoder": encoder,
                    "task": row.task,
                    "metric": row.metric,
                    "delta": row.delta,
                    "delta_favours": None if row.delta is None else delta_mark(row.delta),
                    "paper": row.paper,
                    "paper_delta": row.paper_delta,
                    "verdict": None if row.verdict is None else row.verdict.verdict,
                    "paired": [result.as_dict() for result in row.paired],
                    "paired_seeds": row.paired_seeds,
                    "paired_notes": row.paired_notes,
                    "overlap": [known.overlap.text() for known in row.overlaps],
                    "overlap_kind": row.overlap_kind,
                    "overlap_details": [known.as_dict() for known in row.overlaps],
                    "overlap_unknown": row.overlap_unknown,
                    "cells": {
                        mode: _summary_json(cell)
                        for mode, cell in row.cells.items()
                        if mode in ALWAYS_SHOWN_MODES or cell.runs
                    },
                }
            )
    return {
        "answer": answer_lines(report),
        "split": report.split,
        "roots": report.roots,
        "superseded": report.superseded,
        "paired_test": (
            describe_test(report.replicates)
            if report.intervals and report.split == "validation"
            else None
        ),
        "replicates": report.replicates,
        "margin": report.margin,
        "rows": rows,
        "others": [dict(label=label, **_summary_json(summary)) for label, summary in report.others],
        "sequential": report.sequential,
        "runs_without_costs": [str(run.path) for run in report.without_costs()],
        "runs_without_predictions": [str(run.path) for run in report.without_predictions()],
    }


# The paper colours cells that favour fine-tuning warm and feature extraction cold.
MARK_COLOURS = {"ft": "#f7c6a3", "fe": "#b8d8f0"}
