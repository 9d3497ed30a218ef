"""
The small facts every view of the report shares, kept in one place so that the Markdown, the
JSON, the HTML and the PNG cannot disagree: the titles of tasks, encoders, modes and metrics,
the paper's own numbers, the reference modes of the paired comparisons, the marks a cell
carries, how a signed difference is written, and the colours of modes and marks (the page's CSS
is generated from these, so the table colours and the figures' colours cannot drift apart).

The names of a run directory's files and of the seed's ext var are the run-folder contract's
(`allennlp_tune.rundir`), not this module's.
"""

from typing import Dict, Optional

from allennlp_tune.modes import MODES, mode_record

# Table 2 of the paper (Peters, Ruder & Smith 2019, "To Tune or Not to Tune?"): GLUE, SICK and
# CoNLL scores per encoder, feature extraction (fe) and fine-tuning (ft).
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
# The metric the paper reports per task (the Metric column of a row with no runs' metric).
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
# The title of every view of the report (the Markdown, the page).
REPORT_TITLE = "Feature extraction vs fine-tuning"
ENCODER_TITLES = {"elmo": "ELMo", "bert": "BERT"}
MODE_TITLES = {name: mode.title for name, mode in MODES.items()}

# The paired comparisons: every mode against the reference fe, the other modes against ft, and
# the two parameter-efficient arms against each other (lora − bitfit).
REFERENCE = "fe"
SECOND_REFERENCE = "ft"
PEFT_PAIR = ("lora", "bitfit")

# What a cell says when it has nothing to say, or a cost no run recorded.
NONE = "—"
NOT_AVAILABLE = "n/a"
# The old one-point rule's marks in a Delta cell (no test behind them).
FAVOURS_FINE_TUNING = "[ft]"
FAVOURS_FEATURE_EXTRACTION = "[fe]"
# Task marks for a known overlap with the encoder's training data (its model card).
OVERLAP_MARK = "†"
RELATED_OVERLAP_MARK = "(†)"

# The paper colours cells that favour fine-tuning warm and feature extraction cold; a table cell
# marked with one of these modes (a verdict or the old rule) gets its colour.
MARK_COLOURS = {"ft": "#f7c6a3", "fe": "#b8d8f0"}
# Each mode's colour in the figures; a tie is grey, anything else dark grey.
MODE_COLOURS = {name: mode.colour for name, mode in MODES.items()}
TIE_COLOUR = "#777777"
OTHER_COLOUR = "#555555"


def signed(value: float, digits: int = 1) -> str:
    """`+1.2`, `-0.4`; a difference that rounds to zero is `+0.0`, never `-0.0`."""
    return f"{value:+.{digits}f}".replace(f"-{0:.{digits}f}", f"+{0:.{digits}f}")


def task_title(task: str) -> str:
    """`SICK-E` for `sick_e`; a task that is not the paper's keeps its name."""
    return TASK_TITLES.get(task, task)


def encoder_title(encoder: str) -> str:
    """`BERT` for `bert`; an encoder that is not the paper's keeps its name."""
    return ENCODER_TITLES.get(encoder, encoder)


def mode_title(mode: str) -> str:
    """`fine-tuning` for `ft`; `top 2 layer groups fine-tuned` for the block mode `top2`."""
    record = mode_record(mode)
    return record.title if record is not None else mode


def mode_colour(mode: str) -> str:
    """A mode's colour in the figures; a mode without one is dark grey."""
    record = mode_record(mode)
    return record.colour if record is not None else OTHER_COLOUR


def cell_mark(verdict: Optional[str]) -> Optional[str]:
    """The mark of a verdict cell: the winning mode where it has a colour, else `None`."""
    return verdict if verdict in MARK_COLOURS else None


def mark_css() -> str:
    """The page's CSS for marked table cells (`td.ft{background:...}`), from `MARK_COLOURS`."""
    return "".join(f"td.{mark}{{background:{colour}}}" for mark, colour in MARK_COLOURS.items())
