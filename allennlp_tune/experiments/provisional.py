"""
An answer before the verdict: what `tune-compare --budget K` knows once its searches end.

The seeds decide (`--sequential`'s looks, or the report's fixed intervals), but they come
after the searches, most of the decision's cost; a user watching the command should not wait
for them to learn which way things lean. So after the searches, one line per pair the report
compares (`intervals.row_pairs`: each mode against fe, the others against ft, lora against
bitfit): the paired bootstrap of the two modes' best trials on the dev set (one run each, the
examples resampled), marked as provisional:

    tune-compare: so far (each mode's best search trial, one run each): ft − fe +4.1
    [+1.2, +7.0] ft; not yet a verdict: each best trial was chosen on this dev set (its score
    is optimistic), and one run per mode leaves out seed variation; the seeds decide

A pair whose best trials lack dev predictions (a trial that failed to write them) is named
instead; a metric the bootstrap does not know prints nothing (the seeds' report says why).
"""

import sys
from pathlib import Path
from typing import Dict, List, Mapping, Optional

from allennlp_tune.reporting.intervals import bootstrap_options, row_pairs
from allennlp_tune.reporting.paired import paired_bootstrap
from allennlp_tune.reporting.predictions import read_predictions
from allennlp_tune.reporting.scorers import metric_kind
from allennlp_tune.rundir import PREDICTIONS_NAME, load_run
from allennlp_tune.rundir.names import BUDGET_SEARCH_DIR


def provisional_lines(
    searches: Mapping[str, "ModeSearch"],  # noqa: F821  (budget's)
    results_dir: Path,
    tool: str = "tune-compare",
) -> List[str]:
    """The lines of the module docstring for `searches` (mode -> its search), in `row_pairs`
    order; `[]` with one mode."""
    trials: Dict[str, Path] = {
        mode: Path(results_dir) / BUDGET_SEARCH_DIR / search.study / f"trial_{search.best_trial}"
        for mode, search in searches.items()
    }
    lines = []
    for mode_a, mode_b in row_pairs(list(searches)):
        line = _pair_line(mode_a, mode_b, trials, searches[mode_a].metric, tool)
        if line is not None:
            lines.append(line)
    return lines


def _pair_line(
    mode_a: str, mode_b: str, trials: Dict[str, Path], metric: str, tool: str
) -> Optional[str]:
    missing = [mode for mode in (mode_a, mode_b) if not (trials[mode] / PREDICTIONS_NAME).is_file()]
    if missing:
        return (
            f"{tool}: so far: {mode_a} − {mode_b}: no dev predictions of the best trial of "
            f"{' and '.join(missing)} ({', '.join(str(trials[m]) for m in missing)}); the seeds "
            "decide"
        )
    try:
        kind = metric_kind(metric)
    except ValueError:
        return None
    runs = [load_run(trials[mode_a]), load_run(trials[mode_b])]
    result = paired_bootstrap(
        [read_predictions(trials[mode_a] / PREDICTIONS_NAME)],
        [read_predictions(trials[mode_b] / PREDICTIONS_NAME)],
        metric,
        names=(mode_a, mode_b),
        **bootstrap_options(runs, kind),
    )
    return (
        f"{tool}: so far (each mode's best search trial, one run each): {mode_a} − {mode_b} "
        f"{result.text()}; not yet a verdict: each best trial was chosen on this dev set (its "
        "score is optimistic) and one run per mode leaves out seed variation; the seeds decide"
    )


def print_provisional(
    searches: Mapping[str, "ModeSearch"],  # noqa: F821
    results_dir: Path,
    tool: str = "tune-compare",
) -> None:
    """`provisional_lines` on stderr, beside the command's other lines."""
    for line in provisional_lines(searches, results_dir, tool):
        print(line, file=sys.stderr)


__all__ = ["print_provisional", "provisional_lines"]
