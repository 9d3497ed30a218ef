"""
The report model's cells and rows: a `Summary` holds the runs of one cell (a task, encoder,
mode and variant) and the statistics the tables show (mean and seed spread, statuses, mixed
settings, repeated seeds, costs); a `Row` holds one task's cells for an encoder beside the
paper's numbers, with its paired comparisons and its known overlaps once they are filled in
(`intervals.paired_results`, `report.find_known_overlaps`).
"""

import dataclasses
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from allennlp_tune.modes import ordered_run_modes
from allennlp_tune.reporting.costs import (
    COST_COLUMNS,
    _is_number,
    has_costs,
    mean_encoder_passes,
)
from allennlp_tune.reporting.labels import (
    METRIC_TITLES,
    NONE,
    OVERLAP_MARK,
    PAPER_METRICS,
    REFERENCE,
    RELATED_OVERLAP_MARK,
    SECOND_REFERENCE,
    task_title,
)
from allennlp_tune.reporting.overlap import DIRECT, Overlap
from allennlp_tune.reporting.paired import PairedResult
from allennlp_tune.rundir import (
    OK,
    STATUSES,
    Run,
)

MIXED = "mixed settings"
REPEATED = "repeated seed"
ABSENT = "(absent)"


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
        """Whether every scored run's metric is one where higher is better (shown ×100)."""
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
        """The cell's metric titles (`accuracy`, or `accuracy / loss` where runs differ)."""
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
        """The cell's mean costs as the JSON holds them, with its runs with costs and passes."""
        means: Dict[str, Any] = {key: self.cost_mean(key) for _, key, _ in COST_COLUMNS}
        means["total_params"] = self.cost_mean("total_params")
        means["runs_with_costs"] = len(self.runs_with_costs())
        passes = mean_encoder_passes(self.scored_runs)
        means["encoder_passes"] = (
            None if passes is None else {"forward_backward": passes[0], "forward": passes[1]}
        )
        return means

    def status_counts(self) -> Dict[str, int]:
        """How many of the cell's runs have each status, every status counted."""
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
    """
    One task of one encoder: its cells by mode beside the paper's numbers, and what the report
    found about them (paired comparisons, known overlaps).
    """

    task: str
    cells: Dict[str, Summary]
    paper: Dict[str, Optional[float]]
    # The paired comparisons (`paired_results`): reference pairs (mode_b "fe") first.
    paired: List[PairedResult] = field(default_factory=list)
    # Why a pair or the row has no interval, and which runs were left out of the intervals.
    paired_notes: List[str] = field(default_factory=list)
    # The seeds whose predictions went into the intervals, per mode.
    paired_seeds: Dict[str, List[Optional[int]]] = field(default_factory=dict)
    # In a report of dev scores, the same from the runs scored on test after training
    # (`test_predictions.jsonl`, `experiments.test_split`); empty where none was.
    test_paired: List[PairedResult] = field(default_factory=list)
    test_paired_seeds: Dict[str, List[Optional[int]]] = field(default_factory=dict)
    test_paired_notes: List[str] = field(default_factory=list)
    overlaps: List[KnownOverlap] = field(default_factory=list)
    # Encoder folders of this row's runs without a model card (overlap unknown), and card errors.
    overlap_unknown: List[str] = field(default_factory=list)
    overlap_problems: List[str] = field(default_factory=list)

    def pair(self, mode_a: str, mode_b: str, test: bool = False) -> Optional[PairedResult]:
        """The pair's result (on dev, or with `test` on test), `None` without one."""
        for result in self.test_paired if test else self.paired:
            if (result.mode_a, result.mode_b) == (mode_a, mode_b):
                return result
        return None

    def test_cell(self, mode: str) -> Summary:
        """The mode's scored runs that have a test score (`Run.test_value`), scored by it."""
        return Summary(
            [
                dataclasses.replace(run, value=run.test_value)
                for run in self.cells[mode].scored_runs
                if run.test_value is not None
            ]
        )

    @property
    def tested(self) -> bool:
        """Whether some scored run of the row has a test score or test predictions."""
        return any(
            run.test_value is not None or run.test_predictions
            for cell in self.cells.values()
            for run in cell.scored_runs
        )

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
        return f"{task_title(self.task)} {mark}" if mark else task_title(self.task)

    @property
    def delta(self) -> Optional[float]:
        """ft − fe; `None` where either cell averages runs trained differently (mixed)."""
        if any(self.cells[mode].mixed_settings() for mode in ("fe", "ft")):
            return None
        fe, ft = self.cells["fe"].mean, self.cells["ft"].mean
        return None if fe is None or ft is None else ft - fe

    @property
    def paper_delta(self) -> Optional[float]:
        """ft − fe of the paper's numbers; `None` where the paper has no such row."""
        fe, ft = self.paper["fe"], self.paper["ft"]
        return None if fe is None or ft is None else ft - fe

    def used_modes(self) -> List[str]:
        """The modes of this row that have runs, in the report's order (`ordered_run_modes`)."""
        return [mode for mode in ordered_run_modes(self.cells) if self.cells[mode].runs]

    @property
    def metric(self) -> str:
        """The row's metric titles from its runs, else the paper's metric for the task."""
        ours = Summary([run for cell in self.cells.values() for run in cell.runs]).metrics
        return ours if ours != "?" else PAPER_METRICS.get(self.task, ours)
