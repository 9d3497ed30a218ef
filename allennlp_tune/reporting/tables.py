"""
The report's tables as data: a `Table` is a title, a header and rows of `Cell`s (a text and the
mode it favours, which the HTML colours). The score table of an encoder (`score_table`), the
paired differences under it (`paired_table`), its costs (`cost_table`) and the other runs
(`other_table`); every renderer shows these same tables.
"""

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from allennlp_tune.modes import ordered_run_modes
from allennlp_tune.reporting.cells import Row, Summary
from allennlp_tune.reporting.costs import (
    COST_COLUMNS,
    GPU_KEY,
    PASSES_HEADER,
    _share,
    format_params,
    mean_encoder_passes,
    passes_text,
)
from allennlp_tune.reporting.intervals import row_pairs
from allennlp_tune.reporting.labels import (
    FAVOURS_FEATURE_EXTRACTION,
    FAVOURS_FINE_TUNING,
    NONE,
    NOT_AVAILABLE,
    cell_mark,
    signed,
    task_title,
)
from allennlp_tune.reporting.paired import PairedResult
from allennlp_tune.rundir import (
    RUN_MODES,
)

# Modes with a column in every encoder table; the others (bitfit, lora) only where some run used
# them.
ALWAYS_SHOWN_MODES = ("fe", "ft", "sf")
VERDICT_HEADER = "Verdict ft vs fe (95% CI)"
HEADER = ["Task", "Metric", "fe (ours)", "fe (paper)", "ft (ours)", "ft (paper)", "Δ ft−fe (ours)",
          "Δ (paper)", "sf (ours)"]  # fmt: skip
# The paper's own numbers: left out of a table where no row has them.
PAPER_COLUMNS = ("fe (paper)", "ft (paper)", "Δ (paper)")
OTHER_HEADER = ["Run", "Metric", "Score"]
OTHER_TITLE = "Other runs (ablations, search trials, unrecognised names)"


def delta_mark(delta: float) -> Optional[str]:
    """ "ft" where the rounded delta favours fine-tuning (> 1), "fe" where < -1, else `None`."""
    shown = round(delta, 1)
    if shown > 1.0:
        return "ft"
    if shown < -1.0:
        return "fe"
    return None


def format_delta(delta: Optional[float]) -> Tuple[str, Optional[str]]:
    """A Delta cell: `+1.2 [ft]` by the old one-point rule, and the mode it favours."""
    if delta is None:
        return NONE, None
    mark = delta_mark(delta)
    marker = {"ft": FAVOURS_FINE_TUNING, "fe": FAVOURS_FEATURE_EXTRACTION}.get(mark or "")
    text = f"{delta:+.1f}".replace("-0.0", "+0.0")
    return (f"{text} {marker}" if marker else text), mark


# A rendered cell: its text and, for delta cells, which mode it favours ("ft", "fe" or None).
Cell = Tuple[str, Optional[str]]


@dataclass
class Table:
    """A table as data: every renderer shows its title, header and cells as they are."""

    title: str
    header: List[str]
    rows: List[List[Cell]]


def verdict_cell(result: Optional[PairedResult]) -> Tuple[str, Optional[str]]:
    """`ft +1.2 [+0.3, +2.1]`, `tie -0.4 [-1.5, +0.6]`, or `—`; marked with the winner."""
    if result is None:
        return NONE, None
    interval = f"[{signed(result.low)}, {signed(result.high)}]"
    mark = cell_mark(result.verdict)
    return f"{result.verdict} {signed(result.difference)} {interval}", mark


def _paper(value: Optional[float]) -> str:
    return NONE if value is None else f"{value:.1f}"


def has_paper_numbers(rows: Sequence[Row]) -> bool:
    """Whether some row has the paper's Table 2 numbers (one of its tasks with its encoder)."""
    return any(value is not None for row in rows for value in row.paper.values())


def shown_modes(rows: Sequence[Row]) -> List[str]:
    """fe, ft and sf, then bitfit, lora and block modes where some row has runs of them."""
    used = {mode for row in rows for mode in row.used_modes()}
    return list(ALWAYS_SHOWN_MODES) + [
        mode for mode in ordered_run_modes(used) if mode not in ALWAYS_SHOWN_MODES
    ]


def _cost_text(summary: Summary, key: str, kind: str) -> str:
    """A cost cell: the mean of `key` over the cell's scored runs, shown as `kind` says."""
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
    passes = any(mean_encoder_passes(summary.scored_runs) is not None for _, _, summary in cells)
    body = []
    for task, mode, summary in cells:
        body.append(
            # One "Cell" column ("SICK-E lora"), so rows never start like the score table's.
            [(f"{task_title(task)} {mode}", None)]
            + [(_cost_text(summary, key, kind), None) for _, key, kind in columns]
            + ([(passes_text(mean_encoder_passes(summary.scored_runs)), None)] if passes else [])
            + [(f"{len(summary.runs_with_costs())}/{len(summary.runs)}", None)]
        )
    header = ["Cell"] + [name for name, _, _ in columns]
    header += [PASSES_HEADER] if passes else []
    header += ["Runs with costs"]
    return Table(f"{title}: costs (mean over runs)", header, body)


