"""
The answer at a glance: tune-report's HTML page with figures, and the same tables and figures in
one PNG, both built from the report model (`Report`) the Markdown is rendered from.

`render_report_html(report)` writes ONE self-contained page: the report's summary lines, answer,
tables and notes, and per task (one row of `render_json(report)`'s `rows`) its panels
(`panels.task_panels`), each an inline SVG drawn by matplotlib (no scripts, fonts,
stylesheets, images or URLs outside the page, so it opens offline and can be mailed), with the
values it plots under it. A panel that cannot be drawn is never left out: it is shown as a named
box saying why. `render_report_png(report, path)` lays out the same tables and panels in one PNG.
"""

import html
import io
import re
from pathlib import Path
from typing import Any, List, Mapping, Optional, Sequence, Union

from allennlp_tune.reporting.answer import ANSWER_TITLE, answer_lines
from allennlp_tune.reporting.figures import (
    draw_missing,
)
from allennlp_tune.reporting.labels import NONE, REPORT_TITLE, mark_css
from allennlp_tune.reporting.panel_data import (
    task_key,
    task_rows,
    task_title,
)
from allennlp_tune.reporting.panels import task_panels
from allennlp_tune.reporting.render import render_json
from allennlp_tune.reporting.report import Report

_SVG_START = re.compile(r"^.*?(?=<svg\b)", re.S)
_ID = re.compile(r'\bid="([^"]+)"')


def figure_svg(figure, prefix: str) -> str:
    """The figure as an inline `<svg>`: no XML prolog, DOCTYPE, metadata or namespace URLs, and
    its matplotlib ids prefixed with `prefix` (ours, `g-...`, kept) so that several figures can
    share a page."""
    import matplotlib

    buffer = io.StringIO()
    metadata = {"Date": None, "Creator": None, "Format": None, "Type": None}
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "allennlp-tune"}):
        figure.savefig(buffer, format="svg", metadata=metadata, bbox_inches="tight")
    svg = _SVG_START.sub("", buffer.getvalue(), count=1)
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    svg = svg.replace("xlink:href=", "href=")
    ids = {name for name in _ID.findall(svg) if not name.startswith("g-")}

    def rename(match: "re.Match[str]") -> str:
        name = match.group(2)
        return match.group(1) + (prefix + name if name in ids else name) + match.group(3)

    svg = re.sub(r'(\bid="|href="#|url\(#)([^")]+)([")])', rename, svg)
    return svg.strip()


