"""
The paper's Table 2 from your own runs: feature extraction (fe) vs fine-tuning (ft) per task.

One table per encoder, one row per task in the paper's order; each cell is the mean ± sample
standard deviation over seeds of the run's primary validation metric, as a percentage like the
paper (metrics where lower is better, such as loss, are shown as they are), with the number of
seeds; tasks other than the paper's (CoLA, a task of one's own run by `tune-compare`) follow
its seven, by name, with the metric of their configs and "—" for the paper's numbers. Delta =
mean(ft) - mean(fe) in points, marked `[ft]` where it favours fine-tuning (delta > 1) and `[fe]`
where it favours feature extraction (delta < -1), as the paper colours it; the comparison uses
the delta rounded as displayed, so a shown +1.0 is not marked. The paper's own numbers (Peters,
Ruder & Smith 2019, "To Tune or Not to Tune?", Table 2) stand beside ours, and
stack-then-finetune (sf) is a further column.

Runs without a score are never dropped: a cell says `failed (1/3)`, `missing metric (1/3)`,
`incomplete (1/3)` (no metrics.json: killed or still training) or `pruned (1/3)`, and the report
lists each such run with its log. A cell whose runs were trained with different settings (their
`config.json` differ in more than the seeds: two learning rates, two data sizes) says `mixed
settings`, and the report lists what differs, so runs from two experiments are never averaged
silently; a cell with two runs of one seed (the same grid reported twice, say) says `repeated
seed` and the report names them. Ablations (config names with a suffix), search trials and runs
whose names follow no convention go to a second table. How runs are found and identified:
`allennlp_tune.results.runs`.
"""

import html
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from allennlp_tune.results.runs import (
    MODES,
    OK,
    STATUSES,
    TASKS,
    Run,
    load_runs,
)

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
MODE_TITLES = {"fe": "feature extraction", "ft": "fine-tuning", "sf": "stack-then-finetune"}
FAVOURS_FINE_TUNING = "[ft]"
FAVOURS_FEATURE_EXTRACTION = "[fe]"
NONE = "—"
MIXED = "mixed settings"
REPEATED = "repeated seed"
ABSENT = "(absent)"
# How many differing config keys the report names per mixed cell.
MAX_MIXED_KEYS = 8
HEADER = ["Task", "Metric", "fe (ours)", "fe (paper)", "ft (ours)", "ft (paper)", "Δ ft−fe (ours)",
          "Δ (paper)", "sf (ours)"]  # fmt: skip
OTHER_HEADER = ["Run", "Metric", "Score"]


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
    def scores(self) -> List[float]:
        """Scores of the runs that have one: percentages where higher is better."""
        return [
            run.value * 100.0 if run.higher_is_better else run.value
            for run in self.runs
            if run.status == OK and run.value is not None
        ]

    @property
    def as_percent(self) -> bool:
        return all(run.higher_is_better for run in self.runs if run.status == OK)

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
class Row:
    task: str
    cells: Dict[str, Summary]
    paper: Dict[str, Optional[float]]

    @property
    def delta(self) -> Optional[float]:
        fe, ft = self.cells["fe"].mean, self.cells["ft"].mean
        return None if fe is None or ft is None else ft - fe

    @property
    def paper_delta(self) -> Optional[float]:
        fe, ft = self.paper["fe"], self.paper["ft"]
        return None if fe is None or ft is None else ft - fe

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

    @property
    def problems(self) -> List[Run]:
        return [run for run in self.runs if run.status != OK]

    def tables(self) -> List[Table]:
        tables = []
        for encoder, rows in self.encoder_rows.items():
            body = []
            for row in rows:
                delta, delta_mark_ = format_delta(row.delta)
                paper_delta, paper_mark = format_delta(row.paper_delta)
                body.append(
                    [
                        (_task_title(row.task), None),
                        (row.metric, None),
                        (row.cells["fe"].text(), None),
                        (_paper(row.paper["fe"]), None),
                        (row.cells["ft"].text(), None),
                        (_paper(row.paper["ft"]), None),
                        (delta, delta_mark_),
                        (paper_delta, paper_mark),
                        (row.cells["sf"].text(), None),
                    ]
                )
            tables.append(Table(ENCODER_TITLES.get(encoder, encoder), HEADER, body))
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
            f"Δ = ft − fe in points; {FAVOURS_FINE_TUNING} favours fine-tuning (Δ > 1), "
            f"{FAVOURS_FEATURE_EXTRACTION} favours feature extraction (Δ < −1). Paper: Peters, "
            "Ruder & Smith (2019), Table 2. sf = stack-then-finetune.",
        ]
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
            ("Cells that mix settings (config.json differs beyond the seed)", self.mixed_lines()),
            ("Cells with a repeated seed (each run counts in n)", self.repeated_lines()),
            ("Runs without a score", self.problem_lines()),
        ]
        return [(title, lines) for title, lines in sections if lines]

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


