"""
The report model rendered as Markdown (what `tune-report` prints) and as JSON (`--json`): the
summary lines, the answer, the tables and the notes of a `Report`, and in the JSON every row
with its cells and runs. The HTML and the PNG (`html_report`) show the same model.
"""

from typing import Any, Dict, Optional

from allennlp_tune.reporting.answer import ANSWER_TITLE, answer_lines
from allennlp_tune.reporting.cells import Row, Summary
from allennlp_tune.reporting.labels import REPORT_TITLE
from allennlp_tune.reporting.paired import describe_test
from allennlp_tune.reporting.report import Report
from allennlp_tune.reporting.tables import ALWAYS_SHOWN_MODES, delta_mark


def _markdown_escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(report: Report) -> str:
    """The report as Markdown, as `tune-report` prints it: summary, answer, tables, notes."""
    lines = [f"# {REPORT_TITLE}", ""]
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
                "test_predictions": run.test_predictions,
                "test_value": run.test_value,
            }
            for run in summary.runs
        ],
    }


def _test_json(row: Row) -> Optional[Dict[str, Any]]:
    """A dev report's row on test (runs scored on test after training), `None` if none was."""
    if not row.tested:
        return None
    cells = {mode: row.test_cell(mode) for mode in row.used_modes()}
    return {
        "cells": {
            mode: {"mean": cell.mean, "std": cell.std, "n": len(cell.scores), "text": cell.text()}
            for mode, cell in cells.items()
            if cell.runs
        },
        "paired": [result.as_dict() for result in row.test_paired],
        "paired_seeds": row.test_paired_seeds,
        "paired_notes": row.test_paired_notes,
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
                    "test": _test_json(row) if report.split == "validation" else None,
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
        "paired_test": describe_test(report.replicates) if report.intervals else None,
        "replicates": report.replicates,
        "margin": report.margin,
        "rows": rows,
        "others": [dict(label=label, **_summary_json(summary)) for label, summary in report.others],
        "sequential": report.sequential,
        "budgets": report.budgets,
        "broken_files": [
            {"path": str(broken.path), "problems": broken.problems} for broken in report.broken
        ],
        "runs_without_costs": [str(run.path) for run in report.without_costs()],
        "runs_without_predictions": [str(run.path) for run in report.without_predictions()],
    }