def _table_html(header: Sequence[str], rows: Sequence[Sequence[Any]], marks: bool = False) -> str:
    """A table as HTML; with `marks`, cells are (text, mark) and a mark becomes a class."""
    out = ["<table>", "<tr>" + "".join(f"<th>{html.escape(str(h))}</th>" for h in header) + "</tr>"]
    for row in rows:
        cells = []
        for cell in row:
            text, mark = cell if marks else (cell, None)
            attribute = f' class="{html.escape(mark)}"' if mark else ""
            cells.append(f"<td{attribute}>{html.escape(str(text))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _overlap_lines(row: Mapping[str, Any]) -> List[str]:
    """The known-overlap lines a row's JSON holds, as text."""
    lines = []
    for entry in row.get("overlap") or []:
        if isinstance(entry, dict):
            text = entry.get("text") or entry.get("reason") or entry.get("message")
            lines.append(str(text) if text else "; ".join(f"{k}: {v}" for k, v in entry.items()))
        else:
            lines.append(str(entry))
    return lines


STYLE = (
    "body{font-family:sans-serif;margin:1.2em;max-width:1500px;color:#222}"
    "table{border-collapse:collapse;margin:0.3em 0 1em 0;font-size:0.92em}"
    "td,th{border:1px solid #999;padding:3px 8px}th{background:#eee}"
    + mark_css()
    + "h2{margin-bottom:0.2em}h3{margin:0.2em 0}"
    ".panels{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:12px;"
    "align-items:start}"
    "figure{margin:0;padding:6px;border:1px solid #ddd;border-radius:4px;min-width:0}"
    "figure svg{display:block;width:100%;max-width:520px;height:auto}"
    "figcaption{font-size:0.85em;margin-bottom:4px}"
    "figure.missing{background:#f5f5f5;color:#555}"
    "details{font-size:0.8em}p.overlap{background:#fff3cd;padding:4px 8px}"
)


def render_report_html(
    report: Report, probe_dirs: Optional[Mapping[str, Union[str, Path]]] = None
) -> str:
    """
    One self-contained page from the report model, as the Markdown is: its summary lines, the
    answer, its tables and its notes, and per task the figures (forest plot of the paired
    differences, score against cost, learning curves, scalar-mix weights beside the probe),
    drawn from the rows of `render_json(report)`.
    """
    title = REPORT_TITLE
    out = [
        "<!DOCTYPE html>",
        f'<html><head><meta charset="utf-8"><title>{title}</title>',
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{title}</h1>",
    ]
    out += [f"<p>{html.escape(line)}</p>" for line in report.summary_lines()]
    answer = answer_lines(report)
    if answer:
        out.append(f"<h2>{html.escape(ANSWER_TITLE)}</h2><ul>")
        out += [f"<li>{html.escape(str(line))}</li>" for line in answer]
        out.append("</ul>")
    for table in report.tables():
        out.append(f"<h2>{html.escape(table.title)}</h2>")
        out.append(_table_html(table.header, table.rows, marks=True))
    out += _task_sections(task_rows(render_json(report)), probe_dirs)
    for note_title, lines in report.notes():
        out.append(f"<h2>{html.escape(note_title)}</h2><ul>")
        out += [f"<li>{html.escape(line)}</li>" for line in lines]
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _task_sections(
    rows: Sequence[Mapping[str, Any]], probe_dirs: Optional[Mapping[str, Union[str, Path]]]
) -> List[str]:
    """Per task row: its heading, its overlap lines and its panels (a figure or why not)."""
    out = []
    figure_index = 0
    for row in rows:
        out.append(
            f'<h2 id="task-{html.escape(task_key(row))}">{html.escape(task_title(row))}</h2>'
        )
        out += [f'<p class="overlap">{html.escape(line)}</p>' for line in _overlap_lines(row)]
        out.append('<div class="panels">')
        for panel in task_panels(row, probe_dirs):
            if panel.draw is None:
                out.append(
                    f'<figure class="missing"><h3>{html.escape(panel.title)}</h3>'
                    f"<p>Missing: {html.escape(panel.missing or '')}</p></figure>"
                )
                continue
            figure_index += 1
            svg = figure_svg(panel.figure(), f"s{figure_index}-")
            out.append(
                f"<figure><h3>{html.escape(panel.title)}</h3>"
                f"<figcaption>{html.escape(panel.caption)}</figcaption>{svg}"
            )
            if panel.data_rows:
                out.append("<details><summary>plotted values</summary>")
                out.append(_table_html(panel.data_header, panel.data_rows))
                out.append("</details>")
            out.append("</figure>")
        out.append("</div>")
    return out


PNG_WIDTH = 22.0  # inches
PANEL_HEIGHT = 3.4


def render_report_png(
    report: Report,
    path: Union[str, Path],
    probe_dirs: Optional[Mapping[str, Union[str, Path]]] = None,
    dpi: int = 90,
) -> None:
    """
    The report's tables (title right above each) and every task's panels in rows, in one PNG
    (matplotlib's Agg: no display needed), from the same report model as the page.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    tables = [
        (t.title, t.header, [[text for text, _ in r] for r in t.rows]) for t in report.tables()
    ]
    rows = task_rows(render_json(report))
    panels = [task_panels(row, probe_dirs) for row in rows]
    table_heights = [0.2 * (len(body) + 1) + 0.35 for _, _, body in tables]
    # A task whose panels are all missing gets a short row: its boxes of text need no more.
    heights = table_heights + [
        PANEL_HEIGHT + 0.4 if any(panel.draw for panel in task) else 1.6 for task in panels
    ]
    if not heights:
        heights = [1.0]
    figure = Figure(figsize=(PNG_WIDTH, sum(heights) + 0.3), layout="constrained")
    FigureCanvasAgg(figure)
    subfigures = figure.subfigures(len(heights), 1, height_ratios=heights, squeeze=False)[:, 0]
    for subfigure, (table_title, header, body) in zip(subfigures, tables):
        axes = subfigure.add_subplot(1, 1, 1)
        axes.set_axis_off()
        axes.set_title(table_title, loc="left", fontsize=11, fontweight="bold", pad=2)
        drawn = axes.table(
            cellText=[[str(cell) for cell in line] for line in body] or [[NONE] * len(header)],
            colLabels=header,
            colColours=["#eeeeee"] * len(header),
            loc="upper left",
            cellLoc="center",
        )
        drawn.auto_set_font_size(False)
        drawn.set_fontsize(8.5)
        drawn.auto_set_column_width(list(range(len(header))))
    for subfigure, row, task in zip(subfigures[len(tables) :], rows, panels):
        subfigure.suptitle(task_title(row), x=0.005, ha="left", fontsize=12, fontweight="bold")
        axes_list = subfigure.subplots(1, len(task), squeeze=False)[0]
        for axes, panel in zip(axes_list, task):
            if panel.draw is None:
                draw_missing(axes, panel.title, panel.missing or "")
            else:
                panel.draw(axes)
                axes.set_title(panel.title, fontsize=10)
    if not tables and not rows:
        figure.text(0.5, 0.5, "No runs found", ha="center")
    figure.savefig(str(path), dpi=dpi)