def _paper(value: Optional[float]) -> str:
    return NONE if value is None else f"{value:.1f}"


def _encoder_order(encoder: str) -> Tuple[int, str]:
    return (list(PAPER_TABLE_2).index(encoder) if encoder in PAPER_TABLE_2 else 99, encoder)


def build_report(
    runs: Sequence[Run],
    roots: Sequence[str] = (),
    superseded: int = 0,
    split: str = "validation",
) -> Report:
    """Groups runs into Table 2 cells (or the other-runs table) and pairs them with the paper."""
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
            if not any((encoder, task, mode) in cells for mode in MODES):
                continue
            paper = PAPER_TABLE_2.get(encoder, {})
            rows.append(
                Row(
                    task=task,
                    cells={mode: cells.get((encoder, task, mode), Summary()) for mode in MODES},
                    paper={mode: paper.get(mode, {}).get(task) for mode in ("fe", "ft")},
                )
            )
        encoder_rows[encoder] = rows

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
    )


def report_from_dirs(dirs: Sequence[Union[str, Path]], split: str = "validation") -> Report:
    runs, superseded = load_runs([Path(d) for d in dirs], split)
    return build_report(runs, [str(d) for d in dirs], superseded, split)


def _markdown_escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(report: Report) -> str:
    lines = ["# Feature extraction vs fine-tuning", ""]
    lines += [line + "  " for line in report.summary_lines()]
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
        "runs": [
            {
                "path": str(run.path),
                "seed": run.seed,
                "status": run.status,
                "metric": run.metric,
                "value": run.value,
                "detail": run.detail,
                "log": run.log,
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
                    "cells": {mode: _summary_json(cell) for mode, cell in row.cells.items()},
                }
            )
    return {
        "split": report.split,
        "roots": report.roots,
        "superseded": report.superseded,
        "rows": rows,
        "others": [dict(label=label, **_summary_json(summary)) for label, summary in report.others],
    }


# The paper colours cells that favour fine-tuning warm and feature extraction cold.
MARK_COLOURS = {"ft": "#f7c6a3", "fe": "#b8d8f0"}


def render_html(report: Report) -> str:
    out = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8"><title>Feature extraction vs fine-tuning</title>',
        "<style>body{font-family:sans-serif}table{border-collapse:collapse;margin-bottom:1em}"
        "td,th{border:1px solid #999;padding:3px 8px}th{background:#eee}"
        + "".join(f"td.{mark}{{background:{colour}}}" for mark, colour in MARK_COLOURS.items())
        + "</style></head><body>",
        "<h1>Feature extraction vs fine-tuning</h1>",
    ]
    out += [f"<p>{html.escape(line)}</p>" for line in report.summary_lines()]
    for table in report.tables():
        out.append(f"<h2>{html.escape(table.title)}</h2><table>")
        out.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in table.header) + "</tr>")
        for row in table.rows:
            cells = []
            for text, mark in row:
                attribute = f' class="{mark}"' if mark else ""
                cells.append(f"<td{attribute}>{html.escape(text)}</td>")
            out.append("<tr>" + "".join(cells) + "</tr>")
        out.append("</table>")
    for title, notes in report.notes():
        out.append(f"<h2>{html.escape(title)}</h2><ul>")
        out += [f"<li>{html.escape(line)}</li>" for line in notes]
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def render_png(report: Report, path: Union[str, Path]) -> None:
    """Draws every table with matplotlib (Agg, no display needed) into a PNG file."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    tables = report.tables() or [Table("No runs found", ["Run"], [[(NONE, None)]])]
    heights = [len(table.rows) + 2 for table in tables]
    figure = Figure(figsize=(16, 0.32 * sum(heights) + 0.8))
    FigureCanvasAgg(figure)
    grid = figure.add_gridspec(len(tables), 1, height_ratios=heights)
    for index, table in enumerate(tables):
        axes = figure.add_subplot(grid[index])
        axes.axis("off")
        axes.set_title(table.title, loc="left", fontsize=10, fontweight="bold")
        colours = [[MARK_COLOURS.get(mark or "", "white") for _, mark in row] for row in table.rows]
        drawn = axes.table(
            cellText=[[text for text, _ in row] for row in table.rows],
            cellColours=colours,
            colLabels=table.header,
            colColours=["#eeeeee"] * len(table.header),
            loc="upper left",
            cellLoc="center",
        )
        drawn.auto_set_font_size(False)
        drawn.set_fontsize(8)
        drawn.auto_set_column_width(list(range(len(table.header))))
        drawn.scale(1.0, 1.3)
    figure.text(0.01, 0.005, report.summary_lines()[2], fontsize=7)
    figure.savefig(str(path), dpi=120, bbox_inches="tight")