def paired_table(title: str, rows: Sequence[Row], split: str = "validation") -> Optional[Table]:
    """
    Every pair of the encoder's rows: one column per pair (`ft − fe`, `sf − fe`, ..., `sf − ft`)
    with `difference [low, high] verdict`; rows of tasks with at least one pair. `None` if none.
    `split` names the examples the intervals resampled (dev, or test with `--split test`).
    """
    compared = [row for row in rows if row.paired]
    if not compared:
        return None
    used = {mode for row in compared for mode in row.used_modes()}
    order = row_pairs(ordered_run_modes([*RUN_MODES, *used]))
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
                mark = cell_mark(result.verdict)
                cells.append((result.text(), mark))
        seeds = ", ".join(f"{mode} {len(seeds)}" for mode, seeds in row.paired_seeds.items())
        cells += [(str(row.paired[0].examples), None), (seeds, None)]
        body.append(cells)
    examples = "Dev examples" if split == "validation" else "Test examples"
    header = ["Task (metric)"] + [f"{a} − {b}" for a, b in pairs] + [examples, "Seeds"]
    return Table(f"{title}: paired differences (points, 95% CI, verdict)", header, body)


TEST_TITLE = "scored on test after the decision on dev (points, 95% CI, verdict)"


def test_table(title: str, rows: Sequence[Row]) -> Optional[Table]:
    """
    In a report of dev scores, the runs scored on test after training (`tune-compare --test`):
    per task each mode's test score (mean ± std over the seeds scored, as the score table), then
    each pair's paired interval on test beside its dev one (`dev … / test …`). `None` where no
    run was scored on test.
    """
    tested = [row for row in rows if row.tested]
    if not tested:
        return None
    modes = [mode for mode in shown_modes(tested) if any(r.test_cell(mode).runs for r in tested)]
    used = {mode for row in tested for mode in row.used_modes()}
    present = {(r.mode_a, r.mode_b) for row in tested for r in row.test_paired}
    pairs = [pair for pair in row_pairs(ordered_run_modes([*RUN_MODES, *used])) if pair in present]
    body = []
    for row in tested:
        cells: List[Cell] = [(f"{row.title} ({row.metric})", None)]
        cells += [(row.test_cell(mode).text(), None) for mode in modes]
        for mode_a, mode_b in pairs:
            dev, test = row.pair(mode_a, mode_b), row.pair(mode_a, mode_b, test=True)
            text = f"dev {dev.text() if dev else NONE} / test {test.text() if test else NONE}"
            cells.append((text, cell_mark(test.verdict) if test else None))
        examples = str(row.test_paired[0].examples) if row.test_paired else NONE
        body.append(cells + [(examples, None)])
    header = ["Task (metric)"] + [f"{mode} (test)" for mode in modes]
    header += [f"{a} − {b}" for a, b in pairs] + ["Test examples"]
    return Table(f"{title}: {TEST_TITLE}", header, body)


def score_row(row: Row, extra_modes: Sequence[str], verdicts: bool) -> List[Cell]:
    """
    One task's cells in the score table's full header (`HEADER`, the verdict column where
    `verdicts`, then `extra_modes`). Where the row has a verdict, Delta is shown unmarked: the
    verdict replaces the old one-point rule.
    """
    delta, delta_mark_ = format_delta(row.delta)
    if row.verdict is not None and row.delta is not None:
        delta, delta_mark_ = signed(row.delta), None  # the verdict replaces it
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
    return cells


def score_table(title: str, rows: Sequence[Row]) -> Table:
    """
    An encoder's scores, one row per task: fe, ft and sf (ours and the paper's), Delta, the
    verdict of ft against fe and a column per further mode that some row used.
    """
    extra_modes = shown_modes(rows)[len(ALWAYS_SHOWN_MODES) :]
    # The verdict column only where some row has predictions to compare; old run folders (no
    # predictions) keep the table as it was, with the old rule in Delta.
    verdicts = any(row.compared for row in rows)
    body = [score_row(row, extra_modes, verdicts) for row in rows]
    header = list(HEADER)
    if verdicts:
        header.insert(header.index("Δ (paper)"), VERDICT_HEADER)
    header += [f"{mode} (ours)" for mode in extra_modes]
    # The paper's columns only where some row has the paper's numbers (its tasks and encoders);
    # a table of one's own tasks or encoders has none.
    if not has_paper_numbers(rows):
        keep = [i for i, name in enumerate(header) if name not in PAPER_COLUMNS]
        header = [header[i] for i in keep]
        body = [[cells[i] for i in keep] for cells in body]
    return Table(title, header, body)


def other_table(others: Sequence[Tuple[str, Summary]]) -> Table:
    """The runs outside Table 2 (ablations, search trials, unrecognised names), one per label."""
    body = [[(label, None), (s.metrics, None), (s.text(), None)] for label, s in others]
    return Table(OTHER_TITLE, OTHER_HEADER, body)
